import Sockets
import Foundation
import Testing
@testable import Server
import Transport

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
