import Media
import Streams
import Wire

/// Lip sync for one participant, sans-IO: its decoded camera pictures wait here until the audio
/// captured with them is what the mix plays, so that the composite shows its lips with its voice
/// (and so do recordings, which take both).
///
/// With the participant's sender reports for both streams, a picture is shown in the drawing
/// nearest to when its sound is heard: the sender's wall-clock time of its capture (its RTP
/// timestamp through the camera's SR) against that of the audio playing (the played timestamp
/// through the microphone's SR, advanced to now), less what the two Opus codecs on the way add
/// (`codecDelay`), within half the drawing interval. Without them, a picture waits as long as
/// the audio waits in its jitter buffer, and the codecs. Without audio playing, pictures are
/// shown as they come. A picture never waits more than `maximumHold`, nor more than
/// `maximumHeld` at once: a sender whose clocks disagree must not freeze its tile.
///
/// When the camera's path is the slower (its pictures come, decoded, after their sound is
/// already heard: a sender whose audio arrives just before the mix takes it), holding pictures
/// cannot help: the voice must wait instead. `audioDelay` is how much longer, judged over each
/// `judgedPictures` by how long before its sound is heard each picture came (its lead): most
/// pictures should come at least half a drawing before (to be shown nearest their sound), and
/// not a drawing more (the voice would wait longer than lips need). A browser's lip sync sets
/// its audio's minimum delay the same way.
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
    /// What a listener's ear lags the sound the guest captured by, beyond the playout: the
    /// look-ahead of the guest's Opus encoder and of the mix's (6.5 ms each; browsers use
    /// libopus too). The camera's pictures have no such delay (VP8 in real time codes none).
    public static let codecDelay: Duration = .nanoseconds(2 * Int64(OpusEncoder.voiceLookahead) * 1_000_000_000 / Int64(AudioFrame.sampleRate))

    /// How much longer the participant's voice should wait for its lips (`AudioReceiver.lipSyncDelay`).
    public private(set) var audioDelay: Duration = .zero
    /// Pictures judged at a time: a second at 30 fps.
    public static let judgedPictures = 30
    /// Per picture shown in time (not forced out): how long before its sound is heard it came.
    private var leads: [Duration] = []

    public init() {}

    /// Pictures waiting now.
    public var count: Int { held.count }

    /// Takes a decoded picture with its RTP timestamp, arrived at `arrival`.
    public mutating func hold(_ picture: I420Frame, rtpTimestamp: UInt32, arrival: Instant) {
        held.append(Held(picture: picture, rtpTimestamp: rtpTimestamp, arrival: arrival))
    }

    /// The pictures to show in the drawing at `now`, oldest first; drawings come every
    /// `drawInterval`. `clocks` are the sender reports' mappings of the microphone and the
    /// camera, when both have come.
    public mutating func release(now: Instant, drawInterval: Duration, audio: AudioPlayout?,
                                 clocks: (audio: SenderClock, video: SenderClock)?) -> [I420Frame] {
        var count = 0
        while count < held.count {
            let picture = held[count]
            // No audio playing, or held too long: shown as it is.
            guard let audio, now - picture.arrival < Self.maximumHold else {
                count += 1
                continue
            }
            // A picture whose sound is heard before the next drawing's midpoint is nearer this one.
            let heard = heard(picture, now: now, audio: audio, clocks: clocks)
            guard heard <= now + drawInterval / 2 else { break }
            leads.append(heard - picture.arrival)
            count += 1
        }
        count = max(count, held.count - Self.maximumHeld)
        defer { held.removeFirst(count) }
        judgeAudioDelay(drawInterval: drawInterval)
        return held.prefix(count).map(\.picture)
    }

    /// When `picture`'s sound is heard (`now` being a drawing's instant).
    private func heard(_ picture: Held, now: Instant, audio: AudioPlayout, clocks: (audio: SenderClock, video: SenderClock)?) -> Instant {
        guard let clocks else { return picture.arrival + audio.depth + Self.codecDelay }
        let playing = clocks.audio.seconds(at: audio.timestamp) + (now - audio.at).seconds
        return now + .nanoseconds(Int64((clocks.video.seconds(at: picture.rtpTimestamp) - playing) * 1e9)) + Self.codecDelay
    }

    /// Over each `judgedPictures` shown: when a quarter of them came less than half a drawing
    /// before their sound, the voice waits longer; when three quarters came more than a drawing
    /// before, less; either way towards 0.6 of a drawing before, by a drawing at most. A second
    /// whose pictures came unevenly (the middle half spread over two drawings: a restart after
    /// a key frame, a burst) says nothing of the camera's steady path and is not judged.
    private mutating func judgeAudioDelay(drawInterval: Duration) {
        guard leads.count >= Self.judgedPictures else { return }
        defer { leads.removeAll(keepingCapacity: true) }
        let sorted = leads.sorted()
        let lead = sorted[sorted.count / 4], wanted = drawInterval * 0.6
        guard sorted[sorted.count * 3 / 4] - lead <= drawInterval * 2, lead < drawInterval / 2 || lead > drawInterval else { return }
        let step = min(max(wanted - lead, .zero - drawInterval), drawInterval)
        audioDelay = min(max(.zero, audioDelay + step), AudioReceiver.maximumLipSyncDelay)
    }
}
