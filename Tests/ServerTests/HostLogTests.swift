import Foundation
import Synchronization
import Testing
@testable import Server

/// The host's log (`HostLog`): what each format writes, which levels pass, and what a running
/// host writes for a participant that joins and leaves.
@Suite struct HostLogTests {
    /// Lines a log wrote, in order.
    final class Captured: Sendable {
        private let lines = Mutex<[String]>([])
        var sink: HostLog.Sink { { line in self.lines.withLock { $0.append(line) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// 2026-12-03T10:15:02.123Z.
    static let instant = Date(timeIntervalSince1970: 1_796_292_902.123)

    private func objects(_ lines: [String]) throws -> [[String: Any]] {
        try lines.map { line in
            try #require(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one line: \(line)")
            return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "an object: \(line)")
        }
    }

    @Test func aJSONLineIsOneObjectWithTimeLevelEventAndItsFields() throws {
        let captured = Captured()
        let log = HostLog(format: .json, level: .info, now: { Self.instant }, sink: captured.sink)
        log.info("joined", room: "lobby", participant: "alice", ["id": "p-1", "reason": nil])
        let lines = captured.all
        #expect(lines == [#"{"time":"2026-12-03T10:15:02.123Z","level":"info","event":"joined","room":"lobby","participant":"alice","id":"p-1"}"# + "\n"])
        let object = try #require(try objects(lines).first)
        #expect(object["time"] as? String == "2026-12-03T10:15:02.123Z" && object["level"] as? String == "info")
        #expect(object["event"] as? String == "joined" && object["room"] as? String == "lobby" && object["participant"] as? String == "alice")
        #expect(object["reason"] == nil, "a nil field is left out")
    }

    /// Quotes, backslashes, newlines and every other control character in a value (an error's
    /// description, a file name) are escaped: the line stays one line and parses back to the value.
    @Test func jsonValuesAreEscapedAndParseBackToThemselves() throws {
        let captured = Captured()
        let log = HostLog(format: .json, now: { Self.instant }, sink: captured.sink)
        let controls = String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init) + ["\u{7F}", "\u{85}", "\u{2028}", "\u{2029}"]))
        let values = [#"say "hi""#, "two\nlines\r\n", #"back\slash \"#, "tab\there", controls, "naïve 日本 🎥", "", "{\"k\":1}"]
        for value in values { log.warning("recordingFailed", room: "r", ["reason": value, "file": "a\"b.webm"]) }
        let parsed = try objects(captured.all)
        #expect(parsed.count == values.count)
        for (object, value) in zip(parsed, values) {
            #expect(object["reason"] as? String == value)
            #expect(object["file"] as? String == "a\"b.webm")
            #expect(object["level"] as? String == "warning")
        }
    }

    @Test func aTextLineIsReadableAndQuotesWhatWouldBreakIt() {
        let captured = Captured()
        let log = HostLog(format: .text, now: { Self.instant }, sink: captured.sink)
        log.info("left", room: "lobby", participant: "alice", ["id": "p-1", "reason": "consent lost"])
        log.error("startFailed", ["component": "vp8-encoder", "reason": "line one\nx=1 \"forged\""])
        log.info("started", ["announce": "", "auth": "a=b"])
        #expect(captured.all == [
            #"2026-12-03T10:15:02.123Z info left room=lobby participant=alice id=p-1 reason="consent lost""# + "\n",
            #"2026-12-03T10:15:02.123Z error startFailed component=vp8-encoder reason="line one\nx=1 \"forged\"""# + "\n",
            #"2026-12-03T10:15:02.123Z info started announce="" auth="a=b""# + "\n",
        ])
    }

    @Test func debugLinesAreWrittenOnlyAtDebug() {
        for level in [HostLog.Level.info, .debug] {
            let captured = Captured()
            let log = HostLog(format: .text, level: level, sink: captured.sink)
            log.debug("layoutChanged", room: "r")
            log.info("joined", room: "r", participant: "a")
            log.warning("recordingFailed", room: "r")
            log.error("startFailed")
            let events = captured.all.map { $0.dropLast().split(separator: " ")[2] }
            #expect(events == (level == .debug ? ["layoutChanged", "joined", "recordingFailed", "startFailed"] : ["joined", "recordingFailed", "startFailed"]))
            #expect(log.isEnabled(.debug) == (level == .debug))
        }
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_796_292_902.123, "2026-12-03T10:15:02.123Z"),
        (951_868_799.998, "2000-02-29T23:59:59.998Z"),
        (951_868_799.9996, "2000-03-01T00:00:00.000Z"),
        (4_102_444_800.5, "2100-01-01T00:00:00.500Z"),
    ])
    func timestampsAreUTCToTheMillisecond(seconds: Double, text: String) {
        #expect(HostLog.timestamp(Date(timeIntervalSince1970: seconds)) == text)
    }

    /// A host started with `"log": {"format": "json"}` writes, for a participant that joins and
    /// leaves by DELETE: started, roomOpened, joined, left, roomClosed, and on stop, stopping
    /// and stopped; at info, none of the room's debug events (its layout changes).
    @Test func aHostWithJSONLogsWritesAJoinedLineForAParticipant() throws {
        var config = try HostConfig.decode(fileContents: Array(#"""
            {"http": {"listen": "127.0.0.1:0"}, "media": {"listen": "127.0.0.1:0"}, "log": {"format": "json"}}
            """#.utf8))
        config.media.tcpListen = "off"
        let captured = Captured()
        let host = try ConferenceHost(config: config, logSink: captured.sink)
        var stopped = false
        defer { if !stopped { host.stop() } }
        let client = HTTPTestClient(port: host.http.address.port)
        let offer = try Array(Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/aiortc-offer.sdp")))
        let joined = try client.send("POST", "/v1/rooms/lobby/participants?identity=alice", headers: ["Content-Type": "application/sdp"], body: offer)
        #expect(joined.status == 201)
        let location = try #require(joined.headers["location"])
        let id = String(location.split(separator: "/").last ?? "")
        #expect(try client.send("DELETE", location).status == 204)
        host.stop()
        stopped = true

        let lines = try objects(captured.all)
        let events = lines.compactMap { $0["event"] as? String }
        #expect(events == ["started", "roomOpened", "joined", "left", "roomClosed", "stopping", "stopped"], "\(captured.all)")
        let join = try #require(lines.first { $0["event"] as? String == "joined" })
        #expect(join["room"] as? String == "lobby" && join["participant"] as? String == "alice" && join["id"] as? String == id)
        #expect(join["level"] as? String == "info" && (join["time"] as? String)?.hasSuffix("Z") == true)
        let leave = try #require(lines.first { $0["event"] as? String == "left" })
        #expect(leave["reason"] as? String == "left" && leave["participant"] as? String == "alice")
        let started = try #require(lines.first)
        #expect(started["http"] as? String == "http://127.0.0.1:\(host.http.address.port)")
        #expect(started["mediaTCP"] as? String == "off" && started["auth"] as? String == "off")
    }
}
