import Sockets
import Foundation
import Testing
import WireTesting

/// `tessera compose` as a user runs it, including a recording cut short by SIGKILL.
@Suite(.serialized) struct ComposeCommandTests {
    private func ffmpeg(_ tool: String, _ arguments: [String]) throws -> String {
        String(decoding: try runTool(tool, arguments), as: UTF8.self)
    }

    @Test func aRecordingKilledMidwayStillPlaysToWithinTwoSecondsOfTheKill() throws {
        let executable = try #require(ServeCommandTests.executable)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("alice.webm").path
        _ = try ffmpeg("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-f", "lavfi", "-i",
                                  "sine=frequency=440:sample_rate=48000", "-t", "8", "-c:v", "libvpx", "-deadline", "realtime",
                                  "-c:a", "libopus", "-ac", "1", input])
        let template = directory.appendingPathComponent("t.json")
        try Data(#"{"canvas": {"width": 640, "height": 360, "fps": 30}, "positions": [{"participant": "alice", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}}]}"#.utf8)
            .write(to: template)
        let output = directory.appendingPathComponent("out.webm").path

        // Composed no faster than real time, then killed without a chance to finish the file.
        let process = Process()
        process.executableURL = executable
        process.arguments = ["compose", "--template", template.path, "--out", output, "--realtime", input]
        process.standardOutput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        Thread.sleep(forTimeInterval: 3)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let killedAfter = Date().timeIntervalSince(started)
        #expect(process.terminationReason == .uncaughtSignal)

        // The cut file decodes, and its pictures reach to within 2 s of the kill.
        let times = try ffmpeg("ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", output])
            .split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        let lastPicture = try #require(times.max(), "the cut file has decodable pictures")
        #expect(lastPicture >= killedAfter - 2.5, "last picture at \(lastPicture) s, killed after \(killedAfter) s")
        #expect(try ffmpeg("ffmpeg", ["-v", "error", "-i", output, "-f", "null", "-"]).isEmpty)
    }
}
