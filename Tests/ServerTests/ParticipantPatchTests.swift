import Sockets
import Foundation
import Testing
@testable import Server

@Suite struct ParticipantPatchTests {
    @Test func hearAndMutedAreAppliedAndAnswered() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let client = HTTPTestClient(port: host.http.address.port)
        let offer = try Array(Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/aiortc-offer.sdp")))
        let joined = try client.send("POST", "/v1/rooms/r1/participants?identity=alice", headers: ["Content-Type": "application/sdp"], body: offer)
        let location = try #require(joined.headers["location"])
        let json = ["Content-Type": "application/json"]

        let patched = try client.send("PATCH", location, headers: json, body: Array(#"{"hear": {"bob": false}, "muted": {"audio": true}}"#.utf8))
        #expect(patched.status == 200)
        let body = try JSONSerialization.jsonObject(with: Data(patched.body)) as? [String: Any]
        #expect(body?["notHeard"] as? [String] == ["bob"])
        #expect((body?["muted"] as? [String: Bool])?["audio"] == true)

        let undone = try client.send("PATCH", location, headers: json, body: Array(#"{"hear": {"bob": true}, "muted": {"audio": false}}"#.utf8))
        let after = try JSONSerialization.jsonObject(with: Data(undone.body)) as? [String: Any]
        #expect(after?["notHeard"] as? [String] == [])
        #expect((after?["muted"] as? [String: Bool])?["audio"] == false)

        #expect(try client.send("PATCH", location, headers: json, body: Array("{not json".utf8)).status == 400)
        #expect(try client.send("PATCH", location, headers: json, body: Array(#"{"hear": {"b b": false}}"#.utf8)).status == 400)
        #expect(try client.send("PATCH", "/v1/rooms/r1/participants/nobody", headers: json, body: Array("{}".utf8)).status == 404)
    }
}
