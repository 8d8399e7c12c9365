import Foundation

/// Something that happened in a room, as `GET /v1/rooms/{room}/events` tells it.
struct RoomEvent: Encodable, Sendable {
    enum Kind: String, Encodable, Sendable {
        case joined, left, trackPublished, trackMuted, trackUnmuted, trackEnded
        case activeSpeakerChanged, layoutChanged, recordingStarted, recordingStopped
    }
    let type: Kind
    let room: String
    var participant: String?
    var identity: String?
    /// `microphone`, `camera` or `screen`, for track events.
    var source: String?
    /// Why a participant left: `left`, `consent lost`, `transport failed`.
    var reason: String?
    /// Milliseconds since 1970.
    let time: Int64

    init(_ type: Kind, room: String, participant: String? = nil, identity: String? = nil, source: String? = nil, reason: String? = nil) {
        self.type = type
        self.room = room
        self.participant = participant
        self.identity = identity
        self.source = source
        self.reason = reason
        time = Int64(Date().timeIntervalSince1970 * 1000)
    }
}

/// The open event streams of each room. Published from the media loop, subscribed from HTTP
/// threads; a lock guards the lists.
final class RoomEventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [String: [HTTPEventStream]] = [:]
    static let maxSubscribersPerRoom = 64

    /// A new stream of `room`'s events; nil when the room has its limit of listeners.
    func subscribe(room: String) -> HTTPEventStream? {
        lock.withLock {
            subscribers[room, default: []].removeAll { $0.isClosed }
            guard subscribers[room, default: []].count < Self.maxSubscribersPerRoom else { return nil }
            let stream = HTTPEventStream()
            subscribers[room, default: []].append(stream)
            return stream
        }
    }

    func publish(_ event: RoomEvent) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(event) else { return }
        let text = String(decoding: data, as: UTF8.self)
        let streams = lock.withLock { subscribers[event.room] ?? [] }
        for stream in streams { stream.send(event: event.type.rawValue, data: text) }
    }

    /// Ends every stream (the host is stopping: libmicrohttpd waits for their threads).
    func closeAll() {
        let all = lock.withLock { () -> [HTTPEventStream] in
            defer { subscribers = [:] }
            return subscribers.values.flatMap { $0 }
        }
        for stream in all { stream.close() }
    }
}
