import Media
import Wire

/// Whether a track can still carry media. A track ends for good (its participant left, or a
/// compositor restarted and made a new output track); it never goes live again.
public enum TrackReadyState: Sendable, Hashable {
    /// Carrying media (or able to).
    case live
    /// Ended for good: frames pushed are ignored, consumers show a placeholder or hear nothing.
    case ended
}

/// A picture size in pixels.
public struct VideoSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Pixels across.
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// A size of `width` × `height` pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `width`x`height`, as in "1280x720".
    public var description: String { "\(width)x\(height)" }
}

/// How long a track may go without a new frame before it counts as not rendering (stalled): a
/// compositor then shows the placeholder instead of a frozen picture.
public let trackStallTimeout: Duration = .seconds(2)

/// A participant's camera or screen, or a compositor's output: the latest decoded picture and
/// what is known about the pictures arriving.
///
/// A source (a decoder, a compositor) pushes frames; consumers read the latest one. Only the
/// latest frame is kept: a consumer that draws less often than frames arrive skips frames, it
/// never queues them. Confined to its room's loop (not `Sendable`).
public final class VideoTrack {
    /// Names the track for logs, the debug overlay and the HTTP API (for example "alice/camera").
    public let id: String
    /// `.live` until `end()`.
    public private(set) var readyState: TrackReadyState = .live
    /// The sender muted the track: consumers show its placeholder, not its pictures.
    public var isMuted = false
    /// How the sender says to turn each picture before showing it (the CVO extension).
    public var rotation: VideoRotation = .none
    /// Frames pushed since the track was made.
    public private(set) var framesReceived: UInt64 = 0
    /// When the latest frame arrived, on the host's clock; nil before the first.
    public private(set) var lastFrameArrival: Instant?

    private var latest: I420Frame?
    /// Lends the latest picture instead (`pushLent`); `latest` is then nil.
    private var lender: (any PictureLender)?
    /// Arrival times within the last second, oldest first (for `frameRate(now:)`).
    private var recentArrivals: [Instant] = []
    private static let recentArrivalLimit = 240

    /// A live track with no frame yet.
    public init(id: String) {
        self.id = id
    }

    /// Takes `frame` as the latest picture, arrived at `now`. Ignored once the track has ended.
    public func push(_ frame: I420Frame, now: Instant) {
        guard readyState == .live else { return }
        latest = frame
        lender = nil
        noteArrival(now: now)
    }

    /// Takes `lender`'s lent picture as the latest, arrived at `now` (no copy): consumers read it
    /// in the lender's planes for as long as it lends it, and show the placeholder when it lends
    /// none. For a source that decodes and composes on one thread (`tessera compose`).
    public func pushLent(by lender: any PictureLender, now: Instant) {
        guard readyState == .live else { return }
        latest = nil
        self.lender = lender
        noteArrival(now: now)
    }

    private func noteArrival(now: Instant) {
        framesReceived &+= 1
        lastFrameArrival = now
        recentArrivals.removeAll { now - $0 >= .seconds(1) }
        if recentArrivals.count >= Self.recentArrivalLimit { recentArrivals.removeFirst() }
        recentArrivals.append(now)
    }

    /// Whether the track shows moving pictures: true from its first frame, false once
    /// `trackStallTimeout` (2 s) has passed at `now` without a new frame, or after `end()`.
    public func isRendering(now: Instant) -> Bool {
        guard readyState == .live, let lastFrameArrival else { return false }
        return now - lastFrameArrival < trackStallTimeout
    }

    /// The picture to show at `now`: nil while the track is muted, ended, or has sent nothing for
    /// 2 s, so that a consumer shows a placeholder rather than a frozen frame.
    public func latestFrame(now: Instant) -> I420Frame? {
        guard !isMuted, isRendering(now: now) else { return nil }
        if let lent = lender?.lentPicture { return I420Frame(copying: lent.view, timestamp: lent.timestamp) }
        return latest
    }

    /// Calls `body` with the picture to show at `now` (as `latestFrame` gives it, but a lent
    /// picture in its lender's planes, not copied); nil, without calling it, when there is none.
    public func withLatestPicture<R>(now: Instant, _ body: (I420PictureView) -> R) -> R? {
        guard !isMuted, isRendering(now: now) else { return nil }
        if let lender { return lender.lentPicture.map { body($0.view) } }
        return latest?.withView(body)
    }

    /// The size of the latest frame as sent (before `rotation`); nil before the first frame.
    public var frameSize: VideoSize? {
        if let lent = lender?.lentPicture { return VideoSize(width: lent.view.width, height: lent.view.height) }
        return latest.map { VideoSize(width: $0.width, height: $0.height) }
    }

    /// Frames that arrived in the second before `now`.
    public func frameRate(now: Instant) -> Int {
        recentArrivals.count { now - $0 < .seconds(1) }
    }

    /// Ends the track for good (its participant left): it drops its picture, ignores later
    /// frames, and consumers show its placeholder.
    public func end() {
        readyState = .ended
        latest = nil
        lender = nil
        recentArrivals = []
    }
}

/// A participant's microphone, or a compositor's mix: 48 kHz PCM in a bounded ring that each
/// consumer reads at its own pace through its own `AudioTrackReader`.
///
/// The ring holds `bufferedDuration` (160 ms) of audio. Several compositors (the room mix, each
/// guest's mix, a recorder) read the same track independently; a reader that falls more than the
/// ring's length behind loses the oldest audio: it jumps to the oldest sample still held and
/// counts what it skipped in `droppedSamples`. The source is never blocked. Confined to its room's
/// loop (not `Sendable`).
public final class AudioTrack {
    /// How much audio the ring keeps for readers that have not read it yet.
    public static let bufferedDuration: Duration = .milliseconds(160)
    /// Samples per channel the ring keeps (160 ms at 48 kHz).
    public static let bufferedSamplesPerChannel = AudioFrame.sampleRate * 160 / 1000

    /// Names the track for logs and the HTTP API (for example "alice/microphone").
    public let id: String
    /// 1 (mono) or 2 (stereo): frames pushed with the other count are mixed down or doubled up.
    public let channels: Int
    /// `.live` until `end()`.
    public private(set) var readyState: TrackReadyState = .live
    /// The sender muted the track: compositors read past its audio without mixing it.
    public var isMuted = false
    /// When the latest frame arrived, on the host's clock; nil before the first.
    public private(set) var lastFrameArrival: Instant?

    /// Interleaved samples; sample-per-channel index `i` lives at `(i % capacity) * channels`.
    private var ring: [Int16]
    /// Samples per channel ever written (the ring's write position).
    private(set) var writtenSamples: UInt64 = 0

    /// A live track with no audio yet, carrying `channels` channels.
    public init(id: String, channels: Int = 1) {
        precondition(channels == 1 || channels == 2, "mono or stereo")
        self.id = id
        self.channels = channels
        ring = [Int16](repeating: 0, count: Self.bufferedSamplesPerChannel * channels)
    }

    /// Appends `audio` (any length; usually 20 ms), arrived at `now`. Ignored once the track has
    /// ended. Audio older than the ring's 160 ms is overwritten.
    public func push(_ audio: AudioFrame, now: Instant) {
        guard readyState == .live else { return }
        lastFrameArrival = now
        let capacity = Self.bufferedSamplesPerChannel
        let count = audio.samplesPerChannel
        // Only the newest `capacity` samples can survive.
        let skip = max(0, count - capacity)
        let (trackChannels, sourceChannels) = (channels, audio.channels)
        var position = Int((writtenSamples + UInt64(skip)) % UInt64(capacity))
        ring.withUnsafeMutableBufferPointer { ring in
            audio.samples.withUnsafeBufferPointer { source in
                if sourceChannels == trackChannels {
                    // Straight copies, in at most two pieces around the ring's end.
                    var sample = skip
                    while sample < count {
                        let piece = min(count - sample, capacity - position)
                        let target = UnsafeMutableBufferPointer(rebasing: ring[position * trackChannels ..< (position + piece) * trackChannels])
                        _ = target.initialize(from: source[sample * trackChannels ..< (sample + piece) * trackChannels])
                        sample += piece
                        position = (position + piece) % capacity
                    }
                    return
                }
                for sample in skip..<count {
                    let target = position * trackChannels
                    let origin = sample * sourceChannels
                    switch (sourceChannels, trackChannels) {
                    case (1, 1): ring[target] = source[origin]
                    case (2, 2): ring[target] = source[origin]; ring[target + 1] = source[origin + 1]
                    case (1, 2): ring[target] = source[origin]; ring[target + 1] = source[origin]
                    default: ring[target] = Int16((Int32(source[origin]) + Int32(source[origin + 1])) / 2)
                    }
                    position += 1
                    if position == capacity { position = 0 }
                }
            }
        }
        writtenSamples += UInt64(count)
    }

    /// Whether audio is arriving: true from the first frame, false once 2 s have passed at `now`
    /// without one, or after `end()`.
    public func isRendering(now: Instant) -> Bool {
        guard readyState == .live, let lastFrameArrival else { return false }
        return now - lastFrameArrival < trackStallTimeout
    }

    /// A reader that starts at the newest audio: it gets what is pushed from now on. Each
    /// consumer keeps its own.
    public func makeReader() -> AudioTrackReader {
        AudioTrackReader(track: self, position: writtenSamples)
    }

    /// Ends the track for good (its participant left): later frames are ignored and readers get
    /// nothing more.
    public func end() {
        readyState = .ended
    }

    /// Calls `body` with the samples from `position` on (at most `count` per channel, at most
    /// two contiguous pieces of the ring), each piece's first sample-per-channel index relative
    /// to `position`.
    func withSamples(from position: UInt64, count: Int, _ body: (UnsafeBufferPointer<Int16>, _ offset: Int) -> Void) {
        let capacity = Self.bufferedSamplesPerChannel
        let start = Int(position % UInt64(capacity))
        let first = min(count, capacity - start)
        let channels = channels
        ring.withUnsafeBufferPointer { ring in
            body(UnsafeBufferPointer(rebasing: ring[start * channels ..< (start + first) * channels]), 0)
            if first < count {
                body(UnsafeBufferPointer(rebasing: ring[0 ..< (count - first) * channels]), first)
            }
        }
    }
}

/// One consumer's place in an `AudioTrack`'s ring. Holds the track weakly: a reader never keeps a
/// track alive. Each compositor (or recorder) keeps its own reader per track, so several can read
/// the same track without taking audio from each other.
public struct AudioTrackReader {
    /// The track read; nil once it has been freed.
    public private(set) weak var track: AudioTrack?
    /// Samples per channel read so far, as the track's write position counts them.
    private var position: UInt64
    /// Samples per channel this reader lost by falling more than 160 ms behind.
    public private(set) var droppedSamples: UInt64 = 0

    init(track: AudioTrack, position: UInt64) {
        self.track = track
        self.position = position
    }

    /// Samples per channel waiting to be read (at most 160 ms' worth).
    public var availableSamples: Int {
        guard let track else { return 0 }
        return Int(min(track.writtenSamples - position, UInt64(AudioTrack.bufferedSamplesPerChannel)))
    }

    /// Moves past audio the ring no longer holds, counting it as dropped.
    private mutating func catchUp(_ track: AudioTrack) {
        let oldest = track.writtenSamples.subtractingReportingOverflow(UInt64(AudioTrack.bufferedSamplesPerChannel))
        if !oldest.overflow, position < oldest.partialValue {
            droppedSamples += oldest.partialValue - position
            position = oldest.partialValue
        }
    }

    /// The next `samplesPerChannel` samples (20 ms unless told), converted to `channels`; nil
    /// (and nothing consumed) while less than that is waiting or the track has ended.
    public mutating func nextFrame(samplesPerChannel: Int = AudioFrame.samplesPer20ms, channels: Int = 1,
                                   timestamp: Instant = Instant(nanoseconds: 0)) -> AudioFrame? {
        var mix = [Int32](repeating: 0, count: samplesPerChannel * channels)
        let read = mix.withUnsafeMutableBufferPointer { addNextFrame(into: $0, channels: channels) }
        guard read else { return nil }
        return AudioFrame(channels: channels, samples: mix.map { Int16(truncatingIfNeeded: $0) }, timestamp: timestamp)
    }

    /// Adds the next `mix.count / channels` samples per channel into `mix` (interleaved with
    /// `channels` channels) and moves past them; false (and nothing read) while less than that is
    /// waiting or the track has ended. What a compositor calls each tick: no allocation.
    public mutating func addNextFrame(into mix: UnsafeMutableBufferPointer<Int32>, channels: Int) -> Bool {
        guard let track, track.readyState == .live else { return false }
        catchUp(track)
        let count = mix.count / channels
        guard count > 0, track.writtenSamples - position >= UInt64(count) else { return false }
        let trackChannels = track.channels
        track.withSamples(from: position, count: count) { piece, offset in
            if trackChannels == channels {
                let start = offset * channels
                for index in piece.indices { mix[start + index] &+= Int32(piece[index]) }
                return
            }
            let samples = piece.count / trackChannels
            for sample in 0..<samples {
                let target = (offset + sample) * channels
                let origin = sample * trackChannels
                switch (trackChannels, channels) {
                case (1, 1): mix[target] &+= Int32(piece[origin])
                case (2, 2): mix[target] &+= Int32(piece[origin]); mix[target + 1] &+= Int32(piece[origin + 1])
                case (1, 2): mix[target] &+= Int32(piece[origin]); mix[target + 1] &+= Int32(piece[origin])
                default: mix[target] &+= (Int32(piece[origin]) + Int32(piece[origin + 1])) / 2
                }
            }
        }
        position += UInt64(count)
        return true
    }

    /// Moves past the next `samplesPerChannel` samples without reading them (a muted track);
    /// false while less than that is waiting.
    public mutating func skipNextFrame(samplesPerChannel: Int = AudioFrame.samplesPer20ms) -> Bool {
        guard let track, track.readyState == .live else { return false }
        catchUp(track)
        guard track.writtenSamples - position >= UInt64(samplesPerChannel) else { return false }
        position += UInt64(samplesPerChannel)
        return true
    }
}
