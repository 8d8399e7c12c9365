import Sockets
import Wire
import Foundation
import Testing
@testable import Server

/// The HTTP layer as a client sees it, on a real socket bound to 127.0.0.1 with an ephemeral port.
@Suite struct HTTPServerTests {
    private func withHost<R>(_ configure: (inout HostConfig) -> Void = { _ in }, _ body: (HTTPTestClient) throws -> R) throws -> R {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        configure(&config)
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        #expect(host.http.address.port != 0)
        return try body(HTTPTestClient(port: host.http.address.port))
    }

    @Test func healthzAnswersWhileTheHostServes() throws {
        try withHost { client in
            let response = try client.send("GET", "/healthz")
            #expect(response.status == 200)
            #expect(response.text == "ok\n")
        }
    }

    @Test func unknownPathGetsTheContractsJSONError() throws {
        try withHost { client in
            let response = try client.send("GET", "/v1/nothing-here")
            #expect(response.status == 404)
            #expect(response.headers["content-type"] == "application/json")
            let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
            #expect(body?["error"] == "not found")
            #expect(body?["detail"]?.contains("/v1/nothing-here") == true)
        }
    }

    @Test func oversizedBodyIsRefusedWith413AndTheServerGoesOn() throws {
        try withHost({ $0.http.maxBodyBytes = 4096 }) { client in
            let response = try client.send("POST", "/v1/echo", headers: ["Content-Type": "application/sdp"],
                                           body: [UInt8](repeating: 0x61, count: 100_000))
            #expect(response.status == 413)
            #expect(response.text.contains("4096"))
            #expect(try client.send("GET", "/healthz").status == 200)
        }
    }

    @Test func corsPreflightExposesLocation() throws {
        try withHost { client in
            let response = try client.send("OPTIONS", "/v1/rooms/r/participants", headers: [
                "Origin": "http://example.test", "Access-Control-Request-Method": "POST",
            ])
            #expect(response.status == 204)
            #expect(response.headers["access-control-allow-origin"] == "*")
            #expect(response.headers["access-control-expose-headers"]?.contains("Location") == true)
        }
    }

    @Test func aSecondHostOnTheSamePortFailsWithAClearError() throws {
        try withHost { client in
            var config = HostConfig()
            config.http.listen = "127.0.0.1:\(client.port)"
            config.media.listen = "127.0.0.1:0"
            #expect(throws: HTTPServer.StartError.self) { try ConferenceHost(config: config, logSink: HostLog.discard) }
        }
    }

    @Test func garbageRequestLineDoesNotStopTheServer() throws {
        try withHost { (client: HTTPTestClient) throws in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = client.port.bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            let garbage: [UInt8] = [0x00, 0xFF, 0x13, 0x37] + Array("\r\n\r\nGET\r\n\r\n".utf8)
            _ = garbage.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            close(fd)
            #expect(try client.send("GET", "/healthz").status == 200)
        }
    }
}

@Suite struct MetricsTests {
    /// A socket connected from `source` (another loopback address) to the server.
    private func connection(from source: UInt32, to port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in(), remote = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = source.bigEndian
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Slow clients (slowloris: a request line and then a byte now and then, from 127.0.0.2) and
    /// many idle ones (from 127.0.0.3) take at most their address's share of the connections:
    /// with a limit of 48 in all and 16 per address, 40 slow ones and 200 idle ones leave a
    /// client from 127.0.0.1 answered at once, and the server keeps working.
    @Test func slowAndIdleClientsDoNotLockOutOthers() throws {
        let server = try HTTPServer(listen: TransportAddress(ipv4: 127, 0, 0, 1, port: 0), maxBodyBytes: 1024, connectionLimit: 48,
                                    connectionsPerAddress: 16) { request in .text(200, "ok \(request.path)") }
        defer { server.stop() }
        let port = server.address.port
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<40 {
            guard let fd = connection(from: 0x7F00_0002, to: port) else { continue }
            _ = "POST /v1/rooms/r/participants HTTP/1.1\r\nHost: x\r\nX-Slow: ".withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            held.append(fd)
        }
        for _ in 0..<200 {
            if let fd = connection(from: 0x7F00_0003, to: port) { held.append(fd) }
        }
        // The slow ones keep trickling while a client from elsewhere asks, several times.
        for round in 0..<5 {
            for fd in held.prefix(40) { _ = "a".withCString { send(fd, $0, 1, Int32(MSG_NOSIGNAL)) } }
            let response = try HTTPTestClient(port: port).send("GET", "/round/\(round)")
            #expect(response.status == 200 && response.text == "ok /round/\(round)")
        }
    }

    @Test func metricsAreInPrometheusTextFormat() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let response = try HTTPTestClient(port: host.http.address.port).send("GET", "/metrics")
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/plain") == true)
        let samples = response.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(samples.contains("tessera_rooms 0"))
        #expect(samples.contains("tessera_participants 0"))
        // Every sample line is `name{labels} value` with a number.
        #expect(samples.allSatisfy { line in line.split(separator: " ").last.flatMap { Double($0) } != nil })
    }
}

/// `Range` headers as a recording's download reads them (RFC 9110 §14.1.2).
@Suite struct ByteRangeTests {
    @Test func oneRangeIsServedAndTheRestWhole() {
        #expect(HostAPI.byteRange(nil, size: 1000) == .whole)
        #expect(HostAPI.byteRange("bytes=0-99", size: 1000) == .part(first: 0, last: 99))
        #expect(HostAPI.byteRange("bytes=900-", size: 1000) == .part(first: 900, last: 999))
        #expect(HostAPI.byteRange("bytes=900-5000", size: 1000) == .part(first: 900, last: 999))
        #expect(HostAPI.byteRange("bytes=-100", size: 1000) == .part(first: 900, last: 999))
        #expect(HostAPI.byteRange("bytes=-5000", size: 1000) == .part(first: 0, last: 999))
        #expect(HostAPI.byteRange("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(HostAPI.byteRange("bytes=-0", size: 1000) == .unsatisfiable)
        #expect(HostAPI.byteRange("bytes=0-0", size: 0) == .unsatisfiable)
        for ignored in ["bytes=0-1,5-6", "items=0-5", "bytes=abc", "bytes=5-2", "bytes=", "bytes=-", "bytes=99999999999999999999-"] {
            #expect(HostAPI.byteRange(ignored, size: 1000) == .whole, "\(ignored)")
        }
    }
}
