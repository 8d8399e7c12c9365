import Compositing
import Media
import RTP
import Streams
import Wire

/// One encoding of a room's composite, as the room engine keeps it: its size and bit rate, the
/// generation of the encoder the shell runs for it, its packetizer, and its key frame pacing.
/// The main encoding is at the canvas size; the lower and small ones run only while some
/// receiver's feedback calls for them.
public final class CompositeEncoding {
    /// Which encoding.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// The canvas size, at the configured bit rate.
        case main
        /// The configured lower size and bit rate.
        case low
        /// The configured small size and bit rate.
        case small
    }

    public let kind: Kind
    /// The picture size it encodes; nil for the canvas size as it is.
    public let size: VideoSize?
    public let bitrate: Int
    /// Which encoder run this is: frames of an older generation (a stopped encoder) are dropped.
    public internal(set) var generation: Int
    /// Packetizes each encoded frame once; receivers get copies with their own header fields.
    var packetizer: VideoSender?
    /// One key frame per `minimumInterval`, whoever asks. Requests are re-addressed to its
    /// internal SSRC, since every receiver has its own host SSRC for the same stream.
    var pacer = KeyFrameRequestPacer(mediaSSRC: CompositeEncoding.internalSSRC)
    /// A key frame wanted at the next tick (a new receiver, or one switching to it).
    var keyFrameSoon = false
    private var lastSoonKeyFrame: Instant?

    /// The SSRC the room's own packetizer and pacer use; each receiver's packets are re-headered.
    static let internalSSRC = SSRC(rawValue: 1)
    /// At most one "soon" key frame per this gap, however many receivers start.
    static let newReceiverKeyFrameGap: Duration = .milliseconds(100)

    init(kind: Kind, size: VideoSize?, bitrate: Int, generation: Int) {
        self.kind = kind
        self.size = size
        self.bitrate = bitrate
        self.generation = generation
    }

    /// Whether the tick at `now` encodes a key frame: a new receiver's (soon), or a paced request's.
    func keyFrameDue(now: Instant) -> Bool {
        if keyFrameSoon, lastSoonKeyFrame.map({ now - $0 >= Self.newReceiverKeyFrameGap }) ?? true {
            keyFrameSoon = false
            lastSoonKeyFrame = now
            pacer.keyFrameEncoded(now: now)  // it answers the requests held until now too
            return true
        }
        return pacer.pollKeyFrame(now: now)
    }

    /// Key frames asked of this encoding after pacing.
    public var keyFramesRequested: Int64 { pacer.keyFramesRequested }
}
