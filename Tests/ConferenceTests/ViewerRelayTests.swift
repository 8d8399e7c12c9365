import Conference
import RTP
import Streams
import Testing
import Wire
import WireTesting

/// `ViewerRelay`: an edge host's one pull of a remote room, fanned out to its local viewers;
/// their key frame requests paced upstream; the pull stopped 10 s after the last viewer left.
/// In memory, on a manual clock.
@Suite struct ViewerRelayTests {
    static let ownerVideo = SSRC(rawValue: 0xAAAA_0001)
    static let ownerAudio = SSRC(rawValue: 0xAAAA_0002)
    static let upstream = ViewerRelay.Upstream(audio: ownerAudio, video: ownerVideo, videoRTX: nil, localSSRC: SSRC(rawValue: 0xEEEE_0001))

    /// Viewer `n`'s streams: video SSRC 1000+n (PT 96, RTX 2000+n on PT 97), audio 3000+n (PT 111).
    static func streams(_ n: UInt32) -> ViewerRelay.ViewerStreams {
        ViewerRelay.ViewerStreams(
            audio: .init(ssrc: SSRC(rawValue: 3000 + n), payloadType: PayloadType(rawValue: 111)),
            video: .init(ssrc: SSRC(rawValue: 1000 + n), payloadType: PayloadType(rawValue: 96),
                         rtx: RTXConfiguration(ssrc: SSRC(rawValue: 2000 + n), payloadType: PayloadType(rawValue: 97),
                                               associatedPayloadType: PayloadType(rawValue: 96))),
            cname: "host")
    }

    /// A composite packet from the owner: `keyFrame` begins a key frame (S=1, partition 0, P=0).
    static func video(_ sequenceNumber: UInt16, timestamp: UInt32, keyFrame: Bool = false) -> [UInt8] {
        let packet = RTPPacket(marker: true, payloadType: PayloadType(rawValue: 100), sequenceNumber: sequenceNumber, timestamp: timestamp,
                               ssrc: ownerVideo, payload: [0x10, keyFrame ? 0x00 : 0x01, 0x02, 0x03][...])
        return (try? packet.serialized()) ?? []
    }

    static func audio(_ sequenceNumber: UInt16, timestamp: UInt32) -> [UInt8] {
        let packet = RTPPacket(marker: false, payloadType: PayloadType(rawValue: 109), sequenceNumber: sequenceNumber, timestamp: timestamp,
                               ssrc: ownerAudio, extensions: [RTPHeaderExtension(id: 2, data: [0x7F])], payload: [0xF8, 0xFF, 0xFE][...])
        return (try? packet.serialized()) ?? []
    }

    static func pli(from viewer: UInt32) -> [UInt8] {
        (try? RTCPPacket.serializeCompound([.pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(rawValue: 9000 + viewer),
                                                                                         mediaSSRC: SSRC(rawValue: 1000 + viewer)))])) ?? []
    }

    /// A relay with viewers "a" and "b" and its pull connected at 0 s.
    static func connected(viewers: [String: UInt32] = ["a": 1, "b": 2]) -> ViewerRelay {
        var relay = ViewerRelay(room: "r", wallClock: NTPClockMapping(instant: .milliseconds(0), ntp: NTPTimestamp(rawValue: 0)), seed: 7)
        for (id, n) in viewers.sorted(by: { $0.key < $1.key }) { relay.addViewer(id, streams: streams(n), now: .milliseconds(0)) }
        relay.pullConnected(upstream, now: .milliseconds(0))
        _ = relay.takeOutputs()
        return relay
    }

    static func sentRTP(_ outputs: [ViewerRelay.Output]) -> [(viewer: String, packet: RTPPacket)] {
        outputs.compactMap {
            guard case .sendRTP(let viewer, let bytes) = $0, let packet = try? RTPPacket.parse(bytes) else { return nil }
            return (viewer, packet)
        }
    }

    /// PLIs for the owner's composite among the edge's RTCP to the owner.
    static func upstreamPLIs(_ outputs: [ViewerRelay.Output]) -> Int {
        outputs.reduce(0) { count, output in
            guard case .sendUpstreamRTCP(let bytes) = output, let packets = try? RTCPPacket.parseCompound(bytes) else { return count }
            return count + packets.count { if case .pictureLossIndication(let pli) = $0 { pli.mediaSSRC == ownerVideo } else { false } }
        }
    }

    @Test func theFirstViewerStartsThePullAndOthersShareIt() {
        var relay = ViewerRelay(room: "r", wallClock: NTPClockMapping(instant: .milliseconds(0), ntp: NTPTimestamp(rawValue: 0)), seed: 1)
        relay.addViewer("a", streams: Self.streams(1), now: .milliseconds(0))
        #expect(relay.takeOutputs() == [.startPull])
        relay.addViewer("b", streams: Self.streams(2), now: .milliseconds(5))
        #expect(relay.takeOutputs().isEmpty, "one pull for every viewer of the room")
        #expect(relay.pullState == .starting && relay.viewerCount == 2)
    }

    @Test func theCompositeAndMixAreFannedOutReheaderedFromAKeyFrame() {
        var relay = Self.connected()
        relay.receiveUpstreamRTP(Self.video(500, timestamp: 9000), now: .milliseconds(10))
        #expect(Self.sentRTP(relay.takeOutputs()).isEmpty, "no viewer starts before a key frame")
        relay.receiveUpstreamRTP(Self.video(501, timestamp: 12_000, keyFrame: true), now: .milliseconds(40))
        relay.receiveUpstreamRTP(Self.video(502, timestamp: 15_000), now: .milliseconds(73))
        let video = Self.sentRTP(relay.takeOutputs())
        #expect(video.count == 4, "two packets to each of two viewers")
        for (viewer, n) in [("a", UInt32(1)), ("b", 2)] {
            let mine = video.filter { $0.viewer == viewer }.map(\.packet)
            #expect(mine.allSatisfy { $0.ssrc == SSRC(rawValue: 1000 + n) && $0.payloadType == PayloadType(rawValue: 96) })
            #expect(mine.count == 2 && mine[1].sequenceNumber == mine[0].sequenceNumber &+ 1 && mine[1].timestamp &- mine[0].timestamp == 3000)
            #expect(mine[0].payload == [0x10, 0x00, 0x02, 0x03][...], "the payload as the owner encoded it")
        }
        relay.receiveUpstreamRTP(Self.audio(70, timestamp: 960), now: .milliseconds(80))
        relay.receiveUpstreamRTP(Self.audio(71, timestamp: 1920), now: .milliseconds(100))
        let audio = Self.sentRTP(relay.takeOutputs())
        #expect(audio.count == 4)
        for (viewer, n) in [("a", UInt32(1)), ("b", 2)] {
            let mine = audio.filter { $0.viewer == viewer }.map(\.packet)
            #expect(mine.allSatisfy { $0.ssrc == SSRC(rawValue: 3000 + n) && $0.payloadType == PayloadType(rawValue: 111) && $0.extensions.isEmpty })
            #expect(mine.count == 2 && mine[1].sequenceNumber == mine[0].sequenceNumber &+ 1 && mine[1].timestamp &- mine[0].timestamp == 960)
        }
        #expect(relay.packetsFromOwner == 5 && relay.packetsToViewers == 8)
    }

    @Test func viewersKeyFrameRequestsReachTheOwnerPaced() {
        var relay = Self.connected(viewers: ["a": 1, "b": 2, "c": 3])
        // The connect asked one key frame; the owner's key frame answers it.
        relay.receiveUpstreamRTP(Self.video(1, timestamp: 0, keyFrame: true), now: .milliseconds(400))
        _ = relay.takeOutputs()
        // Three viewers ask at once, then again 100 ms later: one PLI upstream.
        for n: UInt32 in 1...3 { relay.receiveViewerRTCP(Self.pli(from: n), from: ["a", "b", "c"][Int(n) - 1], now: .milliseconds(1000)) }
        #expect(Self.upstreamPLIs(relay.takeOutputs()) == 1)
        relay.receiveViewerRTCP(Self.pli(from: 1), from: "a", now: .milliseconds(1100))
        relay.handleTimeout(now: .milliseconds(1100))
        #expect(Self.upstreamPLIs(relay.takeOutputs()) == 0, "held: the last was asked 100 ms ago")
        #expect(relay.nextTimeout.map { $0 <= .milliseconds(1500) } == true)
        relay.handleTimeout(now: .milliseconds(1500))
        #expect(Self.upstreamPLIs(relay.takeOutputs()) == 1, "granted one interval after the last")
        // A PLI about a stream the viewer is not sent asks nothing.
        let stray = (try? RTCPPacket.serializeCompound([.pictureLossIndication(PictureLossIndication(senderSSRC: SSRC(rawValue: 1), mediaSSRC: SSRC(rawValue: 77)))])) ?? []
        relay.receiveViewerRTCP(stray, from: "a", now: .milliseconds(3000))
        relay.handleTimeout(now: .milliseconds(3000))
        #expect(Self.upstreamPLIs(relay.takeOutputs()) == 0)
        #expect(relay.keyFramesAskedUpstream == 3)
    }

    @Test func aViewerJoiningALivePullAsksTheOwnerForAKeyFrame() {
        var relay = Self.connected(viewers: ["a": 1])
        relay.receiveUpstreamRTP(Self.video(1, timestamp: 0, keyFrame: true), now: .milliseconds(700))
        _ = relay.takeOutputs()
        relay.addViewer("b", streams: Self.streams(2), now: .milliseconds(2000))
        #expect(Self.upstreamPLIs(relay.takeOutputs()) == 1)
        relay.receiveUpstreamRTP(Self.video(2, timestamp: 3000), now: .milliseconds(2010))
        #expect(Self.sentRTP(relay.takeOutputs()).map(\.viewer) == ["a"], "b waits for the key frame")
        relay.receiveUpstreamRTP(Self.video(3, timestamp: 6000, keyFrame: true), now: .milliseconds(2040))
        #expect(Set(Self.sentRTP(relay.takeOutputs()).map(\.viewer)) == ["a", "b"])
    }

    @Test func aViewersNACKIsAnsweredFromTheEdgesHistory() {
        var relay = Self.connected(viewers: ["a": 1])
        relay.receiveUpstreamRTP(Self.video(10, timestamp: 0, keyFrame: true), now: .milliseconds(10))
        relay.receiveUpstreamRTP(Self.video(11, timestamp: 3000), now: .milliseconds(43))
        let sent = Self.sentRTP(relay.takeOutputs()).map(\.packet)
        let lost = sent[1].sequenceNumber
        let nack = (try? RTCPPacket.serializeCompound([.nack(GenericNACK(senderSSRC: SSRC(rawValue: 9001), mediaSSRC: SSRC(rawValue: 1001),
                                                                         lostSequenceNumbers: [lost]))])) ?? []
        relay.receiveViewerRTCP(nack, from: "a", now: .milliseconds(80))
        let resent = Self.sentRTP(relay.takeOutputs())
        #expect(resent.count == 1 && resent.first?.packet.ssrc == SSRC(rawValue: 2001), "on its RTX stream (RFC 4588)")
        #expect(relay.retransmissionsToViewers == 1)
        #expect(Self.upstreamPLIs([]) == 0)
    }

    @Test func thePullStopsTenSecondsAfterTheLastViewerLeaves() {
        var relay = Self.connected()
        var clock: UInt64 = 0, sequence: UInt16 = 0
        // Time goes on to `ms`; the owner's mix keeps coming, a packet a second (a silent pull
        // would end on its own). Answers whether the pull was stopped meanwhile.
        func advance(to ms: UInt64) -> Bool {
            var stopped = false
            while clock + 1000 <= ms {
                clock += 1000
                sequence += 1
                relay.receiveUpstreamRTP(Self.audio(sequence, timestamp: UInt32(clock) * 48), now: .milliseconds(clock))
                relay.handleTimeout(now: .milliseconds(clock))
                stopped = relay.takeOutputs().contains(.stopPull) || stopped
            }
            relay.handleTimeout(now: .milliseconds(ms))
            return relay.takeOutputs().contains(.stopPull) || stopped
        }
        #expect(!advance(to: 5000))
        relay.removeViewer("a", now: .milliseconds(5000))
        #expect(!advance(to: 6000))
        relay.removeViewer("b", now: .milliseconds(6000))
        #expect(relay.nextTimeout.map { $0 <= .milliseconds(16000) } == true)
        // One comes back within the linger: the pull goes on, no new one.
        #expect(!advance(to: 10000))
        relay.addViewer("c", streams: Self.streams(3), now: .milliseconds(10000))
        #expect(!relay.takeOutputs().contains(.startPull))
        #expect(!advance(to: 16000) && relay.pullState == .connected)
        #expect(!advance(to: 20000))
        relay.removeViewer("c", now: .milliseconds(20000))
        #expect(!advance(to: 29999), "9.999 s after the last viewer left")
        #expect(advance(to: 30000), "10 s after")
        #expect(relay.pullState == .idle && relay.isIdle)
        // The next viewer starts a new pull.
        relay.addViewer("d", streams: Self.streams(4), now: .milliseconds(40000))
        #expect(relay.takeOutputs() == [.startPull])
    }

    @Test func whenThePullEndsEveryViewerIsSentABYEAndEnded() {
        var relay = Self.connected()
        relay.pullEnded(reason: "owner gone", now: .milliseconds(1000))
        let outputs = relay.takeOutputs()
        let ended = outputs.compactMap { if case .endViewer(let id, _) = $0 { id } else { nil } }
        #expect(ended == ["a", "b"])
        let byes = outputs.compactMap { output -> String? in
            guard case .sendRTCP(let id, let bytes) = output, let packets = try? RTCPPacket.parseCompound(bytes),
                  packets.contains(where: { if case .goodbye = $0 { true } else { false } }) else { return nil }
            return id
        }
        #expect(byes == ["a", "b"])
        #expect(relay.isIdle)
        // The owner's BYE on the pull does the same.
        var other = Self.connected(viewers: ["x": 5])
        let bye = (try? RTCPPacket.serializeCompound([.goodbye(Goodbye(sources: [Self.ownerVideo]))])) ?? []
        other.receiveUpstreamRTCP(bye, now: .milliseconds(2000))
        #expect(other.takeOutputs().contains(.endViewer("x", reason: "the owner ended the room's stream")))
    }

    @Test func aPullThatBringsNothingForFiveSecondsHasLostItsOwner() {
        var relay = Self.connected()
        relay.receiveUpstreamRTP(Self.video(1, timestamp: 0, keyFrame: true), now: .milliseconds(1000))
        relay.handleTimeout(now: .milliseconds(5999))
        #expect(relay.pullState == .connected, "4.999 s of silence: still the owner's")
        #expect(relay.nextTimeout.map { $0 <= .milliseconds(6000) } == true)
        _ = relay.takeOutputs()
        relay.handleTimeout(now: .milliseconds(6000))
        let ended = relay.takeOutputs().compactMap { if case .endViewer(let id, _) = $0 { id } else { nil } }
        #expect(ended == ["a", "b"] && relay.isIdle)
    }

    @Test func mutatedAndTruncatedInputHarmsNothing() {
        var relay = Self.connected()
        relay.receiveUpstreamRTP(Self.video(100, timestamp: 0, keyFrame: true), now: .milliseconds(1))
        _ = relay.takeOutputs()
        var mutator = Mutator(seed: 17)
        let valid = [Self.video(101, timestamp: 3000), Self.audio(5, timestamp: 960), Self.pli(from: 1),
                     (try? RTCPPacket.serializeCompound([.goodbye(Goodbye(sources: [SSRC(rawValue: 5)]))])) ?? []]
        var now = Instant.milliseconds(2)
        for input in valid {
            var inputs = Mutator.truncations(of: input)
            for _ in 0..<200 { inputs.append(mutator.mutate(input)) }
            for bytes in inputs {
                now = now + .microseconds(100)
                relay.receiveUpstreamRTP(bytes, now: now)
                relay.receiveUpstreamRTCP(bytes, now: now)
                relay.receiveViewerRTCP(bytes, from: "a", now: now)
                relay.receiveViewerRTCP(bytes, from: "nobody", now: now)
                relay.handleTimeout(now: now)
                _ = relay.takeOutputs()
            }
        }
        #expect(relay.malformed > 0)
        // Still relaying: a mutated owner BYE may have ended the pull; if not, the next key
        // frame reaches both viewers.
        if relay.pullState == .connected {
            for sequenceNumber: UInt16 in 102...105 {
                relay.receiveUpstreamRTP(Self.video(sequenceNumber, timestamp: 9000 * UInt32(sequenceNumber), keyFrame: true), now: now + .seconds(1))
            }
            #expect(Set(Self.sentRTP(relay.takeOutputs()).map(\.viewer)) == Set(relay.viewerIDs))
        }
    }
}
