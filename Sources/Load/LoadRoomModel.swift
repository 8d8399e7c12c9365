import Foundation
import Compositing
import Streams
import Media
import Wire

/// What the participants of one run share on the loop: when each sender sent what (so a
/// receiver turns what it sees and hears into latencies), who sends, and the layout the host
/// says it draws. Loop thread only.
final class LoadRoomModel {
    let options: LoadOptions
    let start: Instant
    /// Identities by participant index.
    let identities: [String]
    /// Index by identity.
    let indexOf: [String: Int]
    /// The speakers' identities and tone frequencies, in index order.
    let speakers: [(identity: String, frequency: Double)]
    /// When each present participant's media began to flow (it became secure); nil while absent.
    var sendingSince: [Instant?]
    /// The send time of each speaker's latest tone onsets (a few, newest last).
    var onsets: [[Instant]]
    /// The latest send time of each frame of each camera's loop.
    var pictureSends: [[Instant?]]
    /// The layout the host last reported, and when it was read; while recording, the layout
    /// the recording shows is kept too (the one read at the end may already lack those leaving).
    var layout: (template: TemplateDescription, readAt: Instant)? {
        didSet {
            if isRecording, let layout, let settled = settledLayout(now: layout.readAt) { recordingLayout = settled }
        }
    }
    /// The settled layout last read while recording.
    private(set) var recordingLayout: TemplateDescription?
    /// The last join or leave of any participant (the host's layout follows it).
    var lastMembershipChange: Instant
    /// The host of the latest session any participant got (`http://HOST:PORT`): the room's
    /// host, where the run reads the layout (in a cluster, and after a rejoin, not `--url`).
    var roomHost: String?
    /// Every participant's mix, each distinct stream decoded once.
    let mixDecoding: SharedMixDecoding
    /// The window in which every participant's network is dark (`--blackout`).
    let blackout: Range<Instant>?
    /// The recording of the run (`--record`), while it runs: its id and file, and when it
    /// began; with, from then on, every tone onset and every camera frame the speakers sent
    /// (for its lip sync, checked in the file afterwards), at most `historyLimit` each.
    var recording: (id: String, file: String, began: Instant)?
    var recordingEnded: Instant?
    var onsetHistory: [(speaker: Int, captured: Instant)] = []
    var pictureHistory: [[(captured: Instant, code: Int)]]
    static let historyLimit = 20_000
    /// This machine's wall clock against the loop's (the host's sender reports use the same
    /// wall clock when it runs here): send times become NTP seconds for the A/V offset.
    let wallClock: NTPClockMapping

    init(options: LoadOptions, start: Instant, wallClock: NTPClockMapping) {
        self.options = options
        self.start = start
        self.wallClock = wallClock
        identities = (0..<options.participants).map { "load-\($0)" }
        indexOf = Dictionary(uniqueKeysWithValues: identities.enumerated().map { ($1, $0) })
        speakers = (0..<options.speakers).map { ("load-\($0)", SyntheticSignal.toneFrequency(index: $0)) }
        sendingSince = Array(repeating: nil, count: options.participants)
        onsets = Array(repeating: [], count: options.participants)
        pictureSends = Array(repeating: Array(repeating: nil, count: SyntheticSignal.pictureLoopLength), count: options.participants)
        lastMembershipChange = start
        pictureHistory = Array(repeating: [], count: options.speakers)
        mixDecoding = SharedMixDecoding(frequencies: speakers.map(\.frequency))
        blackout = options.blackoutAt.map { (start + $0)..<(start + $0 + LoadOptions.blackoutLength) }
    }

    /// The send time of frame `frame` of `index`'s camera loop, in NTP seconds; nil when not
    /// sent within the last loop.
    func pictureSentSeconds(of index: Int, frame: Int, seenAt now: Instant) -> Double? {
        guard pictureLatency(of: index, frame: frame, seenAt: now) != nil, let sent = pictureSends[index][frame] else { return nil }
        return wallClock.ntp(at: sent).seconds
    }

    /// When `index`'s latest tone onset before `now` was sent, if under a second ago (the loop
    /// is a second long): the onset a receiver hearing the tone start at `now` hears.
    func latestOnset(of index: Int, before now: Instant) -> Instant? {
        guard let sent = onsets[index].last(where: { $0 <= now }), now - sent < .milliseconds(950) else { return nil }
        return sent
    }

    /// An instant of the run in NTP seconds, on the wall clock the host's SRs use.
    func ntpSeconds(at instant: Instant) -> Double { wallClock.ntp(at: instant).seconds }

    /// The run's instant at a wall-clock time the host gave (the host's and this machine's wall
    /// clocks taken as one: the same machine, or both kept by NTP).
    func instant(at date: Date) -> Instant {
        let ntp = date.timeIntervalSince1970 + Double(NTPTimestamp.unixEpochOffsetSeconds)
        return wallClock.instant + .nanoseconds(Int64(((ntp - wallClock.ntp.seconds) * 1e9).rounded()))
    }

    /// Whether the network is dark at `now`.
    func isDark(_ now: Instant) -> Bool { blackout?.contains(now) ?? false }

    func toneOnsetSent(by index: Int, at time: Instant) {
        onsets[index].append(time)
        if onsets[index].count > 4 { onsets[index].removeFirst() }
        if isRecording, onsetHistory.count < Self.historyLimit { onsetHistory.append((index, time)) }
    }

    /// Frame `frame` of `index`'s camera loop, captured at `time`, is sent.
    func pictureSent(by index: Int, frame: Int, at time: Instant) {
        pictureSends[index][frame] = time
        if isRecording, pictureHistory.indices.contains(index), pictureHistory[index].count < Self.historyLimit {
            pictureHistory[index].append((time, frame))
        }
    }

    private var isRecording: Bool { recording != nil && recordingEnded == nil }

    /// The onsets sent while the recording ran (from 200 ms after it began, to a second before
    /// it ended: each must be in the file with its picture; not in a blackout or the 2 s after
    /// it), and every camera frame the speakers sent, in seconds from the recording's start.
    func recorded() -> (onsets: [RecordingLipSync.Onset], pictures: [Int: [RecordingLipSync.Picture]]) {
        guard let recording, let ended = recordingEnded else { return ([], [:]) }
        let onsets = onsetHistory.compactMap { onset -> RecordingLipSync.Onset? in
            // Around a blackout both streams restart: what they measure then is the restart.
            let settling = blackout.map { onset.captured >= $0.lowerBound && onset.captured < $0.upperBound + .seconds(2) } ?? false
            guard !settling, onset.captured >= recording.began + .milliseconds(200), onset.captured + .seconds(1) <= ended else { return nil }
            return .init(speaker: onset.speaker, captured: (onset.captured - recording.began).seconds)
        }
        var pictures: [Int: [RecordingLipSync.Picture]] = [:]
        for (speaker, sent) in pictureHistory.enumerated() {
            pictures[speaker] = sent.map { .init(captured: ($0.captured - recording.began).seconds, code: $0.code) }
        }
        return (onsets, pictures)
    }

    /// The latency of frame `frame` of `index`'s loop seen at `now`.
    func pictureLatency(of index: Int, frame: Int, seenAt now: Instant) -> Duration? {
        guard frame < SyntheticSignal.pictureLoopLength, let sent = pictureSends[index][frame], sent <= now else { return nil }
        let loopDuration = Duration.milliseconds(1000 * SyntheticSignal.pictureLoopLength / max(1, options.video?.framesPerSecond ?? 30))
        return now - sent < loopDuration ? now - sent : nil
    }

    /// Whether `index` has sent for at least `settle`.
    func hasBeenSending(_ index: Int, for settle: Duration, now: Instant) -> Bool {
        guard let since = sendingSince[index] else { return false }
        return now - since >= settle
    }

    /// The layout to check a composite against at `now`: read after the last membership change
    /// settled, so the host had time to follow it.
    func settledLayout(now: Instant) -> TemplateDescription? {
        guard let layout, now - lastMembershipChange >= .milliseconds(1500),
              layout.readAt - lastMembershipChange >= .milliseconds(1000) else { return nil }
        return layout.template
    }
}
