import Sockets
import Foundation
import Testing

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
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--config", config]
        let output = Pipe()
        process.standardOutput = output
        try process.run()

        // The ready line names the port that was bound.
        let line = readLine(from: output.fileHandleForReading)
        let prefix = "tessera: listening on http://127.0.0.1:"
        #expect(line.hasPrefix(prefix))
        let port = try #require(UInt16(line.dropFirst(prefix.count)))
        #expect(try HTTPTestClient(port: port).send("GET", "/healthz").status == 200)

        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
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
