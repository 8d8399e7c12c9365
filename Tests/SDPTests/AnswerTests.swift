import Foundation
import SDP
import Testing

/// What each real peer's offer must produce in the host's answer.
struct PeerExpectation: Sendable, CustomStringConvertible {
    var peer: String
    var mids: [String]
    var opus: UInt8
    var vp8: UInt8
    var rtx: UInt8?
    var audioFeedback: [String]
    var videoFeedback: [String]
    var audioExtmaps: [String]
    var videoExtmaps: [String]
    var description: String { peer }

    static let all: [PeerExpectation] = [
        PeerExpectation(
            peer: "chromium", mids: ["0", "1"], opus: 111, vp8: 96, rtx: 97, audioFeedback: ["111 transport-cc"],
            videoFeedback: ["96 goog-remb", "96 transport-cc", "96 ccm fir", "96 nack", "96 nack pli"],
            audioExtmaps: ["1 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                           "2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
                           "3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
                           "4 urn:ietf:params:rtp-hdrext:sdes:mid"],
            videoExtmaps: ["2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
                           "13 urn:3gpp:video-orientation",
                           "3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
                           "4 urn:ietf:params:rtp-hdrext:sdes:mid"]),
        PeerExpectation(
            peer: "firefox", mids: ["0", "1"], opus: 109, vp8: 120, rtx: 124, audioFeedback: ["109 transport-cc"],
            videoFeedback: ["120 nack", "120 nack pli", "120 ccm fir", "120 goog-remb", "120 transport-cc"],
            audioExtmaps: ["1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "3 urn:ietf:params:rtp-hdrext:sdes:mid",
                           "7 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"],
            videoExtmaps: ["3 urn:ietf:params:rtp-hdrext:sdes:mid",
                           "4 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
                           "7 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"]),
        PeerExpectation(
            peer: "aiortc", mids: ["0", "1"], opus: 96, vp8: 97, rtx: 98, audioFeedback: [],
            videoFeedback: ["97 nack", "97 nack pli", "97 goog-remb"],
            audioExtmaps: ["1 urn:ietf:params:rtp-hdrext:sdes:mid", "2 urn:ietf:params:rtp-hdrext:ssrc-audio-level"],
            videoExtmaps: ["1 urn:ietf:params:rtp-hdrext:sdes:mid", "3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"]),
        PeerExpectation(
            peer: "gstreamer", mids: ["audio0", "video1"], opus: 96, vp8: 97, rtx: nil, audioFeedback: ["96 transport-cc"],
            videoFeedback: ["97 nack pli", "97 ccm fir", "97 transport-cc"], audioExtmaps: [], videoExtmaps: []),
    ]
}

/// The lines of each section of an SDP text: index 0 is the session part.
func sections(_ text: String) -> [[String]] {
    var result: [[String]] = [[]]
    for line in lines(text) {
        if line.hasPrefix("m=") { result.append([]) }
        result[result.count - 1].append(line)
    }
    return result
}

@Suite struct AnswerTests {
    func answer(_ peer: String) throws -> (NegotiatedSession, String) {
        let offer = try Fixture.offer(peer)
        let session = try negotiate(offer: offer, host: Fixture.host(for: offer))
        return (session, session.answer.serialized())
    }

    @Test(arguments: PeerExpectation.all)
    func answerToRealOfferCarriesWhatThePeerNeeds(expected: PeerExpectation) throws {
        let (session, text) = try answer(expected.peer)
        let parts = sections(text)
        #expect(parts.count == 3)
        let session0 = parts[0]
        #expect(session0.starts(with: ["v=0", "o=- 4611686018427387904 2 IN IP4 127.0.0.1", "s=-", "t=0 0"]))
        #expect(session0.contains("a=ice-lite"))
        #expect(session0.contains("a=group:BUNDLE \(expected.mids.joined(separator: " "))"))

        let fingerprintLine = "a=fingerprint:sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
            + "10:21:32:43:54:65:76:87:98:A9:BA:CB:DC:ED:FE:0F"
        let offer = try Fixture.offer(expected.peer)
        for (index, kind) in ["audio", "video"].enumerated() {
            let section = parts[index + 1]
            let pt = kind == "audio" ? expected.opus : expected.vp8
            let formats = kind == "video" && expected.rtx != nil ? "\(pt) \(expected.rtx ?? 0)" : "\(pt)"
            #expect(section[0] == "m=\(kind) 50000 UDP/TLS/RTP/SAVPF \(formats)")
            #expect(section.contains("c=IN IP4 127.0.0.1"))
            #expect(section.contains("a=mid:\(expected.mids[index])"))
            #expect(section.contains("a=setup:passive"))
            #expect(section.contains(fingerprintLine))
            #expect(section.contains("a=ice-ufrag:TsrA"))
            #expect(section.contains("a=ice-pwd:TesseraFixedPassword0123"))
            #expect(section.contains("a=rtcp-mux"))
            // Only where offered: aiortc never offers it, Firefox only for video.
            #expect(section.contains("a=rtcp-rsize") == offer.media[index].hasAttribute("rtcp-rsize"))
            #expect(section.contains("a=sendrecv"))
            #expect(Array(section.suffix(2)) == ["a=candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host", "a=end-of-candidates"])
            let feedback = section.filter { $0.hasPrefix("a=rtcp-fb:") }.map { String($0.dropFirst("a=rtcp-fb:".count)) }
            #expect(feedback == (kind == "audio" ? expected.audioFeedback : expected.videoFeedback))
            let extmaps = section.filter { $0.hasPrefix("a=extmap:") }.map { String($0.dropFirst("a=extmap:".count)) }
            #expect(extmaps == (kind == "audio" ? expected.audioExtmaps : expected.videoExtmaps))
        }
        let audio = parts[1]
        #expect(audio.contains { $0.lowercased() == "a=rtpmap:\(expected.opus) opus/48000/2" })
        #expect(audio.contains("a=fmtp:\(expected.opus) minptime=10;useinbandfec=1;usedtx=1"))
        #expect(audio.contains("a=msid:tessera tessera-mix"))
        #expect(audio.contains("a=ssrc:1111111111 cname:tessera-host"))
        let video = parts[2]
        #expect(video.contains("a=rtpmap:\(expected.vp8) VP8/90000"))
        if let rtx = expected.rtx {
            #expect(video.contains("a=rtpmap:\(rtx) rtx/90000"))
            #expect(video.contains("a=fmtp:\(rtx) apt=\(expected.vp8)"))
            #expect(video.contains("a=ssrc-group:FID 2222222222 3333333333"))
        } else {
            #expect(!video.contains { $0.contains("rtx") || $0.contains("FID") })
        }
        #expect(!text.contains("H264") && !text.contains("VP9") && !text.contains("AV1") && !text.contains("red/"))

        // The summary for the host.
        #expect(session.hostDTLSRole == .server)
        #expect(session.bundleMids == expected.mids)
        #expect(session.media.map(\.codec.payloadType) == [expected.opus, expected.vp8])
        #expect(session.media[1].codec.rtxPayloadType == expected.rtx)
        #expect(session.media.allSatisfy { $0.peerDirection == .sendrecv && $0.hostDirection == .sendrecv })
        #expect(session.rejected.isEmpty)
        #expect(session.peerTransport.preferredFingerprint?.hashFunction == "sha-256")
        #expect(session.peerTransport.preferredFingerprint?.bytes.count == 32)
        #expect(session.media.allSatisfy { !$0.peerSSRCs.isEmpty })
        // The answer parses back to itself.
        #expect(try SessionDescription(parsing: text) == session.answer)
    }

    @Test(arguments: Fixture.peers)
    func answerMatchesGoldenFile(peer: String) throws {
        let (_, text) = try answer(peer)
        let file = "\(peer)-answer.sdp"
        if ProcessInfo.processInfo.environment["SDP_RECORD_GOLDEN"] != nil {
            try Data(text.utf8).write(to: Fixture.sourceFolder.appendingPathComponent(file))
        }
        let golden = try Fixture.text(file)
        #expect(text == golden, "regenerate with SDP_RECORD_GOLDEN=1 swift test --filter SDPTests, then review the diff")
    }

    @Test func peerSummaryReadsSSRCsAndCredentials() throws {
        let (chromium, _) = try answer("chromium")
        #expect(chromium.peerTransport.iceUsernameFragment == "4jRO")
        #expect(chromium.peerTransport.icePassword == "2zbH84rHmqubrx8u87Y6G0aZ")
        #expect(chromium.peerTransport.setupRole == .actpass)
        #expect(chromium.peerTransport.candidates.count == 2)
        #expect(chromium.media[0].peerSSRCs == [3_205_779_820])
        #expect(chromium.media[1].peerSSRCs == [3_269_251_633])
        #expect(chromium.media[1].peerRTXSSRCs == [3_269_251_633: 2_494_136_899])
        #expect(chromium.media[1].peerCNAME == "5JhIOu14q05YAMJG")
        #expect(chromium.media[1].headerExtensionID(for: "urn:3gpp:video-orientation") == 13)
        #expect(chromium.media[0].kind == .audio)

        let (firefox, _) = try answer("firefox")
        #expect(firefox.peerTransport.iceUsernameFragment == "43219999")  // media level
        #expect(firefox.peerTransport.fingerprints.count == 1)  // session level
        #expect(firefox.media[1].peerRTXSSRCs == [2_108_122_857: 2_165_764_237])  // group after its ssrc lines

        let (gstreamer, _) = try answer("gstreamer")
        #expect(gstreamer.media[1].peerMSID == MSID(streamID: "user3597081210@host-2248d271", trackID: "webrtctransceiver1"))
        #expect(gstreamer.media[0].codec.encodingName == "OPUS")

        let (aiortc, _) = try answer("aiortc")
        #expect(aiortc.peerTransport.fingerprints.count == 3)
        #expect(aiortc.peerTransport.endOfCandidates)
    }

    @Test func screenshareOfferGetsTheCompositeOnTheFirstVideoLineOnly() throws {
        let (session, text) = try answer("chromium-offer-screenshare")
        #expect(session.bundleMids == ["0", "1", "2"])
        #expect(session.media.map(\.hostDirection) == [.sendrecv, .sendrecv, .recvonly])
        let third = sections(text)[3]
        #expect(third.contains("a=recvonly"))
        #expect(!third.contains { $0.hasPrefix("a=ssrc") || $0.hasPrefix("a=msid") })
    }

    // RFC 3264 §6.1 / RFC 8829 §5.3.1: the answer's direction mirrors the offer's.
    @Test(arguments: [
        ("sendrecv", "sendrecv"), ("sendonly", "recvonly"), ("recvonly", "sendonly"), ("inactive", "inactive"),
    ])
    func directionIsMirrored(offered: String, answered: String) throws {
        let text = try Fixture.text("chromium-offer.sdp").replacingOccurrences(of: "a=sendrecv", with: "a=\(offered)")
        let offer = try SessionDescription(parsing: text)
        let session = try negotiate(offer: offer, host: Fixture.host(for: offer))
        for part in sections(session.answer.serialized()).dropFirst() {
            #expect(part.contains("a=\(answered)"))
            #expect(part.contains { $0.hasPrefix("a=ssrc:") } == answered.hasPrefix("send"))
        }
        #expect(session.media.allSatisfy { $0.peerSSRCs.isEmpty != offered.hasPrefix("send") })
    }

    @Test func offerOfSendrecvWithoutHostSenderIsAnsweredRecvonly() throws {
        let offer = try Fixture.offer("chromium")
        var host = Fixture.host(for: offer)
        host.senders = [:]
        let session = try negotiate(offer: offer, host: host)
        #expect(session.media.map(\.hostDirection) == [.recvonly, .recvonly])
        #expect(session.media.allSatisfy { $0.hostSender == nil })
    }

    @Test func passiveOfferMakesTheHostActive() throws {
        let text = try Fixture.text("firefox-offer.sdp").replacingOccurrences(of: "a=setup:actpass", with: "a=setup:passive")
        let offer = try SessionDescription(parsing: text)
        let session = try negotiate(offer: offer, host: Fixture.host(for: offer))
        #expect(session.hostDTLSRole == .client)
        #expect(session.answer.media.allSatisfy { $0.setupRole == .active })
    }

    @Test func dataChannelAndUnusableVideoAreRejectedInPlace() throws {
        var text = try Fixture.text("chromium-offer.sdp").replacingOccurrences(of: "a=group:BUNDLE 0 1", with: "a=group:BUNDLE 0 1 2 3")
        text += "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\na=mid:2\r\na=sendrecv\r\na=rtcp-mux\r\n"
        text += "a=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n"
        text += "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=mid:3\r\na=sctp-port:5000\r\n"
        let offer = try SessionDescription(parsing: text)
        let session = try negotiate(offer: offer, host: Fixture.host(for: offer))
        #expect(session.rejected == [
            RejectedMedia(index: 2, mid: "2", kind: .video, reason: .noCommonCodec),
            RejectedMedia(index: 3, mid: "3", kind: .application, reason: .unsupportedMedia),
        ])
        #expect(session.bundleMids == ["0", "1"])
        let parts = sections(session.answer.serialized())
        #expect(parts.count == 5)
        #expect(parts[3][0] == "m=video 0 UDP/TLS/RTP/SAVPF 0")
        #expect(parts[3].contains("a=mid:2"))
        #expect(parts[4][0] == "m=application 0 UDP/DTLS/SCTP webrtc-datachannel")
        #expect(parts[4].contains("a=mid:3"))
        #expect(session.answer.media.map(\.mid) == ["0", "1", "2", "3"])
    }

    @Test func sectionWithoutRTCPMuxIsRejectedAndAnOfferWithNoneIsRefused() throws {
        let text = try Fixture.text("aiortc-offer.sdp")
        let partial = try SessionDescription(parsing: text.replacingOccurrences(
            of: "a=rtcp-mux\r\na=ssrc-group", with: "a=ssrc-group"))
        let session = try negotiate(offer: partial, host: Fixture.host(for: partial))
        #expect(session.rejected.map(\.reason) == [.rtcpMuxMissing])
        let none = try SessionDescription(parsing: text.replacingOccurrences(of: "a=rtcp-mux\r\n", with: ""))
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: none, host: Fixture.host(for: none)) } == .rtcpMuxRequired)
    }

    @Test func twoSectionsWithoutBundleAreRefused() throws {
        let text = try Fixture.text("chromium-offer.sdp").replacingOccurrences(of: "a=group:BUNDLE 0 1\r\n", with: "")
        let offer = try SessionDescription(parsing: text)
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: offer, host: Fixture.host(for: offer)) } == .bundleRequired)
    }

    // RFC 8285 §7: an extension offered /recvonly is answered /sendonly, with the offer's id.
    @Test func extensionDirectionIsMirroredAndEncryptedFormsAreLeftOut() throws {
        var text = try Fixture.text("firefox-offer.sdp")
        text = text.replacingOccurrences(
            of: "a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid\r\na=extmap:7",
            with: "a=extmap:3 urn:ietf:params:rtp-hdrext:sdes:mid\r\n"
                + "a=extmap:12 urn:ietf:params:rtp-hdrext:encrypt urn:3gpp:video-orientation\r\na=extmap:7")
        let offer = try SessionDescription(parsing: text)
        var host = Fixture.host(for: offer)
        host.headerExtensionURIs.append("urn:ietf:params:rtp-hdrext:csrc-audio-level")
        let session = try negotiate(offer: offer, host: host)
        let audio = sections(session.answer.serialized())[1]
        #expect(audio.contains("a=extmap:2/sendonly urn:ietf:params:rtp-hdrext:csrc-audio-level"))
        #expect(!audio.contains { $0.contains("encrypt") })
        #expect(session.media[0].headerExtensionID(for: "urn:ietf:params:rtp-hdrext:csrc-audio-level") == 2)
        #expect(session.media[0].headerExtensions.first { $0.id == 2 }?.direction == .sendonly)
    }

    @Test func badHostFingerprintIsATypedError() throws {
        let offer = try Fixture.offer("chromium")
        var host = Fixture.host(for: offer)
        host.fingerprintSHA256 = "AB:CD"
        #expect(errorKind { () throws(SDPError) in _ = try negotiate(offer: offer, host: host) } == .invalidHostParameters)
    }
}

/// The kind of error `body` throws, or nil if it returns.
func errorKind(_ body: () throws(SDPError) -> Void) -> SDPError.Kind? {
    do { try body() } catch { return error.kind }
    return nil
}
