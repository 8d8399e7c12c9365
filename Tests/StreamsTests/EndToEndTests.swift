import RTP
import Streams
import Testing
import Wire
import WireTesting

/// A one-way network path: seeded loss, a base delay and a random extra delay that reorders.
struct LossyLink {
    var generator: SeededGenerator
    let lossProbability: Double
    let baseDelayMs: Int
    let jitterMs: Int
    private var inFlight: [(deliverAt: Instant, index: Int, bytes: [UInt8])] = []
    private var sent = 0
    /// Datagrams the link dropped.
    private(set) var dropped = 0

    init(seed: UInt64, lossProbability: Double, baseDelayMs: Int, jitterMs: Int) {
        generator = SeededGenerator(seed: seed)
        self.lossProbability = lossProbability
        self.baseDelayMs = baseDelayMs
        self.jitterMs = jitterMs
    }

    /// Sends a datagram; returns whether the link will deliver it.
    @discardableResult
    mutating func send(_ bytes: [UInt8], now: Instant) -> Bool {
        sent += 1
        if Double.random(in: 0..<1, using: &generator) < lossProbability {
            dropped += 1
            return false
        }
        let delay = baseDelayMs + Int.random(in: 0...jitterMs, using: &generator)
        inFlight.append((now + .milliseconds(delay), sent, bytes))
        return true
    }

    /// The datagrams due by `now`, in arrival order.
    mutating func deliver(now: Instant) -> [[UInt8]] {
        let due = inFlight.filter { $0.deliverAt <= now }.sorted { ($0.deliverAt, $0.index) < ($1.deliverAt, $1.index) }
        inFlight.removeAll { $0.deliverAt <= now }
        return due.map(\.bytes)
    }
}

@Suite struct EndToEndTests {
    /// 1000 video packets over 10 % loss each way with reordering, repaired by NACK + RTX on a
    /// manual clock: the receiver ends with every packet up to the highest it saw (only a lost
    /// tail, which no later packet reveals, can stay missing), each byte-identical to what was
    /// sent, and its RR reports exactly the loss the network caused.
    @Test func nackAndRTXRepairALossyReorderingPath() throws {
        let clock = ManualClock(start: start)
        let mediaSSRC: SSRC = 0x1111
        let receiverSSRC: SSRC = 0xAAAA
        let rtx = RTXConfiguration(ssrc: 0x2222, payloadType: 97, associatedPayloadType: 96)
        let wallClock = NTPClockMapping(instant: start, ntp: NTPTimestamp(unixNanoseconds: 1_767_225_600_000_000_000))

        var sender = RTPSendStream(configuration: .init(ssrc: mediaSSRC, clockRate: 90_000, rtx: rtx), clock: wallClock,
                                   firstRTXSequenceNumber: 30_000)
        var receiverConfiguration = RTPReceiveStream.Configuration(localSSRC: receiverSSRC, mediaSSRC: mediaSSRC,
                                                                   clockRate: 90_000, isVideo: true, rtx: rtx)
        receiverConfiguration.minimumSequential = 1  // the SSRC is signalled in SDP
        var receiver = RTPReceiveStream(configuration: receiverConfiguration)
        var senderSchedule = RTCPScheduler(configuration: .video, seed: 1, now: start)
        var receiverSchedule = RTCPScheduler(configuration: .video, seed: 2, now: start)
        let senderRTCP = RTCPCompoundBuilder(cname: "sender")
        let receiverRTCP = RTCPCompoundBuilder(cname: "receiver")
        var forward = LossyLink(seed: 0xF0F0, lossProbability: 0.10, baseDelayMs: 20, jitterMs: 8)
        var backward = LossyLink(seed: 0x0F0F, lossProbability: 0.10, baseDelayMs: 20, jitterMs: 8)

        let packetCount = 1000
        var originals: [[UInt8]] = []
        var droppedOriginals: Set<UInt16> = []
        var received: [UInt16: [UInt8]] = [:]
        var lastReport: ReceptionReport?
        var retransmissionsSent = 0

        for step in 0..<7000 {
            let now = clock.now()
            // Sender: one packet every 5 ms (200 packets/s), 450 ticks apart at 90 kHz.
            if step % 5 == 0 && originals.count < packetCount {
                let sequence = UInt16(truncatingIfNeeded: 65_000 + originals.count)  // crosses the wrap
                let packet = videoPacket(ssrc: mediaSSRC, sequenceNumber: sequence,
                                         timestamp: UInt32(originals.count) * 450, size: 200)
                let bytes = try sender.packetSent(packet, now: now)
                originals.append(bytes)
                if !forward.send(bytes, now: now) { droppedOriginals.insert(sequence) }
            }
            if senderSchedule.isDue(now: now) {
                let compound = senderRTCP.report(localSSRC: mediaSSRC, senderReport: sender.makeSenderReport(now: now),
                                                 reports: [])
                let bytes = try RTCPPacket.serializeCompound(compound)
                senderSchedule.reportSent(size: bytes.count, now: now)
                forward.send(bytes, now: now)
            }
            // Receiver side.
            for datagram in forward.deliver(now: now) {
                if MuxedPacketKind.classify(datagram) == .rtcp {
                    for case .senderReport(let sr) in try RTCPPacket.parseCompound(datagram) {
                        receiver.receivedSenderReport(sr, now: now)
                    }
                    continue
                }
                let packet = try RTPPacket.parse(datagram)
                if packet.ssrc == rtx.ssrc {
                    if let (media, arrival) = receiver.receiveRetransmission(packet, now: now),
                        arrival.extendedSequenceNumber != nil
                    {
                        received[media.sequenceNumber] = try media.serialized()
                    }
                } else if receiver.receive(packet, now: now).extendedSequenceNumber != nil {
                    received[packet.sequenceNumber] = datagram
                }
            }
            if let rtt = sender.roundTripTime { receiver.roundTripTime = rtt }  // the host knows it per peer
            let feedback = receiver.pollFeedback(now: now)
            if !feedback.isEmpty {
                backward.send(try RTCPPacket.serializeCompound(receiverRTCP.feedback(localSSRC: receiverSSRC, feedback)),
                              now: now)
            }
            if receiverSchedule.isDue(now: now) {
                let block = receiver.makeReceptionReport(now: now)
                if let block { lastReport = block }
                let bytes = try RTCPPacket.serializeCompound(receiverRTCP.report(
                    localSSRC: receiverSSRC, senderReport: nil, reports: block.map { [$0] } ?? []))
                receiverSchedule.reportSent(size: bytes.count, now: now)
                backward.send(bytes, now: now)
            }
            // Sender side: RTCP from the receiver.
            for datagram in backward.deliver(now: now) {
                for bytes in sender.receivedRTCP(try RTCPPacket.parseCompound(datagram), now: now) {
                    retransmissionsSent += 1
                    forward.send(bytes, now: now)
                }
            }
            _ = sender.pollKeyFrame(now: now)
            clock.advance(by: .milliseconds(1))
        }

        let highest = try #require(receiver.statistics.extendedHighestSequenceNumber)
        let highestIndex = Int(highest - 65_000)
        let tail = packetCount - 1 - highestIndex
        #expect(tail <= 3, "only a lost tail may stay missing")
        for index in 0...highestIndex {
            let sequence = UInt16(truncatingIfNeeded: 65_000 + index)
            #expect(received[sequence] == originals[index], "packet \(sequence) missing or altered")
        }
        #expect(droppedOriginals.count > 70, "the network must have lost about 10 %")
        #expect(retransmissionsSent >= droppedOriginals.count)
        // The RR reports the network's loss, not what NACK repaired.
        let report = try #require(lastReport)
        let networkLoss = droppedOriginals.filter { Int($0 &- 65_000) <= Int(report.extendedHighestSequenceNumber) - 65_000 }
        #expect(Int(report.cumulativeLost) == networkLoss.count)
        #expect(report.extendedHighestSequenceNumber == UInt32(truncatingIfNeeded: highest))
        #expect(receiver.nack?.packetsGivenUp == 0)
        // 0...8 ms of random delay: mean |D| = 8/3 ms = 240 ticks at 90 kHz (RFC 3550 A.8).
        #expect(report.jitter > 150 && report.jitter < 350)
        // The sender learned the RTT from LSR/DLSR: 40 ms plus up to 16 ms of jitter.
        let rtt = try #require(sender.roundTripTime)
        #expect(rtt >= .milliseconds(39) && rtt <= .milliseconds(58))
    }
}
