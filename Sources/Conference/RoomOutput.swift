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
    /// Decode this camera or screen frame with the decoder of `request.stream` (made for it
    /// with its first job), after the stream's earlier jobs, and hand the result back through
    /// `Room.pictureDecoded`, every job's, in order. The room has at most
    /// `ParticipantInbound.decodeQueueDepth` jobs of a stream out at once.
    case decode(VideoDecodeRequest)
    /// The stream ended: its decoder goes once its jobs are done; their results may be dropped.
    case stopDecoder(VideoDecodeStream)
    /// Publish this event.
    case event(RoomEvent)
    /// An audio tick at this deadline pushed the whole room's mix: recordings take it now.
    case recordingTick(Instant)
    /// A frame of the composite's main encoding, for the recordings (they mux it as it is).
    case recordVideo(EncodedVideoFrame)
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

/// One participant's camera or screen as a stream of frames to decode, with a decoder of its
/// own: a camera that stops and starts again (renegotiation) is another stream.
public struct VideoDecodeStream: Hashable, Sendable, CustomStringConvertible {
    /// The participant's id.
    public let participant: String
    public let source: VideoSource
    /// Counts the participant's video streams.
    public let generation: Int

    public init(participant: String, source: VideoSource, generation: Int) {
        self.participant = participant
        self.source = source
        self.generation = generation
    }

    public var description: String { "\(participant)/\(source.rawValue)#\(generation)" }
}

/// A frame for a stream's decoder.
public struct VideoDecodeRequest: Sendable {
    public let stream: VideoDecodeStream
    public let job: VideoDecodeJob
    /// The largest picture the stream's decoder is to accept, in pixels (for making it).
    public let maximumPixels: Int

    public init(stream: VideoDecodeStream, job: VideoDecodeJob, maximumPixels: Int) {
        self.stream = stream
        self.job = job
        self.maximumPixels = maximumPixels
    }
}
