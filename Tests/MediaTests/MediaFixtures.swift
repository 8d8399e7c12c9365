import Foundation
import Media
import Testing

/// Real VP8 and Opus made by the ffmpeg CLI (libvpx, libopus) once per test run, and the ffmpeg
/// tools that check what Tessera writes. `scripts/setup.sh test` installs ffmpeg.
enum MediaFixtures {
    struct ToolResult {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// A fresh directory under the system's temporary directory.
    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tessera-media-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs `tool` (found on PATH) and waits for it.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> ToolResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read stderr on another thread while stdout is read here, so that a chatty tool never
        // blocks on a full pipe.
        let errData = LockedData()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            errData.set(err.fileHandleForReading.readDataToEndOfFile())
            done.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return ToolResult(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                          stderr: String(decoding: errData.value, as: UTF8.self))
    }

    final class LockedData: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ value: Data) { lock.withLock { data = value } }
        var value: Data { lock.withLock { data } }
    }

    static let ffmpegAvailable: Bool = (try? run("ffmpeg", ["-version"]).status) == 0

    /// The generated files, made on first use (tests run in parallel; a static let is made once).
    struct Files: Sendable {
        let directory: URL
        /// 5 s of 320×240 VP8 at 30 fps (a key frame every second), IVF.
        let videoIVF: String
        /// 5 s of a 440 Hz tone, mono Opus in 20 ms packets, Ogg.
        let audioOgg: String
        /// Half a second of tiny VP8 + Opus in WebM, made by ffmpeg: the fuzz seed.
        let smallWebM: String
    }

    static let files: Result<Files, FixtureError> = make()

    struct FixtureError: Error, CustomStringConvertible {
        var description: String
    }

    static func require() throws -> Files {
        guard ffmpegAvailable else { throw FixtureError(description: "ffmpeg is not installed: run scripts/setup.sh test") }
        return try files.get()
    }

    private static func make() -> Result<Files, FixtureError> {
        let directory = temporaryDirectory()
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let files = Files(directory: directory, videoIVF: path("video.ivf"), audioOgg: path("audio.ogg"), smallWebM: path("small.webm"))
        let vp8 = ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k", "-g", "30"]
        let opus = ["-c:a", "libopus", "-b:a", "32k"]
        let commands: [[String]] = [
            ["-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-t", "5"] + vp8 + [files.videoIVF],
            ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "5"] + opus + [files.audioOgg],
            ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=15", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
             "-t", "0.5"] + vp8 + opus + [files.smallWebM],
        ]
        for command in commands {
            do {
                let result = try run("ffmpeg", ["-v", "error", "-y", "-nostdin"] + command)
                guard result.status == 0 else { return .failure(FixtureError(description: "ffmpeg \(command): \(result.stderr)")) }
            } catch {
                return .failure(FixtureError(description: "ffmpeg: \(error)"))
            }
        }
        return .success(files)
    }

    // MARK: - Checking files with ffprobe and ffmpeg

    struct Probe: Decodable {
        struct Stream: Decodable {
            var codec_name: String?
            var codec_type: String?
            var width: Int?
            var height: Int?
            var channels: Int?
            var sample_rate: String?
        }
        struct Format: Decodable {
            var format_name: String?
            var duration: String?
        }
        var streams: [Stream]
        var format: Format

        var durationSeconds: Double? { format.duration.flatMap(Double.init) }
    }

    static func probe(_ path: String) throws -> Probe {
        let result = try run("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", path])
        guard result.status == 0 else { throw FixtureError(description: "ffprobe \(path): \(result.stderr)") }
        return try JSONDecoder().decode(Probe.self, from: Data(result.stdout.utf8))
    }

    /// What `ffmpeg -v error -i path -f null -` says: empty when the whole file decodes cleanly.
    static func decodeErrors(_ path: String) throws -> String {
        let result = try run("ffmpeg", ["-v", "error", "-nostdin", "-i", path, "-f", "null", "-"])
        return result.status == 0 ? result.stderr : "exit \(result.status): \(result.stderr)"
    }

    /// The presentation time of the last frame ffprobe decodes in each stream, by stream index.
    static func lastDecodedTimes(_ path: String) throws -> [Int: Double] {
        let result = try run("ffprobe", ["-v", "error", "-show_entries", "frame=stream_index,pts_time", "-of", "csv=p=0", path])
        var last: [Int: Double] = [:]
        for line in result.stdout.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 2, let index = Int(fields[0]), let time = Double(fields[1]) else { continue }
            last[index] = max(last[index] ?? time, time)
        }
        return last
    }

    /// The packets of both files before `end`, merged in time order, as a recorder receives them.
    static func interleaved(_ paths: String..., before end: Duration = .seconds(3600)) throws -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        for path in paths { packets += try MediaFileReader(path: path).readAll().filter { $0.timestamp < end } }
        return packets.enumerated().sorted { ($0.element.timestamp, $0.offset) < ($1.element.timestamp, $1.offset) }.map(\.element)
    }
}
