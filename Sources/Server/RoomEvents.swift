import Conference
import Foundation

/// An event as the stream sends it: the engine's `RoomEvent` with the time it was published
/// (milliseconds since 1970).
private struct PublishedRoomEvent: Encodable {
    let type: String
    let room: String
    let participant: String?
    let identity: String?
    let source: String?
    let reason: String?
    let time: Int64

    init(_ event: RoomEvent, time: Int64) {
        type = event.type.rawValue
        room = event.room
        participant = event.participant
        identity = event.identity
        source = event.source
        reason = event.reason
        self.time = time
    }
}

/// The open event streams of each room. Published from the media loop, subscribed from HTTP
/// threads; a lock guards the lists. Every event published is logged too.
final class RoomEventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [String: [HTTPEventStream]] = [:]
    static let maxSubscribersPerRoom = 64
    private let log: HostLog

    init(log: HostLog) {
        self.log = log
    }

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
        logged(event)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let published = PublishedRoomEvent(event, time: Int64(Date().timeIntervalSince1970 * 1000))
        guard let data = try? encoder.encode(published) else { return }
        let text = String(decoding: data, as: UTF8.self)
        let streams = lock.withLock { subscribers[event.room] ?? [] }
        for stream in streams { stream.send(event: event.type.rawValue, data: text) }
    }

    /// The event in the host's log: joins and leaves at info, the rest (tracks, the speaker,
    /// layouts) at debug. Recordings are left to `HostedRoom`, which logs them with their file
    /// and why they ended. The participant is named by identity, its id (the API's pid) beside it.
    private func logged(_ event: RoomEvent) {
        let level: HostLog.Level
        switch event.type {
        case .joined, .left: level = .info
        case .recordingStarted, .recordingStopped: return
        case .trackPublished, .trackEnded, .trackMuted, .trackUnmuted, .trackRendering, .trackStalled, .activeSpeakerChanged, .layoutChanged:
            level = .debug
        }
        log.log(level, event.type.rawValue, room: event.room, participant: event.identity,
                ["id": event.participant, "source": event.source, "reason": event.reason])
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
