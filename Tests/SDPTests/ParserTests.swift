import SDP
import Testing

@Suite struct ParserTests {
    @Test(arguments: Fixture.offers)
    func realOfferSerializesBackToEveryLine(name: String) throws {
        let text = try Fixture.text(Fixture.offerFile(name))
        let offer = try Fixture.offer(name)
        #expect(lines(offer.serialized()) == lines(text))
        #expect(offer.serialized().hasSuffix("\r\n"))
        #expect(!offer.serialized().replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(try SessionDescription(parsing: offer.serializedBytes()) == offer)
    }

    @Test(arguments: Fixture.offers)
    func lineFeedOnlyInputParsesTheSame(name: String) throws {
        let text = try Fixture.text(Fixture.offerFile(name))
        let lf = text.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try SessionDescription(parsing: lf) == Fixture.offer(name))
    }

    @Test func chromiumOfferIsReadIntoTypes() throws {
        let offer = try Fixture.offer("chromium")
        #expect(offer.origin.sessionID == "2833831190092596411")
        #expect(offer.bundleGroups == [MediaGroup(semantics: "BUNDLE", mids: ["0", "1"])])
        #expect(offer.msidSemantic == "WMS 7cbbdbf1-a56d-4146-8216-478f59cf01e4")  // written "a=msid-semantic: WMS …"
        #expect(offer.media.map(\.kind) == [.audio, .video])
        let audio = offer.media[0]
        #expect(audio.port == 33607)
        #expect(audio.transportProtocol == "UDP/TLS/RTP/SAVPF")
        #expect(audio.payloadTypes == [111, 63, 9, 0, 8, 13, 110, 126])
        #expect(audio.mid == "0")
        #expect(audio.direction == .sendrecv)
        #expect(audio.rtpMaps.first == RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48000, channels: 2))
        #expect(audio.formatParameters.first?.value(of: "useinbandfec") == "1")
        #expect(audio.iceUsernameFragment == "4jRO")
        #expect(audio.setupRole == .actpass)
        #expect(audio.fingerprints.first?.bytes.count == 32)
        #expect(audio.fingerprints.first?.hexDigest.hasPrefix("87:3C:B3") == true)
        let candidates = audio.candidates
        #expect(candidates.count == 2)
        #expect(candidates[0] == Candidate(
            foundation: "3215800702", component: 1, transport: "udp", priority: 2_122_260_223, address: "127.0.0.1",
            port: 33607, type: "host", generation: 0,
            extensions: [.init(name: "network-id", value: "1"), .init(name: "network-cost", value: "50")]))
        #expect(candidates[1].tcpType == "active")
        #expect(candidates[1].port == 9)
        #expect(audio.hasAttribute("rtcp-xr"))  // unknown attributes are kept
        let video = offer.media[1]
        #expect(video.payloadTypes.contains(39))  // Chromium uses 35...63 once 96...127 run out
        #expect(video.ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [3_269_251_633, 2_494_136_899])])
        #expect(video.extensionMaps.first == ExtensionMap(id: 14, uri: "urn:ietf:params:rtp-hdrext:toffset"))
        #expect(video.rtcpFeedback.contains(RTCPFeedback(payloadType: 96, type: "nack", parameter: "pli")))
        #expect(video.ssrcAttributes.first == SSRCAttribute(ssrc: 3_269_251_633, attribute: "cname", value: "5JhIOu14q05YAMJG"))
    }

    @Test func firefoxOfferKeepsSessionLevelTransportAndExtmapDirections() throws {
        let offer = try Fixture.offer("firefox")
        #expect(offer.origin.username == "mozilla...THIS_IS_SDPARTA-99.0")
        #expect(offer.fingerprints.count == 1)
        #expect(offer.direction == .sendrecv)
        #expect(offer.media[0].fingerprints.isEmpty)
        let extmap = try #require(offer.media[0].extensionMaps.first { $0.id == 2 })
        #expect(extmap.direction == .recvonly)
        #expect(extmap.uri == "urn:ietf:params:rtp-hdrext:csrc-audio-level")
        #expect(offer.media[0].msid == MSID(streamID: "{d7ab06d8-ddb4-424d-8f38-e56874c557db}",
                                            trackID: "{302d0f8f-efa8-4fb4-a839-e2387aab35e9}"))
        #expect(offer.media[0].rtpMaps.contains(RTPMap(payloadType: 9, encodingName: "G722", clockRate: 8000, channels: 1)))
        #expect(offer.media[0].candidates.isEmpty)
    }

    @Test func gstreamerOfferHasBundleOnlyPortZeroAndUpperCaseNames() throws {
        let offer = try Fixture.offer("gstreamer")
        #expect(offer.media[1].port == 0)
        #expect(offer.media[1].hasAttribute("bundle-only"))
        #expect(offer.media[0].rtpMaps.first?.encodingName == "OPUS")
        let candidates = offer.media[0].candidates
        #expect(candidates.map(\.transport) == ["UDP", "TCP", "TCP"])
        #expect(candidates[2].tcpType == "passive")
        #expect(offer.media[0].mid == "audio0")
    }

    @Test func aiortcOfferHasThreeFingerprints() throws {
        let offer = try Fixture.offer("aiortc")
        #expect(offer.media[0].fingerprints.map(\.hashFunction) == ["sha-256", "sha-384", "sha-512"])
        #expect(offer.media[0].fingerprints.map(\.bytes.count) == [32, 48, 64])
    }

    @Test func extmapEncryptedFormNamesTheRealURI() throws {
        let attribute = try Attribute(name: "extmap", value: "4/sendonly urn:ietf:params:rtp-hdrext:encrypt urn:ietf:params:rtp-hdrext:ssrc-audio-level vad=on")
        guard case .extmap(let map) = attribute.typed else { Issue.record("not an extmap"); return }
        #expect(map.isEncrypted)
        #expect(map.direction == .sendonly)
        #expect(map.extensionURI == "urn:ietf:params:rtp-hdrext:ssrc-audio-level")
        #expect(attribute.lineValue == "extmap:4/sendonly urn:ietf:params:rtp-hdrext:encrypt urn:ietf:params:rtp-hdrext:ssrc-audio-level vad=on")
    }

    @Test func candidateWithRelatedAddressRoundTrips() throws {
        let text = "842163049 1 udp 1677729535 203.0.113.7 61665 typ srflx raddr 10.0.0.2 rport 61665 generation 0 ufrag EsAw network-cost 999"
        let candidate = try Candidate(attributeValue: text[...])
        #expect(candidate.relatedAddress == "10.0.0.2")
        #expect(candidate.relatedPort == 61665)
        #expect(candidate.extensions.map(\.name) == ["ufrag", "network-cost"])
        #expect(candidate.attributeValue == text)
    }

    @Test func typedAttributesSerializeToWhatTheyParseFrom() throws {
        let samples: [(String, String?)] = [
            ("rtpmap", "111 opus/48000/2"), ("rtpmap", "96 VP8/90000"), ("fmtp", "97 apt=96"),
            ("rtcp-fb", "* nack"), ("rtcp-fb", "96 ccm fir"), ("extmap", "3/recvonly urn:x"), ("ssrc", "1 cname:a b"),
            ("ssrc-group", "FID 1 2"), ("msid", "- track"), ("group", "BUNDLE a b"), ("group", "LS"),
            ("fingerprint", "sha-1 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33"),
        ]
        for (name, value) in samples {
            let attribute = try Attribute(name: name, value: value)
            let rebuilt: Attribute? = switch attribute.typed {
            case .rtpmap(let v): .rtpmap(v)
            case .fmtp(let v): .fmtp(v)
            case .rtcpFeedback(let v): .rtcpFeedback(v)
            case .extmap(let v): .extmap(v)
            case .ssrc(let v): .ssrc(v)
            case .ssrcGroup(let v): .ssrcGroup(v)
            case .msid(let v): .msid(v)
            case .group(let v): .group(v)
            case .fingerprint(let v): .fingerprint(v)
            default: nil
            }
            #expect(rebuilt == attribute, "\(name):\(value ?? "")")
        }
    }

    @Test func simulcastRidAndUnknownAttributesAreKeptInOrder() throws {
        let text = minimalHead + """
            m=video 9 UDP/TLS/RTP/SAVPF 96\r
            c=IN IP6 ::1\r
            b=AS:2500\r
            a=mid:v\r
            a=rid:hi send pt=96;max-width=1280\r
            a=rid:lo send\r
            a=x-google-flag:conference\r
            a=simulcast:send hi;~lo\r
            a=extmap:9 urn:ietf:params:rtp-hdrext:encrypt urn:ietf:params:rtp-hdrext:sdes:mid\r
            a=rtpmap:96 VP8/90000\r
            a=candidate:1 1 udp 2130706431 2001:db8::1 50000 typ host\r

            """
        let offer = try SessionDescription(parsing: text)
        let section = try #require(offer.media.first)
        #expect(section.attributes.map(\.name) == ["mid", "rid", "rid", "x-google-flag", "simulcast", "extmap", "rtpmap", "candidate"])
        #expect(section.attributes[1].value == "hi send pt=96;max-width=1280")
        #expect(section.attributes[4].typed == .other)
        #expect(section.connections == [Connection(address: "::1")])
        #expect(section.bandwidths == [Bandwidth(type: "AS", value: 2500)])
        #expect(section.candidates.first?.address == "2001:db8::1")
        #expect(lines(offer.serialized()) == lines(text))
    }
}
