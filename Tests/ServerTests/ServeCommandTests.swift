import Sockets
import Foundation
import Testing
import Transport

/// `tessera serve` as a user runs it: the built executable, its ready line, its exit on SIGTERM.
@Suite struct ServeCommandTests {
    /// The `tessera` executable built beside this test bundle.
    static var executable: URL? {
        let directory = Bundle.main.bundleURL.deletingLastPathComponent()
        for candidate in [directory, Bundle.main.bundleURL] {
            let url = candidate.appendingPathComponent("tessera")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    private func writeConfig(_ json: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString).json").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(json.utf8))
        return path
    }

    @Test func servePrintsItsReadyLineAnswersAndExitsZeroOnSIGTERM() throws {
        let executable = try #require(Self.executable, "build the tessera product first (swift build)")
        let config = writeConfig(#"{"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:0"}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (process, line, output) = try serve(executable, config: config)
        defer { withExtendedLifetime(output) {} }

        // The ready line names the port that was bound.
        let prefix = "tessera: listening on http://127.0.0.1:"
        #expect(line.hasPrefix(prefix))
        let port = try #require(UInt16(line.dropFirst(prefix.count)))
        #expect(try HTTPTestClient(port: port).send("GET", "/healthz").status == 200)

        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }

    /// SIGTERM while joins keep coming (8 clients, joins into 4 rooms, none ever connecting):
    /// the host stops taking them, answers or drops those in flight, and exits 0. How long it
    /// took is printed (a figure, not a bound; the guard only catches a hang).
    @Test func sigtermDuringABurstOfJoinsExitsCleanly() throws {
        let executable = try #require(Self.executable, "build the tessera product first (swift build)")
        let config = writeConfig(#"{"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:0"}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (process, line, output) = try serve(executable, config: config)
        defer { withExtendedLifetime(output) {} }
        let port = try #require(UInt16(line.split(separator: ":").last ?? ""))
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/chromium-offer.sdp")
        let offer = try Array(Data(contentsOf: url))
        let answered = LockedCounter()
        let burst = DispatchGroup()
        for client in 0..<8 {
            DispatchQueue.global().async(group: burst) {
                for join in 0..<25 {
                    let path = "/v1/rooms/burst-\(join % 4)/participants?identity=c\(client)-\(join)"
                    guard let response = try? HTTPTestClient(port: port).send("POST", path, headers: ["Content-Type": "application/sdp"], body: offer)
                    else { return }  // the host is gone
                    if response.status == 201 { answered.add() }
                }
            }
        }
        for _ in 0..<2_000 where answered.value < 20 { usleep(5_000) }  // bounded: 10 s at most
        #expect(answered.value >= 20, "joins were answered before the SIGTERM")
        let stopping = Date()
        process.terminate()  // SIGTERM, joins still coming
        let exited = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            process.waitUntilExit()
            exited.signal()
        }
        #expect(exited.wait(timeout: .now() + 60) == .success, "tessera serve still running 60 s after SIGTERM")
        print("serve: exited \(Int(Date().timeIntervalSince(stopping) * 1000)) ms after SIGTERM, \(answered.value) joins answered 201")
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        _ = burst.wait(timeout: .now() + 30)
    }

    /// `"log": {"format": "json"}`: after the plain `config:` line (written before the config is
    /// read), standard error holds one JSON object per line, from `started` to `stopped` with the
    /// signal; the ready line stays on standard output as it was.
    @Test func serveWritesItsLogAsJSONLinesOnStandardError() throws {
        let executable = try #require(Self.executable, "build the tessera product first (swift build)")
        let config = writeConfig(#"{"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:0"}, "log": {"format": "json"}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let errors = Pipe()
        let (process, line, output) = try serve(executable, config: config, standardError: errors)
        defer { withExtendedLifetime(output) {} }
        #expect(line.hasPrefix("tessera: listening on http://127.0.0.1:"))
        process.terminate()  // SIGTERM
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let lines = text.split(separator: "\n")
        #expect(lines.first == "config: \(config)")
        let objects = lines.dropFirst().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == lines.count - 1, "every line after the first is a JSON object: \(text)")
        #expect(objects.compactMap { $0["event"] as? String } == ["started", "stopping", "stopped"], "\(text)")
        #expect(objects.dropFirst().first?["reason"] as? String == "SIGTERM")
        #expect((objects.first?["http"] as? String).map { line.hasSuffix($0) } == true, "started names the address the ready line does")
    }

    @Test func serveRefusesAPublicAddressWithoutASecret() throws {
        let executable = try #require(Self.executable)
        let config = writeConfig(#"{"http": {"listen": "0.0.0.0:0"}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--config", config]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus != 0)
        #expect(message.contains("auth.secret"))
    }

    /// With `http.tls`, the API and the page are served over HTTPS only: curl trusting the
    /// certificate gets answers, and a plain HTTP request gets none.
    @Test func serveWithTLSAnswersOverHTTPSOnly() throws {
        let executable = try #require(Self.executable)
        let certificate = try DTLSCertificate(commonName: "127.0.0.1", validityDays: 2, serverNames: ["127.0.0.1"])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let certificatePath = folder.appendingPathComponent("cert.pem").path, keyPath = folder.appendingPathComponent("key.pem").path
        try Data(certificate.pem.utf8).write(to: URL(fileURLWithPath: certificatePath))
        try Data(certificate.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: keyPath))
        let config = writeConfig(#"{"http": {"listen": "127.0.0.1:0", "tls": {"certificate": "\#(certificatePath)", "key": "\#(keyPath)"}}, "media": {"listen": "127.0.0.1:0"}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (process, line, output) = try serve(executable, config: config)
        defer { withExtendedLifetime(output) {} }
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let prefix = "tessera: listening on https://127.0.0.1:"
        #expect(line.hasPrefix(prefix), "\(line)")
        let port = try #require(UInt16(line.dropFirst(prefix.count)))
        func curl(_ url: String) throws -> (status: Int32, body: String) {
            let run = Process()
            run.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            run.arguments = ["-s", "--max-time", "10", "--cacert", certificatePath, url]
            let body = Pipe()
            run.standardOutput = body
            try run.run()
            let data = body.fileHandleForReading.readDataToEndOfFile()
            run.waitUntilExit()
            return (run.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        let rooms = try curl("https://127.0.0.1:\(port)/v1/rooms")
        #expect(rooms.status == 0 && rooms.body == #"{"rooms":[]}"#, "\(rooms)")
        let page = try curl("https://127.0.0.1:\(port)/")
        #expect(page.body.contains("<html"))
        #expect(try curl("http://127.0.0.1:\(port)/v1/rooms").body.isEmpty, "no answer in plain HTTP")
    }

    /// Starts `tessera serve --config config` and reads its first line (the ready line). Keep
    /// `output` while the host runs: its read end closing would break the host's next write.
    private func serve(_ executable: URL, config: String, standardError: Pipe? = nil) throws -> (process: Process, line: String, output: Pipe) {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--config", config]
        let output = Pipe()
        process.standardOutput = output
        // Its log goes where the test reads it, or nowhere (not into the test run's output).
        process.standardError = standardError ?? FileHandle.nullDevice
        try process.run()
        return (process, readLine(from: output.fileHandleForReading), output)
    }

    private func readLine(from handle: FileHandle) -> String {
        var bytes: [UInt8] = []
        while bytes.count < 4096 {
            let chunk = handle.readData(ofLength: 1)
            guard let byte = chunk.first, byte != UInt8(ascii: "\n") else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A count shared by the burst's threads.
private final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
