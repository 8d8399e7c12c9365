import Compositing
import Media
import Wire

/// What a `Room` asks its shell to do. Drain them with `Room.pollOutput()` after every input.
public enum RoomOutput: Sendable {
    /// Send this RTP packet (serialized, not yet protected) to the participant.
    case sendRTP(participant: String, bytes: [UInt8])
    /// Send this compound RTCP packet to the participant.
    case sendRTCP(participant: String, bytes: [UInt8])
    /// Encode this picture with the encoder of `request.kind` and `request.generation`, and hand
    /// the frames back through `Room.encoded`. Start that encoder when the shell has none of
    /// that generation (stopping an older one).
    case encode(CompositeEncodeRequest)
    /// Stop the encoder of this kind: nobody needs it.
    case stopEncoder(CompositeEncoding.Kind)
    /// Publish this event.
    case event(RoomEvent)
    /// An audio tick at this deadline pushed the whole room's mix: recordings take it now.
    case recordingTick(Instant)
    /// The participant was not secure within `Room.connectTimeout` of joining: it has left the
    /// room (its events are out); close its transport and free what it held.
    case expired(participant: String)
    /// The participant (a viewer of one track whose track ended) has left the room: close its
    /// transport once what was sent it before this is out.
    case closed(participant: String)
}

/// A picture for one of the composite's encoders.
public struct CompositeEncodeRequest: Sendable {
    public let kind: CompositeEncoding.Kind
    public let generation: Int
    public let picture: I420Frame
    public let keyFrame: Bool
    /// How to start the encoder when it is not running yet.
    public let configuration: VP8Encoder.Configuration
    /// The size to scale pictures to before encoding (the lower encoding); nil for as they are.
    public let scaledTo: VideoSize?
}
