import RTP
import Streams
import Testing
import Wire
import WireTesting

/// Hostile input to everything in Streams that reads what a peer sent: seeded mutants of valid
/// packets must never trap, and what the engines keep must stay within their bounds.
@Suite struct RobustnessTests {
    static let mutations = 20_000
    static let rtx = RTXConfiguration(ssrc: 0x2222, payloadType: 97, associatedPayloadType: 96)

    @Test func hostileRTXAndMediaPacketsNeverTrapAndKeepNACKStateBounded() throws {
        var receiver = RTPReceiveStream(configuration: .init(localSSRC: 0xAAAA, mediaSSRC: 0x1111, clockRate: 90_000,
                                                             isVideo: true, rtx: Self.rtx))
        let media = try videoPacket(sequenceNumber: 100, timestamp: 5, size: 30).serialized()
        let wrapped = try RTXPacket.wrap(videoPacket(sequenceNumber: 101, timestamp: 5, size: 30),
                                         configuration: Self.rtx, sequenceNumber: 9).serialized()
        var mutator = Mutator(seed: 0x5254_5821)
        var unwrapped = 0
        for index in 0..<Self.mutations {
            let now = at(index)
            let mutant = mutator.mutate(index % 2 == 0 ? media : wrapped)
            guard let packet = try? RTPPacket.parse(mutant) else { continue }
            if packet.ssrc == Self.rtx.ssrc {
                if receiver.receiveRetransmission(packet, now: now) != nil { unwrapped += 1 }
            } else {
                _ = receiver.receive(packet, now: now)
            }
            _ = receiver.pollFeedback(now: now)
            _ = receiver.makeReceptionReport(now: now)
            #expect((receiver.nack?.missingCount ?? 0) <= 1000)
        }
        #expect(unwrapped > 0)
    }

    @Test func absurdNACKBitmasksAreAnsweredWithinBounds() throws {
        var buffer = RetransmissionBuffer(rtx: Self.rtx)
        for sequence: UInt16 in 0..<1024 {
            buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0, size: 50).serialized(), now: at(0))
        }
        var generator = SeededGenerator(seed: 0x4E41_434B)
        var resent = 0
        for index in 0..<2000 {
            let pairs = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                NACKPair(packetID: UInt16.random(in: 0...UInt16.max, using: &generator),
                         lostBitmask: [0xFFFF, 0, UInt16.random(in: 0...UInt16.max, using: &generator)]
                            .randomElement(using: &generator) ?? 0)
            }
            let out = buffer.retransmissions(for: GenericNACK(senderSSRC: 1, mediaSSRC: 0x1111, pairs: pairs),
                                             now: at(index))
            #expect(out.count <= 17 * pairs.count)
            resent += out.reduce(0) { $0 + $1.count }
        }
        // 2 s of hostile NACKs cost at most the budget: the initial bucket plus 2 s of refill.
        #expect(resent <= 250_000 * 3)
    }

    @Test func hostileRTCPIntoSendStreamAndEstimatorNeverTraps() throws {
        var sender = RTPSendStream(configuration: .init(ssrc: 0x1111, clockRate: 90_000, rtx: Self.rtx),
                                   clock: NTPClockMapping(instant: start, ntp: NTPTimestamp(rawValue: 1 << 60)))
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        for sequence: UInt16 in 0..<200 {
            _ = try sender.packetSent(videoPacket(sequenceNumber: sequence, timestamp: 0), now: at(0))
            estimator.packetSent(transportSequenceNumber: sequence, size: 1000, now: at(0))
        }
        let fixtures: [[UInt8]] = [
            try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: 9, reports: [ReceptionReport(
                    ssrc: 0x1111, fractionLost: 30, cumulativeLost: 5, extendedHighestSequenceNumber: 199,
                    jitter: 10, lastSenderReport: 0x1000_0000, delaySinceLastSenderReport: 100)])),
                .nack(GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [3, 5, 19, 40])),
                .pictureLossIndication(PictureLossIndication(senderSSRC: 9, mediaSSRC: 0x1111)),
            ]),
            try RTCPPacket.serializeCompound([
                .transportCC(TransportCCFeedback(senderSSRC: 9, mediaSSRC: 0x1111, baseSequenceNumber: 0,
                                                 referenceTime: 1, feedbackPacketCount: 0,
                                                 receiveDeltas: (0..<150).map { $0 % 7 == 0 ? nil : Int16($0 % 300) })),
                .receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(senderSSRC: 9, bitrate: 500_000,
                                                                                 ssrcs: [0x1111])),
                .fullIntraRequest(FullIntraRequest(senderSSRC: 9, entries: [FIREntry(ssrc: 0x1111, sequenceNumber: 1)])),
            ]),
        ]
        var mutator = Mutator(seed: 0x5254_4350)
        for index in 0..<Self.mutations {
            let now = at(index)
            guard let packets = try? RTCPPacket.parseCompound(mutator.mutate(fixtures[index % fixtures.count])) else {
                continue
            }
            let out = sender.receivedRTCP(packets, now: now)
            #expect(out.count <= 17 * 64)
            for packet in packets {
                switch packet {
                case .transportCC(let feedback): estimator.receivedTransportFeedback(feedback, now: now)
                case .receiverEstimatedMaximumBitrate(let remb): estimator.receivedREMB(remb, now: now)
                case .receiverReport(let rr):
                    for block in rr.reports { estimator.receivedReceptionReport(block, now: now) }
                default: break
                }
            }
            _ = sender.pollKeyFrame(now: now)
            let estimate = estimator.estimate(now: now).bitsPerSecond
            #expect(estimate >= 0 && estimate <= 20_000_000)
        }
        // Feedback claiming 65535 statuses: parsed within its length, matched within the history.
        var huge = ByteWriter()
        huge.append([0x8F, 205, 0, 5, 0, 0, 0, 9, 0, 0, 0x11, 0x11, 0, 0, 0xFF, 0xFF, 0, 0, 1, 0, 0x3F, 0xFF, 0x3F, 0xFF])
        if let packets = try? RTCPPacket.parseCompound(huge.bytes) {
            for case .transportCC(let feedback) in packets { estimator.receivedTransportFeedback(feedback, now: at(0)) }
        }
    }
}
