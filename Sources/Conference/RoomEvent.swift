/// Something that happened in a room, as `GET /v1/rooms/{room}/events` tells it. A value the
/// room engine emits; the shell stamps the wall-clock time when it publishes it (the engine
/// reads no clock).
public struct RoomEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        case joined, left, trackPublished, trackMuted, trackUnmuted, trackEnded
        /// A live camera shows moving pictures again (its first frame, or after a stall), and
        /// has sent none for 2 s (the seed's rule: its tile shows the placeholder meanwhile).
        case trackRendering, trackStalled
        case activeSpeakerChanged, layoutChanged, recordingStarted, recordingStopped
    }
    public let type: Kind
    public let room: String
    public var participant: String?
    public var identity: String?
    /// `microphone`, `camera` or `screen`, for track events.
    public var source: String?
    /// Why a participant left (`left`, `consent lost`, `transport failed`) or a track ended.
    public var reason: String?

    public init(_ type: Kind, room: String, participant: String? = nil, identity: String? = nil, source: String? = nil,
                reason: String? = nil) {
        self.type = type
        self.room = room
        self.participant = participant
        self.identity = identity
        self.source = source
        self.reason = reason
    }
}
