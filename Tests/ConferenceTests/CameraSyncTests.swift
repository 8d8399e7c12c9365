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

    /// Drawings at 30 fps.
    static let drawInterval = Duration.nanoseconds(33_333_333)

    /// Pictures captured every 40 ms arrive at once; audio plays 80 ms behind its capture, and
    /// is heard `codecDelay` (13 ms) later still. Each picture is shown in the drawing nearest
    /// to when its sound is heard, not when it arrives.
    @Test func withSenderReportsAPictureWaitsForTheAudioOfItsInstant() {
        var sync = CameraSync()
        for index in 0..<5 { sync.hold(Self.picture(index), rtpTimestamp: UInt32(index * 3_600), arrival: Self.start) }
        var shownAt: [Int: Int] = [:]
        for ms in stride(from: 0, through: 300, by: 10) {
            let now = Self.start + .milliseconds(Int64(ms))
            // The audio playing now was captured 80 ms ago (sender time ms - 80), from capture 0 on.
            let played = max(0, ms - 80)
            let audio = AudioPlayout(timestamp: UInt32(played * 48), at: now, depth: .milliseconds(80))
            for index in Self.shown(sync.release(now: now, drawInterval: .milliseconds(10), audio: audio, clocks: Self.clocks)) {
                shownAt[index] = ms
            }
        }
        // Picture k (captured at 40 k ms) is heard at 40 k + 93 ms: the drawing at 40 k + 90.
        #expect(shownAt == [0: 90, 1: 130, 2: 170, 3: 210, 4: 250], "\(shownAt)")
    }

    /// Pictures captured at any instant (every 7 ms here) against drawings every 33 ms: each
    /// shows in the drawing nearest to when its sound is heard, so lips are never more than half
    /// a drawing early or late.
    @Test func aPictureShowsInTheDrawingNearestToWhenItsSoundIsHeard() throws {
        var sync = CameraSync()
        let audioDelay = 0.060, interval = Self.drawInterval.seconds
        var worst = 0.0, shown = 0, arrived = 0
        for draw in 0..<20 {
            let at = Double(draw) * interval
            let now = Self.start + .nanoseconds(Int64(at * 1e9))
            // Each picture arrives 20 ms after its capture.
            while arrived < 60, Double(arrived) * 0.007 + 0.020 <= at {
                sync.hold(Self.picture(arrived), rtpTimestamp: UInt32(arrived * 630), arrival: now)
                arrived += 1
            }
            let played = max(0, at - audioDelay)
            let audio = AudioPlayout(timestamp: UInt32(played * 48_000), at: now, depth: .milliseconds(60))
            for index in Self.shown(sync.release(now: now, drawInterval: Self.drawInterval, audio: audio, clocks: Self.clocks)) {
                guard at > audioDelay + interval else { continue }  // before the audio starts, all show at once
                let heard = Double(index) * 0.007 + audioDelay + CameraSync.codecDelay.seconds
                worst = max(worst, abs(at - heard))
                shown += 1
            }
        }
        #expect(shown > 20)
        #expect(worst <= interval / 2 + 0.001, "worst \(worst * 1000) ms")
    }

    /// A camera whose pictures come later than their sound is heard (its path 90 ms; the
    /// voice's 20 ms and the codecs' 13): the voice is made to wait, until lips and voice are
    /// within half a drawing; when the camera's path shortens to 40 ms, the voice waits less.
    @Test func whenTheCameraIsSlowerTheVoiceWaits() {
        var sync = CameraSync()
        let interval = Self.drawInterval.seconds, frame = 1.0 / 30, voicePath = 0.020
        var videoPath = 0.090, arrived = 0
        var delayBeforeTheChange = Duration.zero
        var worst: [Int: Double] = [:]  // per settled second: the largest lateness of lips, either way
        for draw in 0..<300 {
            let at = Double(draw) * interval
            if draw == 150 {
                videoPath = 0.040
                delayBeforeTheChange = sync.audioDelay
            }
            let now = Self.start + .nanoseconds(Int64(at * 1e9))
            while Double(arrived) * frame + videoPath <= at {
                sync.hold(Self.picture(arrived % 200), rtpTimestamp: UInt32(arrived * 3000), arrival: now)
                arrived += 1
            }
            // The voice plays its capture `voicePath` and the lip-sync delay ago.
            let audioDelay = sync.audioDelay.seconds
            let played = max(0, at - voicePath - audioDelay)
            let audio = AudioPlayout(timestamp: UInt32(played * 48_000), at: now, depth: .milliseconds(20))
            for index in Self.shown(sync.release(now: now, drawInterval: Self.drawInterval, audio: audio, clocks: Self.clocks)) {
                guard (120..<150).contains(draw) || draw >= 270 else { continue }
                // Picture `index` (mod 200) is the newest with that number.
                let number = (arrived - 1) - ((arrived - 1 - index) % 200 + 200) % 200
                let heard = Double(number) * frame + voicePath + audioDelay + CameraSync.codecDelay.seconds
                worst[draw / 150, default: 0] = max(worst[draw / 150, default: 0], abs(at - heard))
            }
        }
        // The camera's 57 ms more, and the lead its pictures keep (0.6 of a drawing, and up to a
        // drawing more: pictures come in at drawings here).
        let slowPath = Duration.milliseconds(90 - 20 - 13)
        #expect(delayBeforeTheChange >= slowPath && delayBeforeTheChange <= slowPath + Self.drawInterval * 1.6,
                "the voice waits for the slow camera: \(delayBeforeTheChange)")
        #expect(sync.audioDelay < delayBeforeTheChange - .milliseconds(30), "and less for the faster one: \(sync.audioDelay)")
        for (second, lateness) in worst { #expect(lateness <= interval / 2 + 0.002, "lips \(lateness * 1000) ms off in part \(second)") }
        #expect(worst.count == 2)
    }

    /// Before sender reports, a picture waits as long as the audio waits in its jitter buffer.
    @Test func withoutSenderReportsAPictureWaitsTheAudioDelay() {
        var sync = CameraSync()
        sync.hold(Self.picture(1), rtpTimestamp: 0, arrival: Self.start)
        let audio = AudioPlayout(timestamp: 0, at: Self.start, depth: .milliseconds(60))
        // Heard 60 + 13 ms after it came: nearer the drawing at 60 ms than the one at 93.
        #expect(sync.release(now: Self.start + .milliseconds(50), drawInterval: Self.drawInterval, audio: audio, clocks: nil).isEmpty)
        #expect(Self.shown(sync.release(now: Self.start + .milliseconds(60), drawInterval: Self.drawInterval, audio: audio, clocks: nil)) == [1])
    }

    /// No audio playing: pictures show as they come. Clocks that disagree (the camera's SR far
    /// ahead) never hold a picture past the bound, nor more than the bound's count.
    @Test func noAudioShowsAtOnceAndBadClocksNeverFreezeTheTile() {
        var sync = CameraSync()
        sync.hold(Self.picture(1), rtpTimestamp: 0, arrival: Self.start)
        #expect(Self.shown(sync.release(now: Self.start, drawInterval: Self.drawInterval, audio: nil, clocks: nil)) == [1])
        let skewed = (audio: Self.clocks.audio,
                      video: SenderClock(ntp: NTPTimestamp(rawValue: 2000 << 32), rtpTimestamp: 0, clockRate: 90_000))
        let audio = AudioPlayout(timestamp: 0, at: Self.start, depth: .milliseconds(20))
        for index in 0..<20 { sync.hold(Self.picture(index), rtpTimestamp: 0, arrival: Self.start) }
        #expect(Self.shown(sync.release(now: Self.start, drawInterval: Self.drawInterval, audio: audio, clocks: skewed)) == [0, 1, 2, 3], "beyond 16 held, the oldest go")
        #expect(sync.release(now: Self.start + .milliseconds(100), drawInterval: Self.drawInterval, audio: audio, clocks: skewed).isEmpty)
        #expect(sync.release(now: Self.start + CameraSync.maximumHold, drawInterval: Self.drawInterval, audio: audio, clocks: skewed).count == 16)
    }
}
