import Media
import SDP
import Streams
import Wire

/// A participant (or a viewer) of a room: who it is, what the room receives from it
/// (`inbound`), what the room sends it (`outbound`), and its choices. Owned by its `Room`; the
/// two halves never reach into each other.
public final class Participant {
    /// Where its transport stands, as `GET /v1/rooms/{room}` reports it.
    public enum State: String, Sendable, Equatable, Codable {
        case connecting, connected, secure, left
    }

    public let id: String
    /// Its place in the room's joining order (unique in the room, never reused): a key that
    /// is cheap to hash where the room keeps something for every member.
    let serial: Int
    public let identity: String
    public let name: String?
    /// A viewer (`POST …/viewers`) receives the composite and the whole mix, and has no tile.
    public let isViewer: Bool
    public internal(set) var state = State.connecting
    public let inbound: ParticipantInbound
    var outbound: ParticipantOutbound
    /// Identities it chose not to hear (`PATCH … {"hear": {"bob": false}}`), held by identity so
    /// that a bob who joins later is not heard either.
    public internal(set) var notHeard: Set<String> = []
    /// Its voice is in no mix.
    public internal(set) var audioMuted = false
    /// Its tile shows the placeholder.
    public internal(set) var videoMuted = false
    /// Its camera's placeholder picture (`PUT …/placeholder`); nil: the room's placeholder colour.
    public internal(set) var placeholderPicture: I420Frame?
    /// When its receive side next has RTCP to send (noted after each poll); nil while it is
    /// not secure.
    var rtcpDue: Instant?
    /// The earliest time it has in the room's RTCP schedule (at or before `rtcpDue`).
    var rtcpQueued: Instant?
    /// When it must be secure by (`Room.connectTimeout` after joining); nil once it is.
    var connectDeadline: Instant?
    /// Its video sources that rendered at the last video tick (for `trackRendering` and
    /// `trackStalled`).
    var rendering: Set<String> = []

    init(id: String, serial: Int, identity: String, name: String?, isViewer: Bool, forwardsOnly: Bool, negotiated: NegotiatedSession, seed: UInt64,
         wallClock: NTPClockMapping, configuration: RoomConfiguration, now: Instant) {
        self.id = id
        self.serial = serial
        self.identity = identity
        self.name = name
        self.isViewer = isViewer
        inbound = ParticipantInbound(negotiated: negotiated, id: id, identity: identity, seed: seed, now: now)
        outbound = ParticipantOutbound(negotiated: negotiated, seed: seed &+ 1, wallClock: wallClock, configuration: configuration,
                                       forwardsOnly: forwardsOnly, now: now)
    }

    /// Its camera's tile shows the placeholder while it is muted by PATCH or by the media
    /// (renegotiation, or its sender's own mute).
    func refreshCameraMute() {
        inbound.cameraTrack.isMuted = videoMuted || inbound.cameraMutedByMedia
    }

    /// Whether it can be sent the composite now (it is secure, and its video is not paused).
    var receivesVideoNow: Bool { state == .secure && outbound.receivesVideo && outbound.wantedVideoEncoding != nil }

    /// The composite encoding it is sent now.
    public var videoEncoding: CompositeEncoding.Kind { outbound.videoEncoding }

    /// How the API shows it.
    public var summary: ParticipantSummary {
        ParticipantSummary(id: id, identity: identity, name: name, state: state.rawValue,
                           packetsReceived: inbound.packetsReceived, bytesReceived: inbound.bytesReceived,
                           notHeard: notHeard.sorted(), muted: .init(audio: audioMuted, video: videoMuted))
    }
}

/// A participant in the API's answers.
public struct ParticipantSummary: Codable, Sendable, Equatable {
    public struct Muted: Codable, Sendable, Equatable {
        public let audio: Bool
        public let video: Bool
    }
    public let id: String
    public let identity: String
    public let name: String?
    public let state: String
    public let packetsReceived: Int
    public let bytesReceived: Int
    /// Identities this participant does not hear.
    public let notHeard: [String]
    public let muted: Muted
}

/// A participant is itself (the mixer keys its members so: hashing a pointer, not an id string,
/// for every member every 20 ms).
extension Participant: Hashable {
    public static func == (lhs: Participant, rhs: Participant) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
