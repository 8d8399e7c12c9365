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
        let compositor = VideoCompositor(canvasSize: VideoSize(width: 320, height: 180), fps: 30)
        compositor.start()
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: camera, normalizedRect: .full)]))
        // Only the compositor and the recorder (weakly) hold the first output, as in the seed's
        // `stop(); start()`: the compositor lets it go.
        weak let firstOutput = compositor.outputTrack
        #expect(firstOutput != nil)
        let recorder = try TrackRecorder(path: path, videoTrack: compositor.outputTrack, audioTrack: nil,
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
        #expect(firstOutput == nil, "the old output is freed")
        recorder.tick(now: clock.now())
        #expect(!recorder.isRecording, "a recorder of the old output ends; a new one must be made")

        // The finished file plays: its duration is the second recorded.
        let text = String(decoding: try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]),
                          as: UTF8.self)
        let duration = try #require(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(duration - 1.0) < 0.1, "duration \(duration)")
    }

    /// The host's loop stalls for 125 ms mid-recording: its audio clock skips ticks and its grid
    /// restarts off the old one (by 5.47 ms). The file gets exactly the silence heard: a tone
    /// mixed after the stall plays as long after one mixed before as it was mixed, to the
    /// millisecond, in a player that plays the file's audio from its first packet on.
    @Test func aStallIsFilledWithTheSilenceHeardToTheSample() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("stall-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let begin = Instant(nanoseconds: 10_000_000_000)
        let mix = AudioTrack(id: "room/mix")
        let recorder = try TrackRecorder(path: path, videoTrack: nil, audioTrack: mix, now: begin)
        let frame = AudioFrame.samplesPer20ms
        // Ticks: every 20 ms to 800 ms, none for 125.47 ms, then every 20 ms again.
        let ticks = (0...40).map { Duration.milliseconds(20 * $0) } + (0..<30).map { .microseconds(925_470 + 20_000 * Int64($0)) }
        let onsets: [Duration] = [.milliseconds(500), .microseconds(1_125_470)]
        for tick in ticks {
            // A 660 Hz tone for 200 ms from each onset, silence elsewhere.
            let samples = (0..<frame).map { index -> Int16 in
                let at = tick + .microseconds(Int64(index) * 1_000_000 / Int64(AudioFrame.sampleRate))
                guard let onset = onsets.first(where: { at >= $0 && at < $0 + .milliseconds(200) }) else { return 0 }
                return Int16(12_000 * sin(2 * Double.pi * 660 * (at - onset).seconds))
            }
            mix.push(AudioFrame(channels: 1, samples: samples), now: begin + tick)
            recorder.tick(now: begin + tick)
        }
        try recorder.stop()

        let reader = try MediaFileReader(path: path)
        let decoder = try OpusDecoder(channels: try #require(reader.audio).channels)
        var played: [Int16] = []
        while let packet = try reader.nextPacket() {
            if packet.kind == .audio { played += try decoder.decode(packet.data).samples }
        }
        // Each onset: the first sample over 25 % of the tone's height after 50 ms of quiet (Opus in
        // its CELT mode, a file's, spreads a little energy a few ms ahead of an onset: a lower
        // threshold times that spread, which differs with where in its frame the onset falls).
        var found: [Int] = []
        var quiet = 0
        for (index, sample) in played.enumerated() {
            let loud = abs(Int(sample)) > 3_000
            if loud, quiet >= 2_400 { found.append(index) }
            quiet = loud ? 0 : quiet + 1
        }
        #expect(found.count == 2, "onsets at \(found) in \(played.count) samples, loudest \(played.map { abs(Int($0)) }.max() ?? 0), written \(recorder.audioPacketsWritten)")
        let apart = Double((found.last ?? 0) - (found.first ?? 0)) / Double(AudioFrame.sampleRate)
        #expect(abs(apart - (onsets[1] - onsets[0]).seconds) < 0.001, "played \(apart * 1000) ms apart, mixed 625.47 ms apart")
    }

    /// A file that cannot be written (`/dev/full`: every write fails with ENOSPC, as on a full
    /// disk) refuses the recording at its start with the reason, without a trap: the WebM header
    /// is written when the recording starts, so the caller (the HTTP request) hears it at once.
    /// The tracks go on. (A write failing later ends the recording by itself: the next test.)
    @Test func aFullDiskRefusesTheRecordingWithItsReason() throws {
        let clock = ManualClock()
        let camera = VideoTrack(id: "room/composite")
        let mix = AudioTrack(id: "room/mix")
        camera.push(I420Frame(width: 320, height: 180, color: YUVColor(y: 20, u: 90, v: 160), timestamp: clock.now()), now: clock.now())
        mix.push(AudioFrame(channels: 1, samples: [Int16](repeating: 0, count: AudioFrame.samplesPer20ms)), now: clock.now())
        do {
            _ = try TrackRecorder(path: "/dev/full", videoTrack: camera, audioTrack: mix,
                                  configuration: .init(width: 320, height: 180, framesPerSecond: 30), now: clock.now())
            Issue.record("a recording into /dev/full started")
        } catch {
            guard case .container(.io(_, let code, let message)) = error else { Issue.record("\(error)"); return }
            #expect(code == ENOSPC && message.contains("No space"), "\(error)")
        }
        #expect(camera.readyState == .live && mix.readyState == .live, "the tracks go on")
    }

    /// Writes into a file whose folder was removed succeed and are lost: the recorder notices
    /// within a second, ends, and says why; the tracks go on.
    @Test func aRemovedFolderEndsTheRecordingWithItsReason() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tessera-removed-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("room.webm").path
        let clock = ManualClock()
        let camera = VideoTrack(id: "room/composite")
        let mix = AudioTrack(id: "room/mix")
        let recorder = try TrackRecorder(path: path, videoTrack: camera, audioTrack: mix,
                                         configuration: .init(width: 320, height: 180, framesPerSecond: 30), now: clock.now())
        var removedAt: Instant?
        for frame in 0..<200 where recorder.isRecording {
            if frame == 50 {
                try FileManager.default.removeItem(at: folder)
                removedAt = clock.now()
            }
            camera.push(I420Frame(width: 320, height: 180, color: YUVColor(y: UInt8(frame % 200 + 20), u: 90, v: 160), timestamp: clock.now()),
                        now: clock.now())
            mix.push(AudioFrame(channels: 1, samples: [Int16](repeating: 0, count: AudioFrame.samplesPer20ms)), now: clock.now())
            recorder.tick(now: clock.now())
            clock.advance(by: .milliseconds(20))
        }
        #expect(!recorder.isRecording, "the recording ended")
        #expect(recorder.errors.contains(.fileRemoved(path)), "\(recorder.errors)")
        if let removedAt { #expect(clock.now() - removedAt <= .milliseconds(1100), "noticed within a second") }
        #expect(camera.readyState == .live && mix.readyState == .live, "the tracks go on")
    }

    @Test func aRecorderNeedsATrack() {
        #expect(throws: RecordingError.nothingToRecord) {
            try TrackRecorder(path: "/tmp/none.webm", videoTrack: nil, audioTrack: nil, now: Instant(nanoseconds: 0))
        }
    }
}
