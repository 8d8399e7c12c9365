import SDP
import Testing
import WireTesting

/// Chrome's simulcast offer (three layers by rid, RFC 8853) is answered with the layers received,
/// and the negotiation says which rids the peer sends; what is not a valid simulcast offer is
/// answered as one stream; hostile rid and simulcast text never traps.
@Suite struct SimulcastTests {
    /// The captured Chromium offer with its camera sent in three layers, as Chrome writes them
    /// for `addTransceiver(track, {sendEncodings: [{rid: "q"}, {rid: "h"}, {rid: "f"}]})`.
    static func simulcastOffer(_ lines: [String] = ["a=rid:q send", "a=rid:h send", "a=rid:f send", "a=simulcast:send q;h;f"]) throws -> SessionDescription {
        let text = try Fixture.text(Fixture.offerFile("chromium"))
        let marker = "a=rtcp-rsize\r\na=rtcp-xr:rcvr-rtt=all\r\na=rtpmap:96 VP8/90000"
        #expect(text.contains(marker))
        let withLayers = text.replacingOccurrences(of: marker, with: lines.map { $0 + "\r\n" }.joined() + marker)
        return try SessionDescription(parsing: Array(withLayers.utf8))
    }

    @Test func chromeLayersAreAnsweredAndNamed() throws {
        let offer = try Self.simulcastOffer()
        let negotiated = try negotiate(offer: offer, host: Fixture.host(for: offer))
        let video = try #require(negotiated.media.first { $0.kind == .video })
        #expect(video.peerRIDs == ["q", "h", "f"])
        let answer = negotiated.answer.serialized()
        let section = answer.components(separatedBy: "m=video").last ?? ""
        #expect(section.contains("a=rid:q recv\r\na=rid:h recv\r\na=rid:f recv\r\na=simulcast:recv q;h;f\r\n"))
        #expect(section.contains("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        #expect(section.contains("a=extmap:11 urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"))
        // The audio section has no layers.
        #expect(negotiated.media.first { $0.kind == .audio }?.peerRIDs == [])
    }

    /// A host that does not take simulcast (the echo) answers the same offer as one stream.
    @Test func aHostWithoutSimulcastAnswersOneStream() throws {
        let offer = try Self.simulcastOffer()
        var host = Fixture.host(for: offer)
        host.receivesSimulcast = false
        let negotiated = try negotiate(offer: offer, host: host)
        #expect(negotiated.media.allSatisfy { $0.peerRIDs.isEmpty })
        #expect(!negotiated.answer.serialized().contains("a=simulcast"))
    }

    @Test func withoutSimulcastTheRidExtensionsAreNotTaken() throws {
        let offer = try Fixture.offer("chromium")
        let answer = try negotiate(offer: offer, host: Fixture.host(for: offer)).answer.serialized()
        #expect(!answer.contains("rtp-stream-id"))
        #expect(!answer.contains("a=simulcast"))
    }

    /// Alternatives (`,`) take the first; paused layers (`~`) are received too.
    @Test func alternativesAndPausedLayers() throws {
        let offer = try Self.simulcastOffer(["a=rid:a send", "a=rid:b send", "a=rid:c send", "a=simulcast:send a,b;~c"])
        let video = try #require(try negotiate(offer: offer, host: Fixture.host(for: offer)).media.first { $0.kind == .video })
        #expect(video.peerRIDs == ["a", "c"])
    }

    /// Offers that are not a simulcast the host can take are answered as one stream.
    @Test(arguments: [
        ["a=rid:q send", "a=simulcast:send q;h"],                            // h has no a=rid
        ["a=rid:q recv", "a=rid:h recv", "a=simulcast:send q;h"],            // rids not sent
        ["a=rid:q send", "a=rid:h send", "a=simulcast:send q;h;"],           // empty layer
        ["a=rid:q send", "a=rid:h send", "a=simulcast:send q;q"],            // the same rid twice
        ["a=rid:q send", "a=rid:h send", "a=simulcast:recv q;h"],            // nothing sent
        ["a=rid:q send", "a=rid:h send", "a=simulcast:send q;h send q"],     // send twice
        ["a=rid:q send", "a=rid:h send", "a=simulcast:send q/h"],            // not a rid
        ["a=rid:q send", "a=simulcast:send q"],                              // one layer is one stream
    ])
    func invalidSimulcastIsOneStream(lines: [String]) throws {
        let offer = try Self.simulcastOffer(lines)
        let negotiated = try negotiate(offer: offer, host: Fixture.host(for: offer))
        #expect(negotiated.media.first { $0.kind == .video }?.peerRIDs == [])
        #expect(!negotiated.answer.serialized().contains("a=simulcast"))
    }

    @Test func attributesReadAndWriteBack() throws {
        let rid = try #require(RIDAttribute(attributeValue: "h send pt=96;max-width=640"))
        #expect(rid.id == "h" && rid.direction == .send && rid.parameters == "pt=96;max-width=640")
        #expect(rid.attributeValue == "h send pt=96;max-width=640")
        let simulcast = try #require(SimulcastAttribute(attributeValue: "send q;~h,x;f recv r"))
        #expect(simulcast.send.map { $0.map(\.rid) } == [["q"], ["h", "x"], ["f"]])
        #expect(simulcast.send[1][0].paused && !simulcast.send[1][1].paused)
        #expect(simulcast.receive.map { $0.map(\.rid) } == [["r"]])
        #expect(simulcast.attributeValue == "send q;~h,x;f recv r")
        #expect(SimulcastAttribute(attributeValue: "send " + Array(repeating: "a", count: 9).joined(separator: ";")) == nil, "too many layers")
    }

    /// Seeded mutations and every truncation of the two attributes' text never trap; what is
    /// read writes back to text that reads the same.
    @Test func hostileTextNeverTraps() {
        var mutator = Mutator(seed: 0x51A)
        for original in ["q send pt=96;max-width=320", "send q;h;f recv ~a,b", "send q;~h,x;f"] {
            let bytes = Array(original.utf8)
            for input in Mutator.truncations(of: bytes) + (0..<3_000).map({ _ in mutator.mutate(bytes) }) {
                let text = String(decoding: input, as: UTF8.self)
                if let rid = RIDAttribute(attributeValue: text) { #expect(RIDAttribute(attributeValue: rid.attributeValue) == rid) }
                if let simulcast = SimulcastAttribute(attributeValue: text) {
                    #expect(SimulcastAttribute(attributeValue: simulcast.attributeValue) == simulcast)
                }
            }
        }
    }
}
