import RTP
import Wire

/// The receive side of one VP8 stream, sans-IO: RTP packets in, decoded pictures out, and a
/// key frame request when a loss leaves nothing to decode from. The video counterpart of
/// ``AudioReceiver``.
///
/// ```
/// RTPPacket ──▶ VP8FrameAssembler ──▶ complete frames in order ──▶ VP8Decoder ──▶ [I420Frame]
///                 │ needsKeyFrame                                   │ refusals
///                 └──────────────▶ onKeyFrameNeeded (PLI) ◀─────────┘
/// ```
///
/// How it behaves:
/// - Frames go to the decoder in decode order, each only once all its packets are here
///   (``VP8FrameAssembler``): reordering within the assembler's limits costs nothing.
/// - After a loss (a frame given up by the assembler, a frame the decoder refuses as corrupt or
///   predicted from a damaged picture) nothing is shown until a key frame decodes: inter frames
///   until then are dropped, never decoded into a smeared picture. ``isWaitingForKeyFrame`` is
///   true meanwhile.
/// - While waiting it calls ``onKeyFrameNeeded`` at once, then again at most once per
///   `keyFrameRequestInterval` (300 ms) for as long as packets or timer calls keep coming, so a
///   burst of losses asks once and a lost PLI is repeated. The pacing lives here, so the
///   callback can send a PLI directly; a transport that paces with `KeyFrameRequester` may call
///   its `keyFrameNeeded(now:)` from the callback (repeats are no-ops while it waits) and its
///   `keyFrameReceived()` once ``isWaitingForKeyFrame`` turns false.
/// - A frame whose last packet is lost stays incomplete until the caller gives up on it with
///   ``abandonIncompleteFrames(now:)``, which it calls from a timer once retransmissions (NACK)
///   have had their chance, for example 100 ms after the frame's first packet.
/// - Pictures are stamped with the `now` of the call that completed their frame: the arrival
///   time on the host's clock, which is what a `VideoTrack` and the compositor pace by. RTP
///   timestamps are not mapped to the host clock (that needs RTCP sender reports and is the
///   lip-sync layer's business); frames completed by one packet share its `now`.
///
/// It is a ``VideoFrameReceiver`` (assembly, the key frame rule, the requests' pacing) whose
/// jobs a ``VideoDecodeSession`` decodes at once, each before the next frame is taken; a host
/// that decodes on other threads uses the two apart.
///
/// Not `Sendable`: one room's thread owns each receiver (the decoder inside is a libvpx context).
public final class VideoReceiver {
    /// Counters for metrics and tests.
    public struct Statistics: Equatable, Sendable {
        /// Frames decoded into pictures (shown frames; hidden VP8 frames are not counted).
        public var framesDecoded = 0
        /// Key frames among the frames decoded.
        public var keyFramesDecoded = 0
        /// Complete frames dropped because they came after a loss and were not key frames
        /// (including those the assembler discarded and those the decoder refused).
        public var framesDroppedWaitingForKeyFrame = 0
        /// Frames the assembler gave up on as lost or incomplete.
        public var framesLost = 0
        /// Frames the decoder refused as corrupt, too large, or predicted from a damaged picture.
        public var decodeErrors = 0
        /// Times ``VideoReceiver/onKeyFrameNeeded`` was called.
        public var keyFrameRequests = 0
        /// Frames dropped because the decoder had too many frames to decode already
        /// (``VideoFrameReceiver/maximumFramesInFlight``; never with ``VideoReceiver``, which
        /// decodes at once); the frames after each, until a key frame, count as waiting.
        public var framesDroppedDecodeQueueFull = 0

        public init() {}
    }

    /// Called when a key frame is needed (answer with a PLI or FIR), paced by
    /// `keyFrameRequestInterval`. Called synchronously from ``receive(_:now:)`` or
    /// ``abandonIncompleteFrames(now:)``; it must not call back into this receiver.
    public var onKeyFrameNeeded: (() -> Void)? {
        get { frames.onKeyFrameNeeded }
        set { frames.onKeyFrameNeeded = newValue }
    }
    /// The least time between two calls of ``onKeyFrameNeeded`` while a key frame is awaited.
    public var keyFrameRequestInterval: Duration { frames.keyFrameRequestInterval }

    /// Assembly, the key frame rule and the requests' pacing; the decoder runs at once here.
    private let frames: VideoFrameReceiver
    private let session: VideoDecodeSession

    /// A receiver whose decoder accepts pictures of up to `maximumPixels` (3840x2160 by default)
    /// and whose assembler buffers within `limits`.
    public init(maximumPixels: Int = 3840 * 2160, limits: VP8FrameAssembler.Limits = .init(),
                keyFrameRequestInterval: Duration = .milliseconds(300),
                onKeyFrameNeeded: (() -> Void)? = nil) throws(VP8CodecError) {
        session = try VideoDecodeSession(maximumPixels: maximumPixels)
        frames = VideoFrameReceiver(limits: limits, keyFrameRequestInterval: keyFrameRequestInterval, onKeyFrameNeeded: onKeyFrameNeeded)
    }

    /// Counters, the assembler's included.
    public var statistics: Statistics { frames.statistics }

    /// The assembler's own counters (packets ignored, malformed, gaps skipped).
    public var assemblerStatistics: VP8FrameAssembler.Statistics { frames.assemblerStatistics }

    /// Whether nothing is shown until a key frame decodes (after a loss or a decoder refusal).
    public var isWaitingForKeyFrame: Bool { frames.isWaitingForKeyFrame }

    /// The size of the last decoded picture; nil before the first.
    public var frameSize: (width: Int, height: Int)? { session.frameSize }

    /// Takes one received RTP packet of the stream (after SRTP and RTX unwrapping) and returns
    /// the pictures it completed, in order, stamped `now`. Usually none or one.
    public func receive(_ packet: RTPPacket, now: Instant) -> [I420Frame] {
        frames.insert(packet)
        return drain(now: now)
    }

    /// Gives up on frames still missing packets (call it from a timer once NACK has had its
    /// chance) and returns the pictures this releases: none after a delta frame was lost, the
    /// frames behind the gap when a key frame was waiting there.
    @discardableResult
    public func abandonIncompleteFrames(now: Instant) -> [I420Frame] {
        frames.abandonIncomplete()
        return drain(now: now)
    }

    /// Forgets buffered packets (a new SSRC or a restarted sender), keeping the statistics:
    /// the next picture comes from the next key frame.
    public func reset() {
        frames.reset()
    }

    // MARK: - Internals

    /// The RTP timestamps of the pictures the last `receive` or `abandonIncompleteFrames`
    /// returned, in the same order (lip sync maps them to the sender's clock).
    public private(set) var lastTimestamps: [UInt32] = []

    /// Each frame ready is decoded before the next is taken, so a refusal stops the frames
    /// behind it as it happens; then one key frame request at most.
    private func drain(now: Instant) -> [I420Frame] {
        var pictures: [I420Frame] = []
        lastTimestamps.removeAll(keepingCapacity: true)
        frames.beginDrain()
        while let job = frames.nextJob(now: now) {
            if let picture = frames.take(session.decode(job)) {
                pictures.append(picture)
                lastTimestamps.append(job.frame.timestamp)
            }
        }
        frames.askForKeyFrameIfWaiting(now: now)
        return pictures
    }
}
