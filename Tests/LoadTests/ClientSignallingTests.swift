import Client
import Foundation
import SDP
import Testing
import Transport
import Wire
import WireTesting
@testable import Load

@Suite struct ClientSignallingTests {
    /// A host answer captured for the SDP tests (Tests/SDPTests/Fixtures).
    static func hostAnswer() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/aiortc-answer.sdp")
        return Array(try Data(contentsOf: url))
    }

    @Test func theOfferCarriesWhatTheHostNeeds() throws {
        let certificate = try DTLSCertificate(commonName: "offer-test")
        let offer = ClientOffer(ice: ICECredentials(ufrag: "abcd", password: "0123456789012345678901"), fingerprint: certificate.fingerprint,
                                cname: "load-1", sections: [.opus(mid: "0", ssrc: 11), .vp8(mid: "1", ssrc: 22, direction: .recvonly)])
        let parsed = try SessionDescription(parsing: offer.description.serializedBytes())
        #expect(parsed.media.map(\.mid) == ["0", "1"])
        #expect(parsed.media[0].iceUsernameFragment == "abcd")
        #expect(parsed.media[1].direction == .recvonly)
        #expect(parsed.media[1].ssrcAttributes.first?.ssrc == 22)
        // The audio level (RFC 6464) is offered on audio only, as browsers offer it.
        #expect(parsed.media[0].extensionMaps.map(\.uri).contains("urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(!parsed.media[1].extensionMaps.map(\.uri).contains("urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        let withoutLevels = ClientOffer(ice: offer.ice, fingerprint: offer.fingerprint, cname: "load-1", sections: offer.sections,
                                        offersAudioLevel: false)
        let parsedWithout = try SessionDescription(parsing: withoutLevels.description.serializedBytes())
        #expect(!parsedWithout.media[0].extensionMaps.map(\.uri).contains("urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
    }

    @Test func theHostsAnswerIsRead() throws {
        let answer = try ClientAnswer(contentType: "application/sdp", location: "/v1/rooms/r/participants/p1", body: Self.hostAnswer())
        #expect(answer.hostICE.ufrag == "TsrA")
        #expect(answer.candidate == TransportAddress(ipv4: 127, 0, 0, 1, port: 50000))
        #expect(answer.hostSSRCs == ["0": 1_111_111_111, "1": 2_222_222_222])
        #expect(answer.midExtensionID == 1)
        #expect(answer.audioLevelExtensionID == 2)
        #expect(answer.setup == .passive)
        // The host asks for Opus DTX (RFC 7587 §6.1); an answer without `usedtx=1` does not.
        #expect(answer.opusDTX)
        let text = String(decoding: try Self.hostAnswer(), as: UTF8.self)
        for fmtp in ["minptime=10;useinbandfec=1", "minptime=10;useinbandfec=1;usedtx=0"] {
            let body = Array(text.replacingOccurrences(of: "minptime=10;useinbandfec=1;usedtx=1", with: fmtp).utf8)
            #expect(try !ClientAnswer(contentType: "application/sdp", location: "/x", body: body).opusDTX, "\(fmtp)")
        }
    }

    @Test func anAnswerWithoutWhatTheClientNeedsIsRefusedByName() throws {
        let body = try Self.hostAnswer()
        #expect(throws: ClientAnswer.Failure.self) { try ClientAnswer(contentType: "text/plain", location: "/x", body: body) }
        #expect(throws: ClientAnswer.Failure.self) { try ClientAnswer(contentType: "application/sdp", location: nil, body: body) }
        let text = String(decoding: body, as: UTF8.self)
        let noCandidates = text.components(separatedBy: "\r\n").filter { !$0.hasPrefix("a=candidate") }.joined(separator: "\r\n")
        do {
            _ = try ClientAnswer(contentType: "application/sdp", location: "/x", body: Array(noCandidates.utf8))
            Issue.record("an answer without candidates was accepted")
        } catch {
            #expect(error.description.contains("candidate"))
        }
    }

    /// Mutated and truncated answers: read or refused, never a trap.
    @Test func mutatedAnswersAreReadOrRefused() throws {
        let body = try Self.hostAnswer()
        var mutator = Mutator(seed: 0xA115)
        var refused = 0
        for _ in 0..<3000 {
            do { _ = try ClientAnswer(contentType: "application/sdp", location: "/x", body: mutator.mutate(body)) } catch { refused += 1 }
        }
        for truncated in Mutator.truncations(of: body) {
            _ = try? ClientAnswer(contentType: "application/sdp", location: "/x", body: truncated)
        }
        #expect(refused > 0)
    }
}
