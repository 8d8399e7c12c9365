import Compose
import Compositing
import Foundation
import Testing
import WireTesting

/// Three recordings, each a solid colour and a tone, made by ffmpeg (VP8 + Opus in WebM).
struct ComposeInputs {
    static let people = [("alice", "red", 440.0), ("bob", "lime", 660.0), ("carol", "blue", 880.0)]
    let directory: URL

    init(seconds: Int = 3) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("compose-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, colour, hz) in Self.people {
            _ = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):size=640x360:rate=30",
                                       "-f", "lavfi", "-i", "sine=frequency=\(Int(hz)):sample_rate=48000", "-t", "\(seconds)",
                                       "-c:v", "libvpx", "-deadline", "realtime", "-b:v", "400k", "-c:a", "libopus", "-ac", "1",
                                       directory.appendingPathComponent("\(name).webm").path])
        }
    }

    var paths: [String] { Self.people.map { directory.appendingPathComponent("\($0.0).webm").path } }

    /// alice fills the left half, bob fits the top right, carol fills the bottom right.
    static let template = Data("""
        {"canvas": {"width": 1280, "height": 720, "fps": 30, "background": "#101010"},
         "positions": [
           {"participant": "alice", "rect": {"x": 0, "y": 0, "width": 0.5, "height": 1}, "contentMode": "fill"},
           {"participant": "bob", "rect": {"x": 0.5, "y": 0, "width": 0.5, "height": 0.5}, "contentMode": "fit"},
           {"participant": "carol", "rect": {"x": 0.5, "y": 0.5, "width": 0.5, "height": 0.5}, "contentMode": "fill"}]}
        """.utf8)
}

@Suite(.serialized) struct ComposeOutputTests {
    @Test func theComposedFilePlaysWithEachColourInItsSlotAndEveryTone() throws {
        let inputs = try ComposeInputs()
        defer { try? FileManager.default.removeItem(at: inputs.directory) }
        let output = inputs.directory.appendingPathComponent("out.webm").path
        let summary = try OfflineComposer(templateJSON: ComposeInputs.template, inputPaths: inputs.paths, outputPath: output).run()
        #expect(summary.videoFramesComposed >= 85)

        // ffprobe: VP8 and Opus, and the inputs' 3 s within 100 ms.
        let probe = try JSONSerialization.jsonObject(with: runTool("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", output])) as? [String: Any]
        let codecs = Set(((probe?["streams"] as? [[String: Any]]) ?? []).compactMap { $0["codec_name"] as? String })
        #expect(codecs == ["vp8", "opus"])
        let duration = Double(((probe?["format"] as? [String: Any])?["duration"] as? String) ?? "") ?? 0
        #expect(abs(duration - 3.0) < 0.1, "duration \(duration)")

        // A decoded picture: each slot's centre has its person's colour.
        let rgb = try [UInt8](runTool("ffmpeg", ["-v", "error", "-ss", "1.5", "-i", output, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]))
        #expect(rgb.count == 1280 * 720 * 3)
        func colour(x: Int, y: Int) -> (Int, Int, Int) {
            let at = (y * 1280 + x) * 3
            return (Int(rgb[at]), Int(rgb[at + 1]), Int(rgb[at + 2]))
        }
        let (ar, ag, ab) = colour(x: 320, y: 360), (br, bg, bb) = colour(x: 960, y: 180), (cr, cg, cb) = colour(x: 960, y: 540)
        #expect(ar > 200 && ag < 60 && ab < 60, "alice's slot is red: \(ar) \(ag) \(ab)")
        #expect(bg > 200 && br < 60 && bb < 60, "bob's slot is green: \(br) \(bg) \(bb)")
        #expect(cb > 200 && cr < 60 && cg < 60, "carol's slot is blue: \(cr) \(cg) \(cb)")

        // The decoded mix holds every tone, and not a frequency nobody sent.
        let pcm = try runTool("ffmpeg", ["-v", "error", "-i", output, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        let middle = Array(samples[48_000..<96_000])
        let absent = tonePower(middle, frequency: 1_250)
        for (name, _, hz) in ComposeInputs.people {
            #expect(tonePower(middle, frequency: hz) > 100 * absent, "\(name)'s \(hz) Hz is in the mix")
        }
    }

    /// A damaged input does not cost the composite: damage inside bob's recording loses that
    /// cluster and is read past, damage in carol's last cluster ends carol there; the file is
    /// composed to the end with both said in the summary's warnings.
    @Test func damagedInputsAreComposedAroundWithAWarning() throws {
        let inputs = try ComposeInputs()
        defer { try? FileManager.default.removeItem(at: inputs.directory) }
        let clusterID: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
        /// Zeros over the first block header of the `index`th cluster from the end (1: the last).
        func damage(_ path: String, clusterFromEnd index: Int) throws {
            // Clusters of half a second (ffmpeg's default would make these 3 s one cluster).
            let clustered = path + ".clustered.webm"
            _ = try runTool("ffmpeg", ["-v", "error", "-i", path, "-c", "copy", "-cluster_time_limit", "500", clustered])
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clustered)))
            let clusters = (0..<bytes.count - 4).filter { Array(bytes[$0..<$0 + 4]) == clusterID }
            try #require(clusters.count >= 3, "\(path): \(clusters.count) clusters")
            let cluster = clusters[clusters.count - index]
            let block = try #require((cluster + 4..<bytes.count).first { bytes[$0] == 0xA3 })
            bytes.replaceSubrange(block..<block + 8, with: [UInt8](repeating: 0, count: 8))
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }
        let (bob, carol) = (inputs.paths[1], inputs.paths[2])
        try damage(bob, clusterFromEnd: 2)
        try damage(carol, clusterFromEnd: 1)
        let output = inputs.directory.appendingPathComponent("out.webm").path
        let summary = try OfflineComposer(templateJSON: ComposeInputs.template, inputPaths: inputs.paths, outputPath: output).run()
        #expect(summary.warnings.count == 2, "\(summary.warnings)")
        #expect(summary.warnings.contains { $0.hasPrefix(bob) && $0.contains("read on from the cluster") }, "\(summary.warnings)")
        #expect(summary.warnings.contains { $0.hasPrefix(carol) && $0.contains("the input ends at") }, "\(summary.warnings)")
        let probe = try JSONSerialization.jsonObject(with: runTool("ffprobe", ["-v", "error", "-show_format", "-of", "json", output])) as? [String: Any]
        let duration = Double(((probe?["format"] as? [String: Any])?["duration"] as? String) ?? "") ?? 0
        #expect(abs(duration - 3.0) < 0.1, "duration \(duration): alice's whole recording")
    }

    @Test func aParticipantMayComeAsAnIVFAndAnOggFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compose-ivf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let video = directory.appendingPathComponent("alice.ivf").path, audio = directory.appendingPathComponent("alice.ogg").path
        _ = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=red:size=320x180:rate=30", "-t", "2",
                                   "-c:v", "libvpx", "-deadline", "realtime", video])
        _ = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "2",
                                   "-c:a", "libopus", "-ac", "1", audio])
        let template = Data(#"{"canvas": {"width": 320, "height": 180, "fps": 30}, "positions": [{"participant": "alice", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}}]}"#.utf8)
        let output = directory.appendingPathComponent("out.webm").path
        // The audio file first: the video position must still find the video.
        _ = try OfflineComposer(templateJSON: template, inputPaths: [audio, video], outputPath: output).run()
        let rgb = try [UInt8](runTool("ffmpeg", ["-v", "error", "-ss", "1", "-i", output, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]))
        let centre = (90 * 320 + 160) * 3
        #expect(rgb.count == 320 * 180 * 3)
        #expect(rgb.count > centre + 2 && rgb[centre] > 200 && rgb[centre + 1] < 60, "the picture is alice's red")
        let pcm = try runTool("ffmpeg", ["-v", "error", "-i", output, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(samples.count > 48_000)
        #expect(tonePower(Array(samples.prefix(48_000)), frequency: 440) > 100 * tonePower(Array(samples.prefix(48_000)), frequency: 1_250))
    }

    @Test func inputsOfUnequalLengthAreComposedToTheLongest() throws {
        // One input that ends early and one whose packets lie far apart in time from the others'
        // (pictures only, two a second) must not hold the rest or end the composition.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compose-lengths-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // alice 4 s, bob 1 s, carol 4 s of pictures only, 2 a second: carol's few packets ahead
        // span seconds where the others' span tens of milliseconds.
        for (name, colour, seconds, rate) in [("alice", "red", 4, 30), ("bob", "lime", 1, 30), ("carol", "blue", 4, 2)] {
            let sound = name == "carol" ? [] : ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-c:a", "libopus", "-ac", "1"]
            _ = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):size=320x180:rate=\(rate)"] + sound
                            + ["-t", "\(seconds)", "-c:v", "libvpx", "-deadline", "realtime", directory.appendingPathComponent("\(name).webm").path])
        }
        let template = Data("""
            {"canvas": {"width": 640, "height": 360, "fps": 30},
             "positions": [{"participant": "alice", "rect": {"x": 0, "y": 0, "width": 0.5, "height": 1}},
                           {"participant": "bob", "rect": {"x": 0.5, "y": 0, "width": 0.5, "height": 0.5}},
                           {"participant": "carol", "rect": {"x": 0.5, "y": 0.5, "width": 0.5, "height": 0.5}}]}
            """.utf8)
        let output = directory.appendingPathComponent("out.webm").path
        let paths = ["alice", "bob", "carol"].map { directory.appendingPathComponent("\($0).webm").path }
        let summary = try OfflineComposer(templateJSON: template, inputPaths: paths, outputPath: output).run()
        #expect(abs(summary.duration.seconds - 4) < 0.2, "composed \(summary.duration)")
        #expect(summary.inputFramesDecoded >= 4 * 30 + 1 * 30 + 4 * 2 - 3, "\(summary.inputFramesDecoded) input frames decoded")
        let rgb = try [UInt8](runTool("ffmpeg", ["-v", "error", "-ss", "3.5", "-i", output, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]))
        #expect(rgb.count == 640 * 360 * 3)
        let alice = (180 * 640 + 160) * 3, carol = (270 * 640 + 480) * 3
        #expect(rgb.count > carol + 2 && rgb[alice] > 200 && rgb[alice + 1] < 60, "alice's red at the end")
        #expect(rgb.count > carol + 2 && rgb[carol + 2] > 200 && rgb[carol] < 60, "carol's blue at the end")
    }

    @Test func aTemplateNamingNoInputIsRefusedWithTheField() throws {
        let template = Data(#"{"canvas": {"width": 640, "height": 360}, "positions": [{"participant": "nobody", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}}]}"#.utf8)
        let inputs = try ComposeInputs(seconds: 1)
        defer { try? FileManager.default.removeItem(at: inputs.directory) }
        #expect {
            try OfflineComposer(templateJSON: template, inputPaths: inputs.paths, outputPath: "/tmp/never.webm")
        } throws: { error in
            "\(error)".contains("positions[0].participant")
        }
        #expect(throws: OfflineComposer.ComposeError.self) {
            try OfflineComposer(templateJSON: ComposeInputs.template, inputPaths: ["/nonexistent/alice.webm"], outputPath: "/tmp/never.webm")
        }
        #expect(throws: OfflineComposer.ComposeError.self) {
            try OfflineComposer(templateJSON: Data("{not json".utf8), inputPaths: inputs.paths, outputPath: "/tmp/never.webm")
        }
    }
}
