import RTP
import Wire

/// One assembled VP8 frame to decode: what a ``VideoFrameReceiver`` hands to whoever runs the
/// stream's decoder (a ``VideoDecodeSession``, on another thread or at once), in the stream's
/// decode order.
public struct VideoDecodeJob: Sendable {
    /// Its place in the stream's decode order, from 1.
    public let sequence: Int
    /// The compressed frame (its RTP timestamp, whether it is a key frame).
    public let frame: VP8Frame
    /// The `now` of the call that completed the frame: its arrival on the host's clock.
    public let assembled: Instant

    public init(sequence: Int, frame: VP8Frame, assembled: Instant) {
        self.sequence = sequence
        self.frame = frame
        self.assembled = assembled
    }
}

/// What decoding one ``VideoDecodeJob`` gave, for ``VideoFrameReceiver/decoded(_:now:)``.
public struct VideoDecodeResult: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The picture, stamped with the frame's arrival.
        case picture(I420Frame)
        /// A frame not meant to be shown (`show_frame` clear): it only updates the references.
        case hidden
        /// The decoder refused the frame (corrupt, too large, predicted from a damaged or missing
        /// picture): nothing decodes again until a key frame.
        case refused(VP8CodecError)
        /// The stream's decoder could not start (every job of the stream gets this).
        case decoderUnavailable(VP8CodecError)
    }

    public let sequence: Int
    public let rtpTimestamp: UInt32
    public let isKeyFrame: Bool
    public let outcome: Outcome
    /// Time spent in the decoder, measured where it ran.
    public let decodeTime: Duration

    public init(sequence: Int, rtpTimestamp: UInt32, isKeyFrame: Bool, outcome: Outcome, decodeTime: Duration = .zero) {
        self.sequence = sequence
        self.rtpTimestamp = rtpTimestamp
        self.isKeyFrame = isKeyFrame
        self.outcome = outcome
        self.decodeTime = decodeTime
    }

    /// The result for `job` when its stream's decoder could not start.
    public static func unavailable(_ job: VideoDecodeJob, _ error: VP8CodecError) -> VideoDecodeResult {
        VideoDecodeResult(sequence: job.sequence, rtpTimestamp: job.frame.timestamp, isKeyFrame: job.frame.isKeyFrame,
                          outcome: .decoderUnavailable(error))
    }
}

/// The decoding half of one video stream: a libvpx VP8 decoder that takes the stream's
/// ``VideoDecodeJob``s in order and answers each with a ``VideoDecodeResult``. After any
/// refusal it refuses inter frames (``VP8CodecError/waitingForKeyFrame``) until a key frame
/// decodes, so a job that was already on its way when an earlier frame failed is refused, never
/// decoded into a smeared picture: the receiver that handed it out learns of the failure only
/// later.
///
/// Not `Sendable`: made and used on one thread (a decode worker's, or the receiver's own).
public final class VideoDecodeSession {
    private let decoder: VP8Decoder
    /// A frame was refused and no key frame has decoded since.
    private var refusedSinceKeyFrame = false

    /// A decoder that accepts pictures of up to `maximumPixels`.
    public init(maximumPixels: Int = 3840 * 2160) throws(VP8CodecError) {
        decoder = try VP8Decoder(threads: 1, maximumPixels: maximumPixels)
    }

    /// The size of the last decoded picture; nil before the first.
    public var frameSize: (width: Int, height: Int)? { decoder.frameSize }

    /// Decodes one job, timed by `ContinuousClock` (work, not protocol time).
    public func decode(_ job: VideoDecodeJob) -> VideoDecodeResult {
        let began = ContinuousClock.now
        let outcome: VideoDecodeResult.Outcome
        if refusedSinceKeyFrame && !job.frame.isKeyFrame {
            outcome = .refused(.waitingForKeyFrame)
        } else {
            do throws(VP8CodecError) {
                outcome = try decoder.decode(job.frame.data, timestamp: job.assembled).map(VideoDecodeResult.Outcome.picture) ?? .hidden
                if job.frame.isKeyFrame { refusedSinceKeyFrame = false }
            } catch {
                outcome = .refused(error)
                refusedSinceKeyFrame = true
            }
        }
        return VideoDecodeResult(sequence: job.sequence, rtpTimestamp: job.frame.timestamp, isKeyFrame: job.frame.isKeyFrame,
                                 outcome: outcome, decodeTime: ContinuousClock.now - began)
    }
}

/// The receive side of one VP8 stream without its decoder, sans-IO: RTP packets in, decode jobs
/// out (assembled frames, in decode order); the decoder's results in, pictures out; and a key
/// frame request when nothing can be decoded until one comes. The decoder (a
/// ``VideoDecodeSession``) may run on another thread: ``VideoReceiver`` is this with its
/// decoder run at once.
///
/// Overflow: at most ``maximumFramesInFlight`` jobs are handed out whose results have not come
/// back. A frame beyond that is dropped, and since the frames after a dropped one cannot decode,
/// every frame until the next key frame is dropped too (``isWaitingForKeyFrame``), and a key
/// frame is asked for (``onKeyFrameNeeded``, paced as for a loss). So a slow decoder never
/// makes the caller wait nor queue without bound, and never shows a broken picture.
///
/// Results must come back in job order (one decoder per stream does that); a result for a job
/// handed out before a later key frame does not stop the stream, since that key frame resets
/// the decoder.
public final class VideoFrameReceiver {
    /// Called when a key frame is needed (answer with a PLI or FIR), at most once per
    /// `keyFrameRequestInterval`. Called synchronously; it must not call back into this receiver.
    public var onKeyFrameNeeded: (() -> Void)?
    /// The least time between two calls of ``onKeyFrameNeeded`` while a key frame is awaited.
    public let keyFrameRequestInterval: Duration
    /// Jobs out at once (handed out, their results not back), at most.
    public let maximumFramesInFlight: Int

    private var assembler: VP8FrameAssembler
    /// A frame was refused or dropped, and no key frame has been handed out since.
    private var decoderNeedsKeyFrame = false
    private var lastRequest: Instant?
    private var counters = VideoReceiver.Statistics()
    private var nextSequence = 1
    /// The sequence of the last result taken, and of the last key frame handed out.
    private var lastResult = 0
    private var lastKeyFrame = 0

    /// A receiver whose assembler buffers within `limits` and that hands out at most
    /// `maximumFramesInFlight` jobs at once (at least 1).
    public init(limits: VP8FrameAssembler.Limits = .init(), maximumFramesInFlight: Int = .max,
                keyFrameRequestInterval: Duration = .milliseconds(300), onKeyFrameNeeded: (() -> Void)? = nil) {
        assembler = VP8FrameAssembler(limits: limits)
        self.maximumFramesInFlight = max(1, maximumFramesInFlight)
        self.keyFrameRequestInterval = keyFrameRequestInterval
        self.onKeyFrameNeeded = onKeyFrameNeeded
    }

    /// Counters, the assembler's included.
    public var statistics: VideoReceiver.Statistics {
        var statistics = counters
        statistics.framesLost = assembler.statistics.framesLost
        statistics.framesDroppedWaitingForKeyFrame += assembler.statistics.framesDiscarded
        return statistics
    }

    /// The assembler's own counters (packets ignored, malformed, gaps skipped).
    public var assemblerStatistics: VP8FrameAssembler.Statistics { assembler.statistics }

    /// Whether no frame is handed out until a key frame (after a loss, a refusal or a drop).
    public var isWaitingForKeyFrame: Bool { assembler.needsKeyFrame || decoderNeedsKeyFrame }

    /// Jobs handed out whose results have not come back.
    public var framesInFlight: Int { nextSequence - 1 - lastResult }

    /// Frames that came out of the assembler in the last `receive` or `abandonIncompleteFrames`,
    /// handed out or dropped: none means the stream is stuck on an incomplete frame (or idle).
    public private(set) var lastFramesAssembled = 0

    /// Takes one received RTP packet of the stream (after SRTP and RTX unwrapping) and returns
    /// the jobs it completed, in order. Usually none or one.
    public func receive(_ packet: RTPPacket, now: Instant) -> [VideoDecodeJob] {
        insert(packet)
        return drain(now: now)
    }

    /// Gives up on frames still missing packets (call it from a timer once NACK has had its
    /// chance) and returns the jobs this releases: none after a delta frame was lost, the frames
    /// behind the gap when a key frame was waiting there.
    @discardableResult
    public func abandonIncompleteFrames(now: Instant) -> [VideoDecodeJob] {
        assembler.abandonIncompleteFrames()
        return drain(now: now)
    }

    /// Takes the decoder's result for a job and returns its picture to show, if any; asks for a
    /// key frame when the decoder refused the frame.
    public func decoded(_ result: VideoDecodeResult, now: Instant) -> I420Frame? {
        let picture = take(result)
        askForKeyFrameIfWaiting(now: now)
        return picture
    }

    /// Forgets buffered packets (a new SSRC or a restarted sender), keeping the statistics.
    public func reset() {
        assembler.reset()
        lastRequest = nil
    }

    // MARK: - The steps (VideoReceiver runs them with its decoder in between)

    func insert(_ packet: RTPPacket) {
        assembler.insert(packet)
    }

    func abandonIncomplete() {
        assembler.abandonIncompleteFrames()
    }

    func beginDrain() { lastFramesAssembled = 0 }

    /// The next frame to hand out, or nil when the assembler has none ready. Frames that cannot
    /// decode (after a loss, a refusal or a drop, until a key frame) and frames beyond the
    /// bound are dropped here.
    func nextJob(now: Instant) -> VideoDecodeJob? {
        while let frame = assembler.popFrame() {
            lastFramesAssembled += 1
            if decoderNeedsKeyFrame && !frame.isKeyFrame {
                counters.framesDroppedWaitingForKeyFrame += 1
                continue
            }
            if framesInFlight >= maximumFramesInFlight {
                // The frames after this one would predict from a picture the decoder never saw.
                counters.framesDroppedDecodeQueueFull += 1
                decoderNeedsKeyFrame = true
                continue
            }
            if frame.isKeyFrame {
                decoderNeedsKeyFrame = false
                lastKeyFrame = nextSequence
            }
            defer { nextSequence += 1 }
            return VideoDecodeJob(sequence: nextSequence, frame: frame, assembled: now)
        }
        return nil
    }

    /// Takes a result (without asking for a key frame): its picture, if it has one to show.
    func take(_ result: VideoDecodeResult) -> I420Frame? {
        guard result.sequence > lastResult, result.sequence < nextSequence else { return nil }
        lastResult = result.sequence
        switch result.outcome {
        case .picture(let picture):
            if result.isKeyFrame {
                counters.keyFramesDecoded += 1
                if !isWaitingForKeyFrame { lastRequest = nil }  // the next loss asks at once
            }
            counters.framesDecoded += 1
            return picture
        case .hidden:
            if result.isKeyFrame && !isWaitingForKeyFrame { lastRequest = nil }
            return nil
        case .refused(.waitingForKeyFrame):
            // The decoder has had no key frame yet (the stream was joined mid-way), or refused
            // one before this: the frame was on its way when that happened.
            counters.framesDroppedWaitingForKeyFrame += 1
        case .refused, .decoderUnavailable:
            counters.decodeErrors += 1
        }
        // Nothing after it decodes until a key frame, unless one was handed out after it.
        if result.sequence >= lastKeyFrame { decoderNeedsKeyFrame = true }
        return nil
    }

    func askForKeyFrameIfWaiting(now: Instant) {
        guard isWaitingForKeyFrame else { return }
        if let lastRequest, now - lastRequest < keyFrameRequestInterval { return }
        lastRequest = now
        counters.keyFrameRequests += 1
        onKeyFrameNeeded?()
    }

    private func drain(now: Instant) -> [VideoDecodeJob] {
        beginDrain()
        var jobs: [VideoDecodeJob] = []
        while let job = nextJob(now: now) { jobs.append(job) }
        askForKeyFrameIfWaiting(now: now)
        return jobs
    }
}
