import Compositing
import Foundation
import Media
import Observation
import Testing
import Wire

/// The seed documents' usage examples, as a Swift program that embeds the library writes them.
/// Changed only where iOS differs from Linux: the tracks' pictures are pushed by the test (no
/// camera capture), the compositors are ticked by the caller's clock (no display link: the
/// library keeps no time of its own), and the recording is WebM (VP8 and Opus).
@Suite struct SeedExamplesTests {
    static let red = YUVColor(red: 220, green: 30, blue: 30)
    static let blue = YUVColor(red: 30, green: 30, blue: 220)

    /// Two cameras, each a track with its own pictures.
    private func cameras(now: Instant) -> (VideoTrack, VideoTrack) {
        let alice = VideoTrack(id: "alice"), bob = VideoTrack(id: "bob")
        alice.push(I420Frame(width: 320, height: 240, color: Self.red, timestamp: now), now: now)
        bob.push(I420Frame(width: 320, height: 240, color: Self.blue, timestamp: now), now: now)
        return (alice, bob)
    }

    /// Seed 004: a template of normalized `CGRect`s in drawing order, fill or fit.
    @Test func aTemplateOfTwoTracksSideBySide() throws {
        let clock = ManualClock()
        let (alice, bob) = cameras(now: clock.now())

        let compositor = VideoCompositor(resolutionSize: CGSize(width: 640, height: 360), fps: 30)
        #expect(compositor.outputTrack == nil, "no output track before start()")
        compositor.start()
        let template = CompositeTemplate(trackPositions: [
            VideoTrackPositionInfo(track: alice, normalizedRect: CGRect(x: 0, y: 0, width: 0.5, height: 1), contentMode: .fill),
            VideoTrackPositionInfo(track: bob, normalizedRect: CGRect(x: 0.5, y: 0, width: 0.5, height: 1), contentMode: .fit),
        ])
        compositor.setTemplate(template)
        compositor.tick(now: clock.now())

        let picture = try #require(compositor.outputTrack?.latestFrame(now: clock.now()))
        #expect(compositor.resolutionSize == CGSize(width: 640, height: 360))
        #expect((picture.width, picture.height) == (640, 360))
        #expect(picture.pixel(x: 160, y: 180).isClose(to: Self.red))
        #expect(picture.pixel(x: 480, y: 180).isClose(to: Self.blue))
        #expect(compositor.currentTemplate?.trackPositions.map { $0.normalizedRect.cgRect } == [
            CGRect(x: 0, y: 0, width: 0.5, height: 1), CGRect(x: 0.5, y: 0, width: 0.5, height: 1),
        ])
    }

    /// Seed 004: `isRunning` and `currentTemplate` are observable: a view that reads them is
    /// told when they change.
    @Test func isRunningAndCurrentTemplateNotify() throws {
        let (alice, _) = cameras(now: ManualClock().now())
        let compositor = VideoCompositor(resolutionSize: CGSize(width: 640, height: 360))
        let changes = Changes()

        withObservationTracking { _ = compositor.isRunning } onChange: { changes.note("isRunning") }
        compositor.start()
        withObservationTracking { _ = compositor.currentTemplate } onChange: { changes.note("currentTemplate") }
        compositor.setTemplate(CompositeTemplate(trackPositions: [
            VideoTrackPositionInfo(track: alice, normalizedRect: CGRect(x: 0, y: 0, width: 1, height: 1), contentMode: .fill),
        ]))
        withObservationTracking { _ = (compositor.isRunning, compositor.currentTemplate) } onChange: { changes.note("stop") }
        compositor.stop()
        #expect(changes.seen == ["isRunning", "currentTemplate", "stop"])
        #expect(!compositor.isRunning && compositor.currentTemplate == nil, "stop() drops the template")
    }

    /// Seed 004: every `start()` makes a new output track, and the old one ends.
    @Test func everyStartMakesANewOutputTrack() throws {
        let compositor = VideoCompositor(resolutionSize: CGSize(width: 320, height: 180))
        compositor.start()
        let first = try #require(compositor.outputTrack)
        compositor.stop()
        compositor.start()
        let second = try #require(compositor.outputTrack)
        #expect(first !== second && first.readyState == .ended && second.readyState == .live)
    }

    /// Seed 004: the audio compositor mixes only what was added after `start()`.
    @Test func anAudioTrackAddedBeforeStartIsNeverMixed() throws {
        let audio = AudioCompositor()
        let early = AudioTrack(id: "early")
        audio.addTrack(early)
        audio.start()
        #expect(audio.tracks.isEmpty)
        #expect(audio.outputTrack != nil)
    }

    /// Seed 004: `TrackRecorder(videoTrack:audioTrack:)`, `startRecording(fileName:)`,
    /// `stopRecording()`; its `isRunning` notifies, and the file plays.
    @Test func aRecorderRecordsTheCompositeIntoAFile() throws {
        let clock = MonotonicClock()
        let (alice, bob) = cameras(now: clock.now())
        let compositor = VideoCompositor(resolutionSize: CGSize(width: 320, height: 180), fps: 30)
        let audioCompositor = AudioCompositor()
        compositor.start()
        audioCompositor.start()
        compositor.setTemplate(CompositeTemplate(trackPositions: [
            VideoTrackPositionInfo(track: alice, normalizedRect: CGRect(x: 0, y: 0, width: 0.5, height: 1), contentMode: .fill),
            VideoTrackPositionInfo(track: bob, normalizedRect: CGRect(x: 0.5, y: 0, width: 0.5, height: 1), contentMode: .fill),
        ]))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }

        let recorder = TrackRecorder(videoTrack: compositor.outputTrack, audioTrack: audioCompositor.outputTrack,
                                     configuration: .init(width: 320, height: 180, framesPerSecond: 30))
        let changes = Changes()
        withObservationTracking { _ = recorder.isRunning } onChange: { changes.note("started") }
        try recorder.startRecording(fileName: path)
        #expect(recorder.isRunning)
        // A second of media, ticked as the caller's display link would (on the same clock).
        var now = clock.now()
        for _ in 0..<30 {
            now = now + .milliseconds(33)
            compositor.tick(now: now)
            audioCompositor.tick(now: now)
            recorder.tick(now: now)
        }
        withObservationTracking { _ = recorder.isRunning } onChange: { changes.note("stopped") }
        try recorder.stopRecording()
        #expect(!recorder.isRunning && changes.seen == ["started", "stopped"])

        let file = try MediaFileReader(path: path)
        #expect(file.video == MediaFileReader.VideoInfo(width: 320, height: 180))
        #expect(try file.readAll().count >= 20, "a second of pictures was written")
    }
}

/// What changed, in order (onChange runs synchronously in `willSet`).
private final class Changes: @unchecked Sendable {
    private let lock = NSLock()
    private var names: [String] = []
    func note(_ name: String) { lock.withLock { names.append(name) } }
    var seen: [String] { lock.withLock { names } }
}
