import Sockets
import Foundation
import Testing
@testable import Server
import Transport
import Wire

@Suite struct ConfigTests {
    private func load(_ json: String) throws(HostConfig.LoadError) -> HostConfig {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tessera-config-\(UUID().uuidString).json").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(json.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try HostConfig.load(path: path)
    }

    @Test func noConfigFileServesLoopbackDefaults() throws {
        let config = try HostConfig.load(path: nil)
        #expect(config.http.listen == "127.0.0.1:8080")
        #expect(config.media.listen == "127.0.0.1:50000")
        #expect(config.auth.secret == nil)
    }

    @Test func theShippedConfigLoads() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try HostConfig.load(path: root.appendingPathComponent("Config/tessera.json").path)
        #expect(config.http.listen == "127.0.0.1:8080")
    }

    @Test func theClusterBlockIsReadAndChecked() throws {
        #expect(try load("{}").cluster == nil, "no cluster: a host alone, as before")
        let config = try load(#"{"cluster": {"redis": "redis://127.0.0.1:6379", "node": "a", "url": "http://127.0.0.1:8081", "edge": false}}"#)
        #expect(config.cluster == HostConfig.Cluster(redis: "redis://127.0.0.1:6379", node: "a", url: "http://127.0.0.1:8081"))
        let edge = try load(#"{"cluster": {"redis": "redis://127.0.0.1:6379", "node": "e", "url": "http://127.0.0.1:8082", "edge": true}}"#)
        #expect(edge.cluster?.edge == true, "an edge host serves viewers of rooms other hosts own")
        let bad: [(String, String)] = [
            (#"{"cluster": {"redis": "http://x:1", "node": "a", "url": "http://127.0.0.1:8081"}}"#, "cluster.redis"),
            (#"{"cluster": {"redis": "redis://x:99999", "node": "a", "url": "http://127.0.0.1:8081"}}"#, "cluster.redis"),
            (#"{"cluster": {"redis": "redis://x", "node": "a b", "url": "http://127.0.0.1:8081"}}"#, "cluster.node"),
            (#"{"cluster": {"redis": "redis://x", "node": "a", "url": "http://127.0.0.1:8081/v1"}}"#, "cluster.url"),
            (#"{"cluster": {"redis": "redis://x", "node": "a", "url": "http://127.0.0.1:8081", "edge": "yes"}}"#, "edge"),
            (#"{"cluster": {"redis": "redis://x", "node": "a", "url": "http://h:1", "nodes": 3}}"#, "nodes"),
            (#"{"cluster": {"redis": "redis://x", "url": "http://h:1"}}"#, "node"),
        ]
        for (json, field) in bad {
            #expect(throws: HostConfig.LoadError.self, "\(field)") { try load(json) }
            do { _ = try load(json) } catch { #expect(error.description.contains(field), "\(error.description)") }
        }
    }

    @Test func aPartialFileKeepsTheOtherDefaults() throws {
        let config = try load(#"{"http": {"listen": "127.0.0.1:9999"}}"#)
        #expect(config.http.listen == "127.0.0.1:9999")
        #expect(config.http.maxBodyBytes == HostConfig().http.maxBodyBytes)
        #expect(config.media == HostConfig.Media())
    }

    @Test func nonLoopbackWithoutSecretIsRefusedWithAReason() throws {
        #expect {
            try load(#"{"http": {"listen": "0.0.0.0:8080"}}"#)
        } throws: { error in
            "\(error)".contains("auth.secret")
        }
        let withSecret = try load(#"{"http": {"listen": "0.0.0.0:8080"}, "auth": {"secret": "s3cret"}}"#)
        #expect(withSecret.auth.secret == "s3cret")
    }

    @Test func wrongJSONNamesTheField() throws {
        #expect {
            try load(#"{"http": {"listen": 8080}}"#)
        } throws: { error in
            "\(error)".contains("http.listen")
        }
        #expect(throws: HostConfig.LoadError.self) { try load("{not json") }
        #expect(throws: HostConfig.LoadError.self) { try HostConfig.load(path: "/nonexistent/tessera.json") }
    }

    /// Each kind of mistake a person makes in the file refuses the config, and the message
    /// names the field (and, for a misspelt key, the key meant).
    @Test(arguments: [
        (#"{"auth": {"secrte": "s3cret"}}"#, "`auth.secrte`: unknown key; did you mean `secret`?"),
        (#"{"htp": {"listen": "127.0.0.1:9000"}}"#, "`htp`: unknown key; did you mean `http`?"),
        (#"{"http": {"listen": "127.0.0.1:8080", "maxbodybytes": 1024}}"#, "`http.maxbodybytes`: unknown key; did you mean `maxBodyBytes`?"),
        ("{\n  \"http\": {\"listen\": \"127.0.0.1:8080\",}\n}", "line 2, column 39"),
        (#"{"media": {"announce": ["not-an-ip"]}}"#, "`media.announce[0]`: \"not-an-ip\" is not an IPv4 or IPv6 address"),
        (#"{"media": {"announce": ["0.0.0.0"]}}"#, "`media.announce[0]`"),
        (#"{"media": {"listen": "127.0.0.1:70000"}}"#, "`media.listen`"),
        (#"{"http": {"listen": "localhost:8080"}}"#, "`http.listen`"),
        (#"{"http": {"maxBodyBytes": "64k"}}"#, "`http.maxBodyBytes`: must be a whole number, not a string"),
        (#"{"http": {"connectionLimit": 0}}"#, "`http.connectionLimit`: must be 1…65536, not 0"),
        (#"{"limits": {"maxRooms": 2.5}}"#, "`limits.maxRooms`: must be a whole number"),
        (#"{"auth": {"secret": ""}}"#, "`auth.secret`: is empty"),
        (#"{"recordings": {"folder": ""}}"#, "`recordings.folder`"),
        (#"{"video": {"fps": 120}}"#, "`video.fps`: must be 1…60, not 120"),
        (#"{"limits": {"decodeWorkers": 0}}"#, "`limits.decodeWorkers`: must be 1…64, not 0"),
        (#"{"testing": {"faults": ["ownVoice"]}}"#, "unknown fault \"ownVoice\""),
        (#"{"log": {"format": "xml"}}"#, #"`log.format`: must be "text" or "json", not "xml""#),
        (#"{"log": {"format": "JSON"}}"#, "`log.format`"),
        (#"{"log": {"level": "warning"}}"#, #"`log.level`: must be "info" or "debug", not "warning""#),
        (#"{"log": {"level": 1}}"#, "`log.level`: must be a string"),
        (#"{"log": {"levle": "debug"}}"#, "`log.levle`: unknown key; did you mean `level`?"),
        (#"{"log": "json"}"#, "`log`: must be an object"),
    ])
    func aMistakeInTheFileIsRefusedAndNamed(json: String, message: String) {
        #expect {
            try load(json)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// Decode workers: one per core but the media loop's unless the file says how many.
    @Test func decodeWorkersAreCoresLessOneUnlessTheFileSays() throws {
        #expect(try load("{}").limits.decodeWorkers == nil)
        #expect(VideoDecodePool.defaultSize == max(1, ProcessInfo.processInfo.activeProcessorCount - 1))
        #expect(try load(#"{"limits": {"decodeWorkers": 3}}"#).limits.decodeWorkers == 3)
    }

    @Test func theLogIsTextAtInfoUnlessTheFileSaysOtherwise() throws {
        let defaults = try load("{}")
        #expect(defaults.log.format == .text && defaults.log.level == .info)
        let json = try load(#"{"log": {"format": "json"}}"#)
        #expect(json.log.format == .json && json.log.level == .info)
        let debug = try load(#"{"log": {"format": "text", "level": "debug"}}"#)
        #expect(debug.log.format == .text && debug.log.level == .debug)
    }

    @Test func testingImpairReadsTheNetworkAPeerShouldMeet() throws {
        let config = try load(#"{"testing": {"impair": {"loss": 0.05, "burst": 3, "jitter": "50ms", "delay": "0.02s", "seed": 7}}}"#)
        let impairment = try #require(config.testing.impair).networkImpairment
        #expect(impairment.loss == 0.05 && impairment.burstLength == 3 && config.testing.impair?.seed == 7)
        #expect(impairment.jitter == .milliseconds(50) && impairment.delay == .milliseconds(20))
        #expect(try load("{}").testing.impair == nil)
        for (json, message) in [(#"{"testing": {"impair": {"jitter": "50"}}}"#, "testing.impair.jitter"),
                                (#"{"testing": {"impair": {"loss": 5}}}"#, "`testing.impair.loss`: must be a fraction"),
                                (#"{"testing": {"impair": {"los": 0.1}}}"#, "did you mean `loss`?")] {
            #expect { try load(json) } throws: { "\($0)".contains(message) }
        }
    }

    @Test func aRecordingsFolderThatIsAFileIsRefused() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-folder-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(throws: HostConfig.LoadError.self) { try load(#"{"recordings": {"folder": "\#(file)"}}"#) }
    }

    /// One rule for every subcommand: --config, else Config/tessera.json when it exists, else
    /// the built-in defaults.
    @Test func theConfigIsFoundByOneRule() throws {
        let explicitPath = FileManager.default.temporaryDirectory.appendingPathComponent("explicit-\(UUID().uuidString).json").path
        _ = FileManager.default.createFile(atPath: explicitPath, contents: Data(#"{"http": {"listen": "127.0.0.1:9001"}}"#.utf8))
        defer { try? FileManager.default.removeItem(atPath: explicitPath) }
        let explicit = try HostConfig.resolve(explicitPath: explicitPath, fileExists: { _ in true })
        #expect(explicit.source == .file(explicitPath) && explicit.config.http.listen == "127.0.0.1:9001")
        let none = try HostConfig.resolve(explicitPath: nil, fileExists: { _ in false })
        #expect(none.source == .builtInDefaults && none.config == HostConfig())
        var asked: [String] = []
        _ = try? HostConfig.resolve(explicitPath: nil, fileExists: { asked.append($0); return false })
        #expect(asked == ["Config/tessera.json"])
    }

    /// docs/config.md lists every key the config takes, and no other.
    @Test func docsConfigMDListsEveryKey() throws {
        func leaves(_ shape: JSONShape, _ path: String) -> [String] {
            if case .object(let members) = shape {
                return members.flatMap { leaves($0.value, path.isEmpty ? $0.key : "\(path).\($0.key)") }
            }
            return [path]
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/config.md"), encoding: .utf8)
        // The first cell of each row of the key table: `a.b` or `a.b`, `a.c`.
        var documented = Set<String>()
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cell = line.dropFirst(2).prefix { $0 != "|" }
            for part in cell.split(separator: "`") where part.contains(".") && !part.contains(" ") { documented.insert(String(part)) }
        }
        #expect(documented == Set(leaves(HostConfig.shape, "")))
    }

    @Test(arguments: [
        ("127.0.0.1:8080", UInt16(8080), true),
        ("[::1]:443", UInt16(443), true),
        ("192.0.2.7:1", UInt16(1), false),
        ("[2001:db8::1]:5000", UInt16(5000), false),
    ])
    func listenAddressesParse(text: String, port: UInt16, loopback: Bool) throws {
        let address = try TransportAddress(parsing: text)
        #expect(address.port == port)
        #expect(address.isLoopback == loopback)
        #expect(address.description == text)
    }

    @Test(arguments: ["", "127.0.0.1", "127.0.0.1:99999", "localhost:80", "[::1:80", "1.2.3:80", ":80", "[::1]80"])
    func badTransportAddressesAreRefused(text: String) {
        #expect(throws: AddressParseError.self) { try TransportAddress(parsing: text) }
    }
}
