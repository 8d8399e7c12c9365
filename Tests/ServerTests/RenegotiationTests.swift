import Client
import Foundation
import Load
import SDP
import Sockets
import Testing
import Transport
import Wire
@testable import Server

/// `PATCH …/participants/{pid}` with an SDP offer, over loopback against a real host.
@Suite struct RenegotiationTests {
    private func host() throws -> ConferenceHost {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        return try ConferenceHost(config: config, logSink: HostLog.discard)
    }

    private func patch(_ client: EchoLoopbackClient, _ location: String, _ offer: SessionDescription) throws -> HTTPTestClient.Response {
        try client.http.send("PATCH", location, headers: ["Content-Type": "application/sdp"], body: offer.serializedBytes())
    }

    /// An offer with new ICE credentials restarts ICE: the answer has new ones, the client's
    /// checks with them succeed, its mix goes on, and the old ufrag names nobody any more.
    @Test func newICECredentialsRestartICEAndTheMixGoesOn() throws {
        let host = try host()
        defer { host.stop() }
        let client = try EchoLoopbackClient(httpPort: host.http.address.port, name: "a")
        try client.connect(timeout: .seconds(3), path: "/v1/rooms/renegotiate/participants?identity=a")
        let first = try #require(client.answer)
        let restartedICE = ICECredentials.random()
        let reoffer = ClientOffer(ice: restartedICE, fingerprint: client.certificate.fingerprint, setup: .actpass, cname: client.cname,
                                  sections: client.sections).description
        let response = try patch(client, first.location, reoffer)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == "application/sdp")
        let answer = try ClientAnswer(contentType: "application/sdp", location: first.location, body: response.body)
        #expect(answer.hostICE != first.hostICE, "an ICE restart answers with new credentials")
        #expect(answer.hostSSRCs == first.hostSSRCs, "the host's streams stay the same")
        #expect(answer.description.origin.sessionID == first.description.origin.sessionID)

        let transport = try #require(client.transport)
        transport.restartICE(local: restartedICE, remote: answer.hostICE, now: client.clock.now())
        let before = client.echoes.count
        let checked = client.pump(until: client.clock.now() + .seconds(3)) { transport.remoteAddress != nil && client.echoes.count > before + 25 }
        #expect(checked, "the restarted checks succeeded (\(transport.remoteAddress.map { "\($0)" } ?? "no answer")) and the mix went on (\(client.echoes.count - before) packets)")
        #expect(transport.failure == nil)

        // A check with the old credentials, from elsewhere, names nobody now.
        let stranger = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        var old = ICEControllingAgent(local: client.ice, remote: first.hostICE, remoteAddress: first.candidate, tieBreaker: 3, now: client.clock.now())
        let polled = old.pollCheck(now: client.clock.now())
        let check = try #require(polled)
        stranger.send([(check, first.candidate)])
        var unroutable = 0
        for _ in 0..<200 where unroutable < 1 {
            let metrics = try client.http.send("GET", "/metrics").text
            unroutable = metrics.split(separator: "\n").first { $0.hasPrefix("tessera_datagrams_unroutable_total ") }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            if unroutable < 1 { usleep(5_000) }  // bounded: at most 200 short waits
        }
        #expect(unroutable == 1)
        #expect(try client.delete() == 204)
    }

    /// An offer with the session's m-lines and `extra` after them, the mids in `stopped` at
    /// port 0 and out of the BUNDLE group (a browser's stopped transceivers).
    private func offer(_ client: EchoLoopbackClient, extra: [ClientOffer.Section] = [], stopped: Set<String> = [],
                       fingerprint: CertificateFingerprint? = nil) -> SessionDescription {
        var description = ClientOffer(ice: client.ice, fingerprint: fingerprint ?? client.certificate.fingerprint, setup: .actpass,
                                      cname: client.cname, sections: client.sections + extra).description
        for index in description.media.indices where stopped.contains(description.media[index].mid ?? "") {
            description.media[index].port = 0
        }
        description.attributes = description.attributes.map { attribute in
            guard case .group(let group) = attribute.typed else { return attribute }
            return .group(MediaGroup(semantics: group.semantics, mids: group.mids.filter { !stopped.contains($0) }))
        }
        return description
    }

    /// M-lines added after the session's are answered and the host's streams on the others keep
    /// their SSRCs; a stopped m-line is answered stopped (port 0) and the mix goes on; an offer
    /// that drops an m-line or changes a live one, or brings another certificate, is refused
    /// with 409 and a reason, and the session goes on; unreadable SDP is 400.
    @Test func mLinesAreAddedAndStoppedAndWhatJSEPForbidsIsRefused() throws {
        let host = try host()
        defer { host.stop() }
        let client = try EchoLoopbackClient(httpPort: host.http.address.port, name: "b")
        try client.connect(timeout: .seconds(3), path: "/v1/rooms/renegotiate/participants?identity=b")
        let first = try #require(client.answer)
        let location = first.location

        let added = try patch(client, location, offer(client, extra: [.vp8(mid: "2", ssrc: 77, direction: .recvonly)]))
        #expect(added.status == 200, "\(added.text)")
        let withScreen = try SessionDescription(parsing: added.body)
        #expect(withScreen.media.map(\.mid) == ["0", "1", "2"])
        #expect(withScreen.media.map(\.port).allSatisfy { $0 != 0 }, "every m-line is accepted")
        #expect(withScreen.media[2].direction == .sendonly, "a receive-only video m-line is where a subscription can go")
        let addedAnswer = try ClientAnswer(contentType: "application/sdp", location: location, body: added.body)
        #expect(addedAnswer.hostSSRCs.filter { $0.key != "2" } == first.hostSSRCs, "the host's mix and composite keep their SSRCs")
        #expect(addedAnswer.hostSSRCs["2"] != nil, "the new m-line has a stream of its own")
        #expect(Int(withScreen.origin.sessionVersion) == (Int(first.description.origin.sessionVersion) ?? 0) + 1)

        let stopped = try patch(client, location, offer(client, extra: [.vp8(mid: "2", ssrc: 77, direction: .recvonly)], stopped: ["2"]))
        #expect(stopped.status == 200, "\(stopped.text)")
        #expect(try SessionDescription(parsing: stopped.body).media.map(\.port).last == 0, "a stopped m-line is answered stopped")

        let dropped = try patch(client, location, offer(client))
        #expect(dropped.status == 409 && dropped.text.contains("m-lines removed"), "\(dropped.text)")
        var renamed = offer(client, extra: [.vp8(mid: "2", ssrc: 77, direction: .recvonly)], stopped: ["2"])
        renamed.media[1].attributes = renamed.media[1].attributes.map { $0.name == "mid" ? .mid("x") : $0 }
        let changed = try patch(client, location, renamed)
        #expect(changed.status == 409 && changed.text.contains("m-lines changed"), "\(changed.text)")
        let recertified = try patch(client, location, offer(client, extra: [.vp8(mid: "2", ssrc: 77, direction: .recvonly)], stopped: ["2"],
                                                            fingerprint: try DTLSCertificate().fingerprint))
        #expect(recertified.status == 409 && recertified.text.contains("certificate"), "\(recertified.text)")
        let garbage = try client.http.send("PATCH", location, headers: ["Content-Type": "application/sdp"], body: Array("v=0\r\nnonsense".utf8))
        #expect(garbage.status == 400)

        // The session as it stands, offered again: no ICE restart, the same credentials answered.
        let same = try patch(client, location, offer(client, extra: [.vp8(mid: "2", ssrc: 77, direction: .recvonly)], stopped: ["2"]))
        #expect(same.status == 200)
        let answer = try ClientAnswer(contentType: "application/sdp", location: location, body: same.body)
        #expect(answer.hostICE == first.hostICE)
        let before = client.echoes.count
        #expect(client.pump(until: client.clock.now() + .seconds(2)) { client.echoes.count > before + 25 }, "the session goes on")
        #expect(try client.delete() == 204)
    }
}
