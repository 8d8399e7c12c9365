import Foundation
import Testing

/// The `tessera` executable's one grammar, as a user meets it at the terminal.
@Suite struct CommandLineTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs the built executable in `directory` (a fresh empty one by default) and waits for it.
    private func tessera(_ arguments: [String], in directory: URL? = nil) throws -> Run {
        let executable = try #require(ServeCommandTests.executable, "build the tessera product first (swift build)")
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let workingDirectory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workingDirectory, withIntermediateDirectories: true)
        process.currentDirectoryURL = workingDirectory
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if directory == nil { try? FileManager.default.removeItem(at: workingDirectory) }
        return Run(status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
                   errors: String(decoding: errorData, as: UTF8.self))
    }

    static let commands = ["serve", "load", "token", "cert", "compose", "bench", "version", "help"]

    @Test(arguments: commands)
    func everyCommandPrintsItsUsageOnHelpAndExitsZero(command: String) throws {
        for spelling in [[command, "--help"], [command, "-h"], ["help", command]] {
            let run = try tessera(spelling)
            #expect(run.status == 0, "\(spelling)")
            #expect(run.output.hasPrefix("usage: tessera \(command)"), "\(spelling): \(run.output.prefix(80))")
        }
    }

    @Test(arguments: ["serve", "load", "token", "compose", "version"])
    func anUnknownOptionIsOneLineThenThatCommandsUsage(command: String) throws {
        let run = try tessera([command, "--no-such-option", "1"])
        #expect(run.status == 2)
        let lines = run.errors.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix("tessera \(command): ") == true && lines.first?.contains("--no-such-option") == true,
                "\(run.errors.prefix(200))")
        #expect(lines.contains { $0.hasPrefix("usage: tessera \(command)") })
        #expect(!lines.contains { $0.hasPrefix("usage: tessera") && !$0.hasPrefix("usage: tessera \(command)") })
    }

    @Test func aBareTesseraOrAnUnknownCommandListsTheCommands() throws {
        for arguments in [[], ["frobnicate"]] {
            let run = try tessera(arguments)
            #expect(run.status == 2)
            #expect(run.errors.contains("usage: tessera COMMAND") && run.errors.contains("serve") && run.errors.contains("compose"))
        }
    }

    @Test func versionPrintsTesseraFirstThenTheLibraries() throws {
        let run = try tessera(["version"])
        #expect(run.status == 0)
        let lines = run.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("tessera ") == true)
        #expect(lines.contains { $0.hasPrefix("libvpx:") } && lines.contains { $0.hasPrefix("libopus:") })
    }

    @Test func nameEqualsValueReadsLikeNameSpaceValue() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"auth": {"secret": "correct horse battery staple"}}"#.utf8).write(to: directory.appendingPathComponent("c.json"))
        let spaced = try tessera(["token", "--room", "r", "--identity", "alice", "--config", "c.json"], in: directory)
        let equals = try tessera(["token", "--room=r", "--identity=alice", "--config=c.json"], in: directory)
        #expect(spaced.status == 0 && equals.status == 0)
        #expect(spaced.output.split(separator: ".").count == 3 && equals.output.split(separator: ".").count == 3)
        #expect(equals.errors.contains("config: c.json"))
    }

    /// serve and token find the config by one rule, and say which they read.
    @Test func serveAndTokenReadConfigTesseraJSONWhenItIsThere() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("Config"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Without the file, token reads the built-in defaults: no secret.
        let bare = try tessera(["token", "--room", "r", "--identity", "a"], in: directory)
        #expect(bare.status == 1 && bare.errors.contains("config: built-in defaults") && bare.errors.contains("no auth.secret"))
        // With it, token signs with its secret; a typo in it stops both commands, naming the key.
        try Data(#"{"auth": {"secret": "correct horse battery staple"}}"#.utf8).write(to: directory.appendingPathComponent("Config/tessera.json"))
        let signed = try tessera(["token", "--room", "r", "--identity", "a"], in: directory)
        #expect(signed.status == 0 && signed.errors.contains("config: Config/tessera.json"))
        try Data(#"{"auth": {"secrte": "correct horse battery staple"}}"#.utf8).write(to: directory.appendingPathComponent("Config/tessera.json"))
        for command in [["token", "--room", "r", "--identity", "a"], ["serve"]] {
            let refused = try tessera(command, in: directory)
            #expect(refused.status == 1)
            #expect(refused.errors.contains("`auth.secrte`: unknown key; did you mean `secret`?"), "\(refused.errors)")
        }
    }

    @Test func checkConfigSaysValidOrWhyNotWithoutServing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(#"{"http": {"listen": "127.0.0.1:0"}}"#.utf8).write(to: directory.appendingPathComponent("good.json"))
        try Data(#"{"http": {"listen": "127.0.0.1:0"}, "media": {"anounce": ["127.0.0.1"]}}"#.utf8)
            .write(to: directory.appendingPathComponent("bad.json"))
        let good = try tessera(["serve", "--check-config", "good.json"], in: directory)
        #expect(good.status == 0 && good.output.contains("valid"))
        let bad = try tessera(["serve", "--check-config=bad.json"], in: directory)
        #expect(bad.status == 1 && bad.errors.contains("`media.anounce`: unknown key; did you mean `announce`?"))
        // Nothing was made in the working directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["bad.json", "good.json"])
    }

    /// `tessera cert` writes a certificate for the names given and a key only its owner reads;
    /// `--check-config` accepts `http.tls` with them, and refuses a key that is not the
    /// certificate's or a file it cannot read, naming the field.
    @Test func certWritesAPairThatTheConfigTakesAndAMismatchIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let made = try tessera(["cert", "--host", "127.0.0.1,meet.lan", "--out", "tls"], in: directory)
        #expect(made.status == 0, "\(made.errors)")
        #expect(made.output.split(separator: "\n") == ["tls/cert.pem", "tls/key.pem"])
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("tls/key.pem").path)[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
        let other = try tessera(["cert", "--host", "other.lan", "--out", "other"], in: directory)
        #expect(other.status == 0)
        for (name, certificate, key, expected) in [
            ("good", "tls/cert.pem", "tls/key.pem", nil),
            ("mismatch", "tls/cert.pem", "other/key.pem", "`http.tls`: the key is not the certificate's"),
            ("missing", "tls/none.pem", "tls/key.pem", "`http.tls.certificate`: cannot read tls/none.pem"),
            ("swapped", "tls/key.pem", "tls/cert.pem", "`http.tls`: the certificate is not a PEM certificate"),
        ] as [(String, String, String, String?)] {
            try Data(#"{"http": {"listen": "127.0.0.1:0", "tls": {"certificate": "\#(certificate)", "key": "\#(key)"}}}"#.utf8)
                .write(to: directory.appendingPathComponent("\(name).json"))
            let checked = try tessera(["serve", "--check-config", "\(name).json"], in: directory)
            if let expected {
                #expect(checked.status == 1 && checked.errors.contains(expected), "\(name): \(checked.errors)")
            } else {
                #expect(checked.status == 0, "\(name): \(checked.errors)")
            }
        }
        #expect(try tessera(["cert"], in: directory).status == 2, "--host is needed")
        #expect(try tessera(["cert", "--host", "a b"], in: directory).status == 2, "not a name")
    }
}
