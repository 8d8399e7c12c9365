import SDP
import Testing
import WireTesting

/// The kind of error parsing `text` throws, or nil if it parses.
func parseErrorKind(_ bytes: [UInt8]) -> SDPError.Kind? {
    errorKind { () throws(SDPError) in _ = try SessionDescription(parsing: bytes) }
}

/// The kind of error parsing `text` throws, or nil if it parses.
func parseErrorKind(_ text: String) -> SDPError.Kind? { parseErrorKind(Array(text.utf8)) }

/// A minimal valid offer head; append media sections to it.
let minimalHead = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"

@Suite struct HostileInputTests {
    @Test func emptyInputOrNoVersionLineIsRefused() {
        #expect(parseErrorKind("") == .missingVersion)
        #expect(parseErrorKind("\r\n\r\n") == .missingVersion)
        #expect(parseErrorKind("o=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n") == .missingVersion)
        #expect(parseErrorKind("v=1\r\n") == .unsupportedVersion)
        #expect(parseErrorKind("v=0\r\n") == .missingField)
    }

    @Test func binaryGarbageIsRefusedWithATypedError() {
        var generator = SeededGenerator(seed: 7)
        for length in [1, 2, 3, 17, 512, 4096, 60_000] {
            let garbage = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(parseErrorKind(garbage) != nil)
        }
        #expect(parseErrorKind([0x76, 0x3D, 0x30, 0x0D, 0x0A, 0xC3, 0x28]) == .invalidUTF8)
        #expect(parseErrorKind([0x76, 0x3D, 0x30, 0x0D, 0x0A, 0x28]) == .malformedLine)
        #expect(parseErrorKind(Array((minimalHead + "a=x:").utf8) + [0xC3, 0x28]) == .invalidUTF8)
        #expect(parseErrorKind(minimalHead + "a=x:\u{0}") == .invalidCharacter)
        #expect(parseErrorKind(minimalHead + "a=x:1\ra=y") == .invalidCharacter)
        #expect(parseErrorKind(minimalHead + "x=unknown") == .unknownLineType)
        #expect(parseErrorKind(minimalHead + "A=upper") == .malformedLine)
    }

    @Test func oversizedInputIsRefusedBeforeParsing() {
        let megabyte = minimalHead + String(repeating: "a=x-padding:0123456789abcdef0123456789abcdef\r\n", count: 22_000)
        #expect(megabyte.utf8.count > 1_000_000)
        let error = try? #require(throws: SDPError.self) { try SessionDescription(parsing: megabyte) }
        #expect(error?.kind == .inputTooLarge)
        #expect(error?.line == nil)
        #expect(parseErrorKind(minimalHead + "a=long:" + String(repeating: "x", count: 5000)) == .lineTooLong)
        #expect(parseErrorKind(minimalHead + String(repeating: "x", count: 10_000)) == .lineTooLong)
    }

    @Test func tenThousandMediaSectionsAreRefused() {
        let section = "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\n"
        #expect(parseErrorKind(minimalHead + String(repeating: section, count: 10_000)) == .inputTooLarge)
        // Under the byte limit, the section limit refuses them.
        #expect(parseErrorKind(minimalHead + String(repeating: section, count: 33)) == .tooManyMediaSections)
        #expect(parseErrorKind(minimalHead + String(repeating: section, count: 32)) == nil)
        #expect(parseErrorKind(minimalHead + String(repeating: "a=x\r\n", count: 2000)) == .tooManyAttributes)
    }

    @Test func badPayloadTypesAndPortsAreRefused() {
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:999 opus/48000/2\r\n") == .badPayloadType)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:x opus/48000/2\r\n") == .badPayloadType)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus\r\n") == .badAttribute)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 128\r\n") == .badPayloadType)
        #expect(parseErrorKind(minimalHead + "m=audio 70000 UDP/TLS/RTP/SAVPF 0\r\n") == .badPort)
        #expect(parseErrorKind(minimalHead + "m=audio -1 UDP/TLS/RTP/SAVPF 0\r\n") == .badPort)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP//SAVPF 0\r\n") == .badProtocol)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF\r\n") == .badMediaLine)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=rtcp-fb:200 nack\r\n") == .badPayloadType)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=extmap:0 urn:x\r\n") == .badAttribute)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=sendrecv:yes\r\n") == .badAttribute)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=candidate:1 1 udp 1 1.2.3.4 9 host\r\n") == .badCandidate)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=ice-ufrag:ab\r\n") == .badICECredential)
        #expect(parseErrorKind(minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\no=- 1 1 IN IP4 0.0.0.0\r\n") == .duplicateField)
        #expect(parseErrorKind("v=0\r\no=- x 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n") == .badOrigin)
    }

    @Test func errorsNameTheirLine() {
        let error = try? #require(throws: SDPError.self) {
            try SessionDescription(parsing: minimalHead + "m=audio 9 UDP/TLS/RTP/SAVPF 0\r\na=rtpmap:999 x/1\r\n")
        }
        #expect(error?.line == 6)
        #expect(error?.description.contains("line 6") == true)
    }

    @Test func fingerprintWithBadHexIsRefused() throws {
        let text = try Fixture.text("chromium-offer.sdp")
        for bad in ["87:3C:ZZ", "873CB3", "87:3C:B3:", "87-3C-B3-DF", "87:3C:B3:DF:D9:74:9D:1B"] {
            let broken = text.replacingOccurrences(
                of: "87:3C:B3:DF:D9:74:9D:1B:4F:9C:B3:BB:B4:25:62:99:E8:03:38:0D:F9:A9:C4:FC:A1:9B:BC:2A:D0:57:38:80", with: bad)
            #expect(parseErrorKind(broken) == .badFingerprint, "\(bad)")
        }
    }

    @Test func offerWithoutFingerprintOrCredentialsIsRefused() throws {
        let firefox = try Fixture.text("firefox-offer.sdp")
        let noFingerprint = try SessionDescription(parsing: lines(firefox).filter { !$0.hasPrefix("a=fingerprint") }.joined(separator: "\r\n"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: noFingerprint, host: Fixture.host(for: noFingerprint)) } == .missingFingerprint)
        let noUfrag = try SessionDescription(parsing: lines(firefox).filter { !$0.hasPrefix("a=ice-ufrag") }.joined(separator: "\n"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: noUfrag, host: Fixture.host(for: noUfrag)) } == .missingICECredentials)
        let holdconn = try SessionDescription(parsing: firefox.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:holdconn"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: holdconn, host: Fixture.host(for: holdconn)) } == .unsupportedSetupRole)
    }

    @Test func offerWithNoUsableCodecIsRefused() throws {
        // Chromium's offer without VP8 and Opus (as with codec preferences set to H264 and G722).
        let kept = lines(try Fixture.text("chromium-offer.sdp")).filter { !$0.contains(":111 ") && !$0.contains(":96 ") }
            .map { $0.replacingOccurrences(of: " 111 ", with: " ").replacingOccurrences(of: "SAVPF 96 ", with: "SAVPF ") }
        let offer = try SessionDescription(parsing: kept.joined(separator: "\r\n"))
        #expect(!offer.serialized().contains("VP8") && !offer.serialized().contains("opus"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: offer, host: Fixture.host(for: offer)) } == .noUsableCodec)
        // A data channel alone is refused as no usable media.
        let dataOnly = try SessionDescription(parsing: minimalHead
            + "a=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:0\r\n")
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: dataOnly, host: Fixture.host(for: dataOnly)) } == .noUsableMedia)
    }

    @Test func missingOrDuplicateMidsAreRefused() throws {
        let text = try Fixture.text("aiortc-offer.sdp")
        let noMid = try SessionDescription(parsing: text.replacingOccurrences(of: "a=mid:1\r\n", with: ""))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: noMid, host: Fixture.host(for: noMid)) } == .missingMid)
        let twice = try SessionDescription(parsing: text.replacingOccurrences(of: "a=mid:1\r\n", with: "a=mid:0\r\n"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: twice, host: Fixture.host(for: twice)) } == .duplicateMid)
        let ghost = try SessionDescription(parsing: text.replacingOccurrences(of: "BUNDLE 0 1", with: "BUNDLE 0 1 7"))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: ghost, host: Fixture.host(for: ghost)) } == .badBundleGroup)
    }

    /// An SSRC names one source: the camera's SSRC again on the microphone's m-line is refused
    /// (the host would route one stream's packets to two tracks).
    @Test func anSSRCInTwoMLinesIsRefused() throws {
        let text = try Fixture.text("aiortc-offer.sdp")
        let offer = try SessionDescription(parsing: text)
        guard let audio = offer.media.first(where: { $0.kind == .audio })?.ssrcAttributes.first?.ssrc,
              let video = offer.media.first(where: { $0.kind == .video })?.ssrcAttributes.first?.ssrc else {
            Issue.record("the fixture names no SSRCs")
            return
        }
        #expect(throws: Never.self) { _ = try negotiate(offer: offer, host: Fixture.host(for: offer)) }
        let shared = try SessionDescription(parsing: text.replacingOccurrences(of: "a=ssrc:\(video) ", with: "a=ssrc:\(audio) "))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: shared, host: Fixture.host(for: shared)) } == .duplicateSSRC)
    }
}
