import Conference
import Media
import Streams
import Testing
import Wire

/// Lip sync on a manual timeline: a participant's camera pictures are shown with the audio
/// captured at the same instant, by its sender reports or, before they come, by the audio's delay.
@Suite struct CameraSyncTests {
    static let start = Instant.milliseconds(10_000)
    static func picture(_ index: Int) -> I420Frame {
        I420Frame(width: 16, height: 16, color: YUVColor(y: UInt8(16 + index), u: 128, v: 128), timestamp: start)
    }
    static func shown(_ pictures: [I420Frame]) -> [Int] { pictures.map { Int($0.pixel(x: 0, y: 0).y) - 16 } }

    /// The sender's clocks: audio at 48 kHz and video at 90 kHz, both 0 at NTP second 1000.
    static let clocks = (audio: SenderClock(ntp: NTPTimestamp(rawValue: 1000 << 32), rtpTimestamp: 0, clockRate: 48_000),
                         video: SenderClock(ntp: NTPTimestamp(rawValue: 1000 << 32), rtpTimestamp: 0, clockRate: 90_000))

    /// Pictures captured every 40 ms arrive at once; audio plays 80 ms behind its capture. Each
    /// picture is shown when the audio of its instant plays, not when it arrives.
    @Test func withSenderReportsAPictureWaitsForTheAudioOfItsInstant() {
        var sync = CameraSync()
        for index in 0..<5 { sync.hold(Self.picture(index), rtpTimestamp: UInt32(index * 3_600), arrival: Self.start) }
        var shownAt: [Int: Int] = [:]
        for ms in stride(from: 0, through: 300, by: 10) {
            let now = Self.start + .milliseconds(Int64(ms))
            // The audio playing now was captured 80 ms ago (sender time ms - 80), from capture 0 on.
            let played = max(0, ms - 80)
            let audio = AudioPlayout(timestamp: UInt32(played * 48), at: now, depth: .milliseconds(80))
            for index in Self.shown(sync.release(now: now, audio: audio, clocks: Self.clocks)) { shownAt[index] = ms }
        }
        // Picture k (captured at 40 k ms) shows when the audio of 40 k ms plays: at 40 k + 80 ms,
        // and the first with the first audio.
        #expect(shownAt == [0: 0, 1: 120, 2: 160, 3: 200, 4: 240], "\(shownAt)")
    }

    /// Before sender reports, a picture waits as long as the audio waits in its jitter buffer.
    @Test func withoutSenderReportsAPictureWaitsTheAudioDelay() {
        var sync = CameraSync()
        sync.hold(Self.picture(1), rtpTimestamp: 0, arrival: Self.start)
        let audio = AudioPlayout(timestamp: 0, at: Self.start, depth: .milliseconds(60))
        #expect(sync.release(now: Self.start + .milliseconds(50), audio: audio, clocks: nil).isEmpty)
        #expect(Self.shown(sync.release(now: Self.start + .milliseconds(60), audio: audio, clocks: nil)) == [1])
    }

    /// No audio playing: pictures show as they come. Clocks that disagree (the camera's SR far
    /// ahead) never hold a picture past the bound, nor more than the bound's count.
    @Test func noAudioShowsAtOnceAndBadClocksNeverFreezeTheTile() {
        var sync = CameraSync()
        sync.hold(Self.picture(1), rtpTimestamp: 0, arrival: Self.start)
        #expect(Self.shown(sync.release(now: Self.start, audio: nil, clocks: nil)) == [1])
        let skewed = (audio: Self.clocks.audio,
                      video: SenderClock(ntp: NTPTimestamp(rawValue: 2000 << 32), rtpTimestamp: 0, clockRate: 90_000))
        let audio = AudioPlayout(timestamp: 0, at: Self.start, depth: .milliseconds(20))
        for index in 0..<20 { sync.hold(Self.picture(index), rtpTimestamp: 0, arrival: Self.start) }
        #expect(Self.shown(sync.release(now: Self.start, audio: audio, clocks: skewed)) == [0, 1, 2, 3], "beyond 16 held, the oldest go")
        #expect(sync.release(now: Self.start + .milliseconds(100), audio: audio, clocks: skewed).isEmpty)
        #expect(sync.release(now: Self.start + CameraSync.maximumHold, audio: audio, clocks: skewed).count == 16)
    }
}
