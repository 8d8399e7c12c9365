import Sockets
import Foundation
import RTP
import SDP
import Streams
import Testing
import Transport
import Wire
import WireTesting
@testable import Server

/// `POST /v1/echo` end to end over real UDP on 127.0.0.1, with Tessera's own stack in the client
/// role (`EchoLoopbackClient`). Every wait is bounded by a deadline; nothing sleeps for a fixed time.
@Suite struct EchoLoopbackTests {
    /// A host on ephemeral loopback ports for the length of `body`.
    private func withEchoHost<R>(_ body: (ConferenceHost) throws -> R) throws -> R {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        return try body(host)
    }

    private func makeClient(of host: ConferenceHost, name: String = "echo-loopback") throws -> EchoLoopbackClient {
        try EchoLoopbackClient(httpPort: host.http.address.port, name: name)
    }

    /// The host's view of the port, read on its loop thread.
    private func portCounters(_ host: ConferenceHost) throws -> (counters: MediaPort.Counters, peers: Int)? {
        let media = host.media
        return try media.runOnLoop { media.port.map { ($0.counters, $0.peerCount) } }
    }

    /// The drop counters of the host-side transport whose media goes to `address`.
    private func hostDrops(_ host: ConferenceHost, peerAt address: TransportAddress) throws -> PeerTransport.DropCounters? {
        let media = host.media
        return try media.runOnLoop { () -> PeerTransport.DropCounters? in
            guard let port = media.port else { return nil }
            for value in UInt64(1)...64 {
                if let transport = port.transport(MediaPort.PeerID(value: value)), transport.remoteAddress == address {
                    return transport.drops
                }
            }
            return nil
        }
    }

    private static func json(_ response: HTTPTestClient.Response) -> [String: String]? {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: String]
    }

    private static func format(_ ms: Double?) -> String { ms.map { String(format: "%.1f ms", $0) } ?? "-" }

    // MARK: Echo

    @Test func echoReturnsTheClientsOwnRTPOnTheHostsSSRCForEachMid() throws {
        try withEchoHost { host in
            // libsrtp initializes itself (and runs its self-tests) on the first session in the
            // process: do it here, so the handshake below is timed without it.
            let warmUpStart = MonotonicClock().now()
            _ = try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: [UInt8](repeating: 1, count: 28))
            let warmUp = Double((MonotonicClock().now() - warmUpStart).nanosecondsClamped) / 1e6
            let client = try makeClient(of: host)
            try client.connect()
            let answer = try #require(client.answer)
            #expect(answer.setup == .passive, "the host answers actpass with passive, so the client is the DTLS client")
            #expect(answer.candidate == host.media.mediaAddress)
            #expect(answer.description.isICELite)
            #expect(answer.description.bundleGroups.first?.mids == ["0", "1"])
            #expect(answer.hostFingerprints == [host.media.certificate.fingerprint])
            #expect(answer.midExtensionID == UInt8(EchoLoopbackClient.offeredMidExtensionID))
            #expect(client.events.contains { if case .secure = $0 { true } else { false } })
            let hostAudio = try #require(answer.hostSSRCs["0"]), hostVideo = try #require(answer.hostSSRCs["1"])
            #expect(Set([hostAudio, hostVideo, client.audio.ssrc, client.video.ssrc]).count == 4)

            // 50 Opus-like and 50 VP8-like packets, interleaved as a real sender would.
            let audio = (0..<50).map { client.opusPacket($0) }, video = (0..<50).map { client.vp8Packet($0) }
            let sent = zip(audio, video).flatMap { [$0, $1] }
            let deadline = client.clock.now() + .seconds(2)
            // The first packet alone, so the time to the first echo is one round trip.
            #expect(client.sendAndAwaitEchoes([sent[0]], deadline: deadline))
            let allBack = client.sendAndAwaitEchoes(Array(sent.dropFirst()), deadline: deadline)
            #expect(allBack, "\(client.echoes.count) of \(sent.count) echoes came back")

            for (section, hostSSRC, originals) in [(client.audio, hostAudio, audio), (client.video, hostVideo, video)] {
                let echoes = client.echoes(on: hostSSRC)
                #expect(echoes.count == originals.count, "mid \(section.mid): each packet echoed once")
                for original in originals {
                    let echo = echoes.first { $0.sequenceNumber == original.sequenceNumber }
                    #expect(echo != nil, "mid \(section.mid) seq \(original.sequenceNumber) not echoed")
                    guard let echo else { continue }
                    #expect(echo.payloadType == original.payloadType)
                    #expect(echo.timestamp == original.timestamp)
                    #expect(echo.marker == original.marker)
                    #expect(Array(echo.payload) == Array(original.payload))
                    #expect(echo.headerExtensionData(id: answer.midExtensionID ?? 0).map(Array.init) == Array(section.mid.utf8))
                }
            }
            #expect(client.echoes.allSatisfy { $0.ssrc.rawValue == hostAudio || $0.ssrc.rawValue == hostVideo },
                    "nothing comes back on the client's own SSRCs")
            #expect(client.transport?.drops.total == 0, "the client dropped nothing the host sent")

            let t = client.timings
            print("EchoLoopback timings: POST→answer \(Self.format(t.answer)), POST→ICE \(Self.format(t.iceConnected)), "
                  + "POST→secure \(Self.format(t.secure)), POST→first echo \(Self.format(t.firstEcho)) "
                  + "(its round trip \(Self.format(t.firstRoundTrip))); first SRTP session in this process: \(Self.format(warmUp))")
        }
    }

    @Test func retransmissionsAndFeedbackAboutTheEchoMapOntoTheClientsOwnStreams() throws {
        try withEchoHost { host in
            let client = try makeClient(of: host)
            try client.connect()
            let answer = try #require(client.answer)
            let hostAudio = try #require(answer.hostSSRCs["0"]), hostVideo = try #require(answer.hostSSRCs["1"])
            let deadline = client.clock.now() + .seconds(2)

            // Frames 0…9 except 5, as if 5 were lost on the way; then 5 again as RTX (RFC 4588).
            let frames = (0..<10).map { client.vp8Packet($0) }
            #expect(client.sendAndAwaitEchoes(frames.filter { $0.sequenceNumber != frames[5].sequenceNumber }, deadline: deadline))
            let rtxSSRC = try #require(client.video.rtxSSRC), rtxPayloadType = try #require(client.video.rtxPayloadType)
            let rtx = RTXPacket.wrap(frames[5], configuration: RTXConfiguration(
                ssrc: SSRC(rtxSSRC), payloadType: PayloadType(rtxPayloadType), associatedPayloadType: PayloadType(client.video.payloadType)),
                sequenceNumber: 7)
            client.send(rtx)
            let unwrapped = client.pump(until: deadline) {
                client.echoes(on: hostVideo).contains { $0.sequenceNumber == frames[5].sequenceNumber }
            }
            #expect(unwrapped, "a retransmission comes back unwrapped on the host's video SSRC")
            let echoedRTX = client.echoes(on: hostVideo).first { $0.sequenceNumber == frames[5].sequenceNumber }
            #expect(echoedRTX?.payloadType == PayloadType(client.video.payloadType))
            #expect(echoedRTX.map { Array($0.payload) } == Array(frames[5].payload))

            // PLI and NACK about the echo become the same requests about the client's own stream,
            // and a sender report comes back on the host's SSRC.
            let feedback = try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: SSRC(client.video.ssrc))),
                .pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(client.video.ssrc), mediaSSRC: SSRC(hostVideo))),
                .nack(GenericNACK(senderSSRC: SSRC(client.video.ssrc), mediaSSRC: SSRC(hostVideo), lostSequenceNumbers: [frames[3].sequenceNumber])),
            ])
            #expect(client.sendRTCP(feedback))
            let report = SenderReport(ssrc: SSRC(client.audio.ssrc), ntpTimestamp: 0xE000_0000_8000_0000, rtpTimestamp: 48_000,
                                      packetCount: 50, octetCount: 5000, reports: [], profileExtension: [])
            #expect(client.sendRTCP(try RTCPPacket.serializeCompound([.senderReport(report)])))

            func received() -> [RTCPPacket] { client.rtcp.flatMap { (try? RTCPPacket.parseCompound($0)) ?? [] } }
            let expectedPLI = RTCPPacket.pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(hostVideo), mediaSSRC: SSRC(client.video.ssrc)))
            func hasNACK(_ packets: [RTCPPacket]) -> Bool {
                packets.contains {
                    if case .nack(let nack) = $0 {
                        nack.senderSSRC.rawValue == hostVideo && nack.mediaSSRC.rawValue == client.video.ssrc
                            && nack.lostSequenceNumbers == [frames[3].sequenceNumber]
                    } else { false }
                }
            }
            func echoedReport(_ packets: [RTCPPacket]) -> SenderReport? {
                packets.lazy.compactMap { if case .senderReport(let sr) = $0 { sr } else { nil } }.first
            }
            let allFeedback = client.pump(until: deadline) {
                let packets = received()
                return packets.contains(expectedPLI) && hasNACK(packets) && echoedReport(packets) != nil
            }
            let packets = received()
            #expect(allFeedback, "host sent \(packets)")
            #expect(packets.contains(expectedPLI))
            #expect(hasNACK(packets))
            let sr = echoedReport(packets)
            #expect(sr?.ssrc.rawValue == hostAudio)
            #expect(sr?.ntpTimestamp == report.ntpTimestamp)
            #expect(sr?.rtpTimestamp == report.rtpTimestamp)
        }
    }

    @Test func anOfferThatTakesPassiveMakesTheHostTheDTLSClientAndEchoStillWorks() throws {
        try withEchoHost { host in
            let client = try EchoLoopbackClient(httpPort: host.http.address.port, name: "passive", setup: .passive)
            try client.connect()
            #expect(client.answer?.setup == .active)
            #expect(client.sendAndAwaitEchoes([client.opusPacket(0), client.vp8Packet(0)], deadline: client.clock.now() + .seconds(2)))
        }
    }

    /// RFC 8122 §5: a certificate that does not match the offer's fingerprint ends the session,
    /// and the peer learns it at once from a DTLS alert (not 30 s later from lost consent).
    @Test func aClientWhoseCertificateIsNotItsOffersFingerprintIsRefusedWithAnAlert() throws {
        try withEchoHost { host in
            let impostor = try EchoLoopbackClient(httpPort: host.http.address.port, name: "impostor", presenting: DTLSCertificate())
            let witness = try makeClient(of: host, name: "witness")
            try witness.connect()
            try impostor.post()
            try impostor.startTransport()
            let deadline = impostor.clock.now() + .seconds(2)
            let settled = impostor.pump(until: deadline) { impostor.transport?.isSecure == true || impostor.transport?.failure != nil }
            #expect(settled, "the impostor's handshake neither completed nor failed: \(impostor.events)")
            #expect(impostor.transport?.isSecure == false, "the host refuses the certificate before it finishes the handshake")
            let failedInDTLS = if case .dtls = impostor.transport?.failure { true } else { false }
            #expect(failedInDTLS, "the impostor failed with \(String(describing: impostor.transport?.failure))")
            // The host refuses in the same step that sends the alert: by now the session is gone.
            #expect(try portCounters(host)?.peers == 1, "only the witness's session is left")
            #expect(witness.sendAndAwaitEchoes([witness.opusPacket(0)], deadline: deadline), "the other session goes on")
        }
    }

    @Test func theSixtyFifthEchoSessionIsAnswered503HostFullUntilOneEnds() throws {
        try withEchoHost { host in
            let client = try makeClient(of: host)
            let offer = client.offer().serializedBytes()
            func post() throws -> HTTPTestClient.Response {
                try client.http.send("POST", "/v1/echo", headers: ["Content-Type": "application/sdp"], body: offer)
            }
            var locations: [String] = []
            for _ in 0..<HostAPI.maxEchoSessions {
                let response = try post()
                #expect(response.status == 201)
                if let location = response.headers["location"] { locations.append(location) }
            }
            #expect(Set(locations).count == HostAPI.maxEchoSessions)
            let full = try post()
            #expect(full.status == 503)
            #expect(Self.json(full)?["error"] == "host full")
            #expect(try client.http.send("DELETE", try #require(locations.first)).status == 204)
            #expect(try post().status == 201, "an ended session frees its place")
            #expect(try portCounters(host)?.peers == HostAPI.maxEchoSessions)
        }
    }

    // MARK: Bad input

    @Test func badInputAtALiveSessionIsDroppedAndMediaGoesOn() throws {
        try withEchoHost { host in
            let victim = try makeClient(of: host, name: "victim")
            let bystander = try makeClient(of: host, name: "bystander")
            try victim.connect()
            try bystander.connect()
            let victimAnswer = try #require(victim.answer)
            let mediaAddress = try #require(host.media.mediaAddress)
            let stranger = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
            let deadline = victim.clock.now() + .seconds(3)
            var random = SeededGenerator(seed: 0x7E55_E8A0)
            var strangerDatagrams = 0
            func fromStranger(_ datagrams: [[UInt8]]) {
                strangerDatagrams += stranger.send(datagrams.map { (bytes: $0, destination: mediaAddress) })
            }

            // The other session is echoed after every kind of bad input.
            var round = 0
            func bystanderIsStillEchoed(after step: String) {
                round += 1
                let packets = [bystander.opusPacket(round), bystander.vp8Packet(round)]
                #expect(bystander.sendAndAwaitEchoes(packets, deadline: deadline), "the other session's media stopped after \(step)")
            }
            #expect(victim.sendAndAwaitEchoes([victim.opusPacket(0), victim.vp8Packet(0)], deadline: deadline))
            bystanderIsStillEchoed(after: "nothing")

            // 1. Garbage of every first-byte class (RFC 7983), from the victim's own address (so it
            //    reaches its transport) and from an unknown one; lengths from empty to 1400, plus
            //    one datagram over the socket's 4096-byte limit.
            let classes: [ClosedRange<UInt8>] = [0...3, 4...15, 16...19, 20...63, 64...79, 80...127, 128...191, 192...255]
            let lengths = [0, 1, 2, 4, 8, 11, 12, 19, 20, 21, 28, 40, 100, 300, 1400]
            var garbage: [[UInt8]] = []
            for firstBytes in classes {
                for length in lengths {
                    var datagram = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                    if length > 0 { datagram[0] = UInt8.random(in: firstBytes, using: &random) }
                    // Half of them look more like the real thing: STUN's magic cookie, RTP's version.
                    if length >= 20, firstBytes == 0...3, Bool.random(using: &random) { datagram.replaceSubrange(4..<8, with: [0x21, 0x12, 0xA4, 0x42]) }
                    if length >= 12, firstBytes == 128...191, Bool.random(using: &random) { datagram[1] = UInt8.random(in: 96...127, using: &random) }
                    garbage.append(datagram)
                }
            }
            garbage.append([UInt8](repeating: 0x80, count: 5000))
            victim.sendRaw(garbage)
            fromStranger(garbage)
            bystanderIsStillEchoed(after: "garbage")

            // 2. A check naming the victim's session (right ufrag) made with the wrong password,
            //    from the victim's address and from an unknown one.
            var badCheck = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
            try badCheck.append(contentsOf: [
                .username("\(victimAnswer.hostICE.ufrag):\(victim.ice.ufrag)"),
                .priority(0x7E00_00FF), .iceControlling(tieBreaker: 42), .useCandidate,
            ])
            let forged = badCheck.finish(integrityKey: .shortTerm(password: ICECredentials.random().password), fingerprint: true)
            victim.sendRaw([forged])
            fromStranger([forged])
            bystanderIsStillEchoed(after: "a check with a bad MESSAGE-INTEGRITY")

            // 3. DTLS: a real ClientHello of another association, from an unknown address and from
            //    the victim's own address after its handshake is done.
            let intruder = try DTLSTransport(context: DTLSContext(certificate: DTLSCertificate()), role: .client,
                                             remoteFingerprints: [host.media.certificate.fingerprint], now: victim.clock.now())
            intruder.start(now: victim.clock.now())
            var clientHello: [[UInt8]] = []
            while let datagram = intruder.pollTransmit() { clientHello.append(datagram) }
            #expect(!clientHello.isEmpty)
            fromStranger(clientHello)
            victim.sendRaw(clientHello)
            bystanderIsStillEchoed(after: "a stray ClientHello")

            // 4. SRTP with a flipped authentication tag, SRTP cut to 10 bytes, and a replay.
            var tampered = try #require(victim.protect(victim.opusPacket(1)))
            tampered[tampered.count - 1] ^= 0x5A
            let truncated = Array(try #require(victim.protect(victim.vp8Packet(1))).prefix(10))
            let replayed = try #require(victim.protect(victim.opusPacket(2)))
            victim.sendRaw([tampered, truncated, replayed, replayed])
            fromStranger([replayed])
            bystanderIsStillEchoed(after: "tampered, truncated and replayed SRTP")

            // 5. Malformed RTCP that decrypts (protected with the victim's own session): wrong
            //    lengths and counts, bad padding, feedback without its FCI.
            let ssrc = EchoLoopbackClient.bytes(of: victim.audio.ssrc)
            let badRTCP: [[UInt8]] = [
                [0x80, 201, 0x00, 0x10] + ssrc,                        // length says 17 words, has 2
                [0x81, 201, 0x00, 0x01] + ssrc,                        // one report block, no room for it
                [0x80, 200, 0xFF, 0xFF] + ssrc + [UInt8](repeating: 0, count: 20),
                [0x80, 201, 0x00, 0x01] + ssrc + [0x80, 206, 0x00, 0x00],  // a second packet of length 0
                [0xA0, 201, 0x00, 0x02] + ssrc + [0, 0, 0, 0xFF],      // padding count past the packet
                [0x81, 205, 0x00, 0x02] + ssrc + EchoLoopbackClient.bytes(of: try #require(victimAnswer.hostSSRCs["1"])),  // NACK with no FCI
                [0x80, 201, 0x00, 0x01] + ssrc + [0x81, 206, 0x00, 0x02] + ssrc + [0, 0],  // truncated PLI
            ]
            for packet in badRTCP { #expect(victim.sendRTCP(packet)) }
            bystanderIsStillEchoed(after: "malformed RTCP")

            // The victim's media is still echoed, exactly once per packet (the replay was not).
            let again = (10..<20).flatMap { [victim.opusPacket($0), victim.vp8Packet($0)] }
            #expect(victim.sendAndAwaitEchoes(again, deadline: deadline), "the victim's media stopped being echoed")
            let hostAudio = try #require(victimAnswer.hostSSRCs["0"])
            let replayEchoes = victim.echoes(on: hostAudio).filter { $0.sequenceNumber == victim.opusPacket(2).sequenceNumber }
            #expect(replayEchoes.count == 1, "a replayed packet is echoed once")
            #expect(!victim.echoes(on: hostAudio).contains { $0.sequenceNumber == victim.opusPacket(1).sequenceNumber },
                    "a packet with a bad tag is not echoed")
            #expect(victim.transport?.failure == nil)
            #expect(bystander.transport?.failure == nil)

            // Dropped and counted: by the port (unknown address) and by the victim's transport.
            let (counters, peers) = try #require(try portCounters(host))
            #expect(peers == 2)
            #expect(counters.unroutable >= strangerDatagrams - 2, "all but the forged check from the stranger are unroutable")
            let drops = try #require(try hostDrops(host, peerAt: victim.localAddress))
            #expect(drops.unknownKind > 0)
            #expect(drops.stunRejected >= 2, "the forged check, from both addresses")
            #expect(drops.srtpRejected >= 3, "tampered, truncated, replayed")
            #expect(try hostDrops(host, peerAt: bystander.localAddress)?.total == 0, "the other session saw none of it")
            print("EchoLoopback bad input: host port \(counters), victim's host-side drops \(drops), victim's own drops \(String(describing: victim.transport?.drops)), stray \(victim.strayDatagrams)")
        }
    }

    // A peer that vanishes is dropped at the consent timeout: MediaPortTests drives that with a
    // manual clock (30 s of real time would be too long here).

    // MARK: HTTP answers

    @Test func unreadableSDPIsAnswered400WithAReason() throws {
        try withEchoHost { host in
            let http = HTTPTestClient(port: host.http.address.port)
            let response = try http.send("POST", "/v1/echo", headers: ["Content-Type": "application/sdp"],
                                         body: Array("this is not SDP\r\nat all\r\n".utf8))
            #expect(response.status == 400)
            #expect(response.headers["content-type"] == "application/json")
            let body = Self.json(response)
            #expect(body?["error"] == "unreadable SDP")
            #expect(body?["detail"]?.isEmpty == false)
            #expect(try portCounters(host)?.peers == 0)
        }
    }

    @Test func anOfferWithOnlyAnH264VideoSectionIsAnswered400NoUsableCodec() throws {
        try withEchoHost { host in
            let client = try makeClient(of: host)
            let h264 = EchoLoopbackClient.Section(
                mid: "0", kind: .video, payloadType: 102, encodingName: "H264", clockRate: 90000, channels: nil,
                formatParameters: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                ssrc: client.video.ssrc, rtxPayloadType: nil, rtxSSRC: nil)
            let response = try client.http.send("POST", "/v1/echo", headers: ["Content-Type": "application/sdp"],
                                                body: client.offer([h264]).serializedBytes())
            #expect(response.status == 400)
            #expect(Self.json(response)?["error"] == "no usable codec")
            #expect(try portCounters(host)?.peers == 0)
        }
    }

    @Test func aWrongContentTypeIsAnswered415() throws {
        try withEchoHost { host in
            let client = try makeClient(of: host)
            let offer = client.offer().serializedBytes()
            for headers in [["Content-Type": "text/plain"], ["Content-Type": "application/json"], [:]] {
                let response = try client.http.send("POST", "/v1/echo", headers: headers, body: offer)
                #expect(response.status == 415, "Content-Type \(headers["Content-Type"] ?? "none")")
                #expect(Self.json(response)?["error"] == "wrong content type")
            }
            #expect(try portCounters(host)?.peers == 0)
            let withParameters = try client.http.send("POST", "/v1/echo", headers: ["Content-Type": "Application/SDP; charset=utf-8"], body: offer)
            #expect(withParameters.status == 201, "the media type is matched without parameters and case")
        }
    }

    @Test func deletingAnUnknownEchoSessionIsAnswered404() throws {
        try withEchoHost { host in
            let http = HTTPTestClient(port: host.http.address.port)
            let response = try http.send("DELETE", "/v1/echo/\(UUID().uuidString.lowercased())")
            #expect(response.status == 404)
            #expect(Self.json(response)?["error"] == "not found")
        }
    }

    @Test func deletingALiveEchoSessionAnswers204AndItsMediaIsNoLongerEchoed() throws {
        try withEchoHost { host in
            let client = try makeClient(of: host, name: "deleted")
            let witness = try makeClient(of: host, name: "witness")
            try client.connect()
            try witness.connect()
            let deadline = client.clock.now() + .seconds(2)
            #expect(client.sendAndAwaitEchoes([client.opusPacket(0), client.vp8Packet(0)], deadline: deadline))
            let before = try #require(try portCounters(host))
            #expect(before.peers == 2)

            #expect(try client.delete() == 204)
            #expect(try portCounters(host)?.peers == 1)
            let echoed = client.echoes.count
            let late = (1...10).map { client.opusPacket($0) }
            for packet in late { #expect(client.send(packet), "the client's own transport still sends") }
            // The host reads its one socket in order: once the witness's packet is echoed, the
            // deleted session's packets (sent before it) have been handled, and any echo of them
            // is already in the client's socket.
            #expect(witness.sendAndAwaitEchoes([witness.opusPacket(0)], deadline: deadline))
            client.drain()
            #expect(client.echoes.count == echoed, "media of a deleted session is not echoed")
            #expect(try #require(try portCounters(host)).counters.unroutable >= before.counters.unroutable + late.count)
            #expect(try client.delete() == 404, "a deleted session is gone")
        }
    }
}
