import Sockets
import Foundation
import Testing
@testable import Server

/// `GET /v1/rooms/{room}/events` read as a browser's EventSource would: one open response.
@Suite struct RoomEventsTests {
    /// Opens the stream and returns the socket, after the response head and the hello event.
    private func openStream(port: UInt16, room: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let request = Array("GET /v1/rooms/\(room)/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        _ = try readUntil(fd, contains: "event: hello")
        return fd
    }

    /// Reads until the text seen so far contains `marker` (bounded by the socket's 5 s timeout).
    private func readUntil(_ fd: Int32, contains marker: String) throws -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<100 where !text.contains(marker) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            text += String(decoding: buffer[..<count], as: UTF8.self)
        }
        return text
    }

    @Test func joiningAndLeavingAreToldToTheRoomsListeners() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let port = host.http.address.port
        let stream = try openStream(port: port, room: "r1")
        defer { close(stream) }

        let offer = try Array(Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/aiortc-offer.sdp")))
        let client = HTTPTestClient(port: port)
        let joined = try client.send("POST", "/v1/rooms/r1/participants?identity=alice", headers: ["Content-Type": "application/sdp"], body: offer)
        #expect(joined.status == 201)
        let seen = try readUntil(stream, contains: "event: joined")
        #expect(seen.contains(#""identity":"alice""#))

        let location = try #require(joined.headers["location"])
        #expect(try client.send("DELETE", location).status == 204)
        let after = try readUntil(stream, contains: "event: left")
        #expect(after.contains(#""reason":"left""#))
    }
}
