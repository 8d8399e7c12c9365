import Media
import Streams
import Wire

/// Lip sync for one participant, sans-IO: its decoded camera pictures wait here until the audio
/// captured with them is what the mix plays, so that the composite shows its lips with its voice
/// (and so do recordings, which take both).
///
/// With the participant's sender reports for both streams, a picture is shown once the sender's
/// wall-clock time of its capture (its RTP timestamp through the camera's SR) is no later than
/// that of the audio playing (the played timestamp through the microphone's SR, advanced to
/// now). Without them, a picture waits as long as the audio waits in its jitter buffer. Without
/// audio playing, pictures are shown as they come. A picture never waits more than
/// `maximumHold`, nor more than `maximumHeld` at once: a sender whose clocks disagree must not
/// freeze its tile.
public struct CameraSync: Sendable {
    private struct Held: Sendable {
        var picture: I420Frame
        var rtpTimestamp: UInt32
        var arrival: Instant
    }

    private var held: [Held] = []
    /// The longest a picture waits for its audio (the jitter buffer's own bound, and a frame).
    public static let maximumHold: Duration = .milliseconds(250)
    public static let maximumHeld = 16
    /// A picture may lead its audio by this much (under half a frame at 30 fps).
    public static let tolerance: Duration = .milliseconds(5)

    public init() {}

    /// Pictures waiting now.
    public var count: Int { held.count }

    /// Takes a decoded picture with its RTP timestamp, arrived at `arrival`.
    public mutating func hold(_ picture: I420Frame, rtpTimestamp: UInt32, arrival: Instant) {
        held.append(Held(picture: picture, rtpTimestamp: rtpTimestamp, arrival: arrival))
    }

    /// The pictures to show at `now`, oldest first. `clocks` are the sender reports' mappings of
    /// the microphone and the camera, when both have come.
    public mutating func release(now: Instant, audio: AudioPlayout?, clocks: (audio: SenderClock, video: SenderClock)?) -> [I420Frame] {
        var count = 0
        while count < held.count, isDue(held[count], now: now, audio: audio, clocks: clocks) { count += 1 }
        count = max(count, held.count - Self.maximumHeld)
        defer { held.removeFirst(count) }
        return held.prefix(count).map(\.picture)
    }

    private func isDue(_ picture: Held, now: Instant, audio: AudioPlayout?, clocks: (audio: SenderClock, video: SenderClock)?) -> Bool {
        guard let audio else { return true }
        if now - picture.arrival >= Self.maximumHold { return true }
        if let clocks {
            let playing = clocks.audio.seconds(at: audio.timestamp) + (now - audio.at).seconds
            return clocks.video.seconds(at: picture.rtpTimestamp) <= playing + Self.tolerance.seconds
        }
        return picture.arrival + audio.depth <= now + Self.tolerance
    }
}
