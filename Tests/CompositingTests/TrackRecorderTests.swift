import Compositing
import Foundation
import Media
import Testing
import Wire
import WireTesting

@Suite struct TrackRecorderTests {
    @Test func theRecorderOfACompositorsOldOutputEndsWhenTheCompositorRestarts() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("restart-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ManualClock()
        let camera = VideoTrack(id: "alice/camera")
        let compositor = VideoCompositor(resolutionSize: VideoSize(width: 320, height: 180), fps: 30)
        compositor.start()
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: camera, normalizedRect: .full)]))
        let firstOutput = try #require(compositor.outputTrack)
        let recorder = try TrackRecorder(path: path, videoTrack: firstOutput, audioTrack: nil,
                                         configuration: .init(width: 320, height: 180, framesPerSecond: 30), now: clock.now())
        for _ in 0..<30 {
            camera.push(I420Frame(width: 320, height: 180, color: YUVColor(red: 255, green: 0, blue: 0), timestamp: clock.now()), now: clock.now())
            compositor.tick(now: clock.now())
            recorder.tick(now: clock.now())
            clock.advance(by: .milliseconds(33))
        }
        #expect(recorder.isRecording)
        #expect(recorder.videoFramesWritten >= 29)

        compositor.stop()
        compositor.start()
        #expect(compositor.outputTrack !== firstOutput)
        #expect(firstOutput.readyState == .ended)
        recorder.tick(now: clock.now())
        #expect(!recorder.isRecording, "a recorder of the old output ends; a new one must be made")

        // The finished file plays: its duration is the second recorded.
        let text = String(decoding: try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]),
                          as: UTF8.self)
        let duration = try #require(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(duration - 1.0) < 0.1, "duration \(duration)")
    }

    @Test func aRecorderNeedsATrack() {
        #expect(throws: RecordingError.nothingToRecord) {
            try TrackRecorder(path: "/tmp/none.webm", videoTrack: nil, audioTrack: nil, now: Instant(nanoseconds: 0))
        }
    }
}
