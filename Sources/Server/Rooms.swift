import Foundation
import RTP
import SDP
import Transport

/// A participant's connection as the host sees it before any mixing: its transport on the media
/// port and what has arrived from it. Lives on the media loop thread.
final class ParticipantSession: PeerEventSink {
    let id: String
    let identity: String
    let name: String?
    let room: String
    private(set) var state = "connecting"
    private(set) var packetsReceived = 0
    private(set) var bytesReceived = 0
    private let port: MediaPort
    private var peerID: MediaPort.PeerID?
    private let onEnd: (ParticipantSession) -> Void

    init(id: String, identity: String, name: String?, room: String, port: MediaPort, onEnd: @escaping (ParticipantSession) -> Void) {
        self.id = id
        self.identity = identity
        self.name = name
        self.room = room
        self.port = port
        self.onEnd = onEnd
    }

    func attach(_ transport: PeerTransport, localUfrag: String) {
        peerID = port.add(transport, localUfrag: localUfrag, sink: self)
    }

    /// Leaves: the transport is dropped and the room forgets the participant. Idempotent.
    func end() {
        guard let peerID else { return }
        self.peerID = nil
        state = "left"
        port.remove(peerID)
        onEnd(self)
    }

    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        switch event {
        case .iceConnected: state = "connected"
        case .secure: state = "secure"
        case .rtp(let bytes), .rtcp(let bytes):
            packetsReceived += 1
            bytesReceived += bytes.count
        case .failed: end()
        }
    }

    var summary: ParticipantSummary {
        ParticipantSummary(id: id, identity: identity, name: name, state: state,
                           packetsReceived: packetsReceived, bytesReceived: bytesReceived)
    }
}

/// A participant in the API's answers.
struct ParticipantSummary: Codable, Sendable {
    let id: String
    let identity: String
    let name: String?
    let state: String
    let packetsReceived: Int
    let bytesReceived: Int
}

/// Rooms by name, each a set of participants by identity. A room is made by its first join and
/// closed when its last participant leaves. Touched only on the media loop thread.
final class RoomDirectory {
    struct Limits {
        var maxRooms: Int
        var maxParticipantsPerRoom: Int
    }
    enum JoinRefusal {
        case identityPresent, roomFull, hostFull
    }

    let limits: Limits
    private(set) var rooms: [String: [String: ParticipantSession]] = [:]

    init(limits: Limits) { self.limits = limits }

    /// Why `identity` may not join `room` now, or nil when it may.
    func refusal(room: String, identity: String) -> JoinRefusal? {
        if let members = rooms[room] {
            if members[identity] != nil { return .identityPresent }
            if members.count >= limits.maxParticipantsPerRoom { return .roomFull }
        } else if rooms.count >= limits.maxRooms {
            return .hostFull
        }
        return nil
    }

    func add(_ participant: ParticipantSession) {
        rooms[participant.room, default: [:]][participant.identity] = participant
    }

    func remove(_ participant: ParticipantSession) {
        guard rooms[participant.room]?[participant.identity] === participant else { return }
        rooms[participant.room]?[participant.identity] = nil
        if rooms[participant.room]?.isEmpty == true { rooms[participant.room] = nil }
    }

    func participant(room: String, id: String) -> ParticipantSession? {
        rooms[room]?.values.first { $0.id == id }
    }
}
