import RTP
import Streams
import Testing
import Wire

@Suite struct RetransmissionTests {
    static let rtx = RTXConfiguration(ssrc: 0x2222, payloadType: 97, associatedPayloadType: 96)

    /// A packet with everything RTX must carry through: CSRCs, header extensions, the marker.
    static func richPacket(sequenceNumber: UInt16) -> RTPPacket {
        RTPPacket(marker: true, payloadType: 96, sequenceNumber: sequenceNumber, timestamp: 0xDEAD_BEEF, ssrc: 0x1111,
                  csrcs: [5, 6], extensions: [RTPHeaderExtension(id: 1, data: [0x30]),
                                              RTPHeaderExtension(id: 3, data: [0x01, 0x02])],
                  payload: [1, 2, 3, 4, 5, 6, 7][...])
    }

    @Test func rtxWrapThenUnwrapRestoresTheExactOriginalPacket() throws {
        let original = Self.richPacket(sequenceNumber: 0xFFFE)
        let wrapped = RTXPacket.wrap(original, configuration: Self.rtx, sequenceNumber: 77)
        #expect(wrapped.ssrc == 0x2222 && wrapped.payloadType == 97 && wrapped.sequenceNumber == 77)
        #expect(Array(wrapped.payload.prefix(2)) == [0xFF, 0xFE])  // RFC 4588 §4: OSN first
        let onWire = try wrapped.serialized()
        let received = try RTPPacket.parse(onWire)
        let restored = try RTXPacket.unwrap(received, configuration: Self.rtx, mediaSSRC: 0x1111)
        #expect(try restored.serialized() == original.serialized())
    }

    @Test func unwrapRefusesPaddingOnlyAndForeignPackets() {
        var probe = RTPPacket(payloadType: 97, sequenceNumber: 1, timestamp: 0, ssrc: 0x2222)
        probe.paddingLength = 200
        #expect(throws: RTXUnwrapError.missingOriginalSequenceNumber) {
            try RTXPacket.unwrap(probe, configuration: Self.rtx, mediaSSRC: 0x1111)
        }
        let media = videoPacket(sequenceNumber: 1, timestamp: 0)
        #expect(throws: RTXUnwrapError.notRetransmission(ssrc: 0x1111, payloadType: 96)) {
            try RTXPacket.unwrap(media, configuration: Self.rtx, mediaSSRC: 0x1111)
        }
    }

    @Test func nackIsAnsweredWithRTXPacketsThatCarryTheOriginals() throws {
        var buffer = RetransmissionBuffer(rtx: Self.rtx, firstRTXSequenceNumber: 65_535)
        var originals: [UInt16: [UInt8]] = [:]
        for sequence: UInt16 in 0..<20 {
            let bytes = try Self.richPacket(sequenceNumber: sequence).serialized()
            originals[sequence] = bytes
            buffer.packetSent(bytes, now: at(Int(sequence)))
        }
        let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [3, 4, 10])
        let resent = buffer.retransmissions(for: nack, now: at(30))
        #expect(resent.count == 3)
        var rtxSequenceNumbers: [UInt16] = []
        for (bytes, expected) in zip(resent, [UInt16(3), 4, 10]) {
            let rtxPacket = try RTPPacket.parse(bytes)
            rtxSequenceNumbers.append(rtxPacket.sequenceNumber)
            let media = try RTXPacket.unwrap(rtxPacket, configuration: Self.rtx, mediaSSRC: 0x1111)
            #expect(try media.serialized() == originals[expected])
        }
        #expect(rtxSequenceNumbers == [65_535, 0, 1])  // its own counter, wrapping
    }

    @Test func withoutRTXTheOriginalBytesAreResent() throws {
        var buffer = RetransmissionBuffer()
        let bytes = try videoPacket(sequenceNumber: 42, timestamp: 9).serialized()
        buffer.packetSent(bytes, now: at(0))
        #expect(buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [42]),
                                       now: at(5)) == [bytes])
    }

    @Test func aBufferOfNoCapacityKeepsNothingAndAnswersNothing() throws {
        var configuration = RetransmissionBuffer.Configuration()
        configuration.capacity = 0
        var buffer = RetransmissionBuffer(configuration: configuration)
        let bytes = try videoPacket(sequenceNumber: 42, timestamp: 9).serialized()
        buffer.packetSent(bytes, now: at(0))
        #expect(buffer.storedPacket(42, now: at(1)) == nil)
        #expect(buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [42]), now: at(5)).isEmpty)
        #expect(buffer.requestsUnanswerable == 1)
    }

    @Test func packetsPastTheAgeOrCountBoundAreNotResent() throws {
        var buffer = RetransmissionBuffer()
        for sequence: UInt16 in 0..<1100 {
            buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0, size: 10).serialized(),
                              now: at(Int(sequence)))
        }
        #expect(buffer.storedPacket(50, now: at(1100)) == nil)  // overwritten: 1024 slots
        #expect(buffer.storedPacket(1050, now: at(1100)) != nil)
        #expect(buffer.storedPacket(1050, now: at(1050 + 1001)) == nil)  // older than 1 s
    }

    /// A receiver that asks again for every packet resent as RTX (aiortc cannot route RTX on a
    /// second video m-line) gets the original bytes the second time, and once that has happened
    /// twice, at the first request too (but for an RTX probe in eight); one that asks again only
    /// for the odd RTX resend lost on the way gets RTX again.
    @Test func aPacketAskedForAgainComesAsItsOriginalBytesWhenRTXSeemsNotToArrive() throws {
        func resends(askedAgain: Set<UInt16>) throws -> [UInt16: [UInt32]] {
            var buffer = RetransmissionBuffer(rtx: Self.rtx, firstRTXSequenceNumber: 40)
            for sequence: UInt16 in 0..<20 { buffer.packetSent(try Self.richPacket(sequenceNumber: sequence).serialized(), now: at(0)) }
            var ssrcs: [UInt16: [UInt32]] = [:]
            for sequence: UInt16 in 0..<20 {
                let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [sequence])
                for attempt in 0..<(askedAgain.contains(sequence) ? 3 : 1) {
                    for bytes in buffer.retransmissions(for: nack, now: at(10 + Int(sequence) * 30 + attempt * 10)) {
                        ssrcs[sequence, default: []].append(try RTPPacket.parse(bytes).ssrc.rawValue)
                    }
                }
            }
            return ssrcs
        }
        let ignoringRTX = try resends(askedAgain: Set(0..<20))
        #expect(ignoringRTX[0] == [0x2222, 0x1111, 0x2222] && ignoringRTX[1] == [0x2222, 0x1111, 0x1111])
        for sequence: UInt16 in 0..<20 { #expect(ignoringRTX[sequence]?.count == 3 && ignoringRTX[sequence]?[1] == 0x1111, "packet \(sequence)") }
        let firstResends = (2..<20).compactMap { ignoringRTX[UInt16($0)]?.first }
        // Most: every eighth request not after an RTX resend probes RTX again.
        #expect(firstResends.filter { $0 == 0x1111 }.count >= 12, "\(firstResends)")
        let takingRTX = try resends(askedAgain: [12])
        #expect(takingRTX[12] == [0x2222, 0x2222, 0x2222])
        #expect(takingRTX.values.allSatisfy { $0.allSatisfy { $0 == 0x2222 } })
    }

    /// aiortc asks again for a packet only at its next gap, at a few percent loss often more than
    /// a second later, and waits at the hole till then (until its jitter buffer overflows): a
    /// packet asked for again after its RTX resend goes on the media stream even past the age
    /// limit, up to `maxAgeAskedAgain`, and once that has happened twice the next loss is repaired
    /// on the media stream at its first request. A first request past the age limit is not
    /// answered.
    @Test func aReceiverStillWaitingPastAnRTXResendGetsThePacketLate() throws {
        func sentBuffer() throws -> RetransmissionBuffer {
            var buffer = RetransmissionBuffer(rtx: Self.rtx)
            for sequence: UInt16 in 0..<40 {
                buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0).serialized(), now: at(Int(sequence) * 70))
            }
            return buffer
        }
        func resend(_ sequence: UInt16, at ms: Int, in buffer: inout RetransmissionBuffer) throws -> [RTPPacket] {
            try buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [sequence]), now: at(ms))
                .map { try RTPPacket.parse($0) }
        }
        var buffer = try sentBuffer()
        #expect(try resend(3, at: 260, in: &buffer).map(\.ssrc) == [0x2222])
        #expect(try resend(10, at: 750, in: &buffer).map(\.ssrc) == [0x2222])
        #expect(try resend(5, at: 1400, in: &buffer).isEmpty)  // a first request, over a second old
        for (sequence, ms) in [(UInt16(3), 1500), (10, 1950)] {  // asked again, 1.29 and 1.25 s old
            let late = try resend(sequence, at: ms, in: &buffer)
            #expect(late.map(\.ssrc) == [0x1111] && late.map(\.sequenceNumber) == [sequence], "packet \(sequence)")
        }
        let repaired = try resend(30, at: 2150, in: &buffer)
        #expect(repaired.map(\.ssrc) == [0x1111] && repaired.map(\.sequenceNumber) == [30])

        var old = try sentBuffer()
        #expect(try resend(3, at: 260, in: &old).map(\.ssrc) == [0x2222])
        #expect(try resend(3, at: 10_300, in: &old).isEmpty)  // asked again past 10 s
    }

    @Test func nackStormResendsEachPacketAtMostOncePerPacingInterval() throws {
        var buffer = RetransmissionBuffer(rtx: Self.rtx)
        for sequence: UInt16 in 0..<10 {
            buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0).serialized(), now: at(0))
        }
        let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: Array(0..<10))
        var sendTimes: [UInt16: [Int]] = [:]
        for ms in 0..<100 {
            for bytes in buffer.retransmissions(for: nack, now: at(ms)) {
                let packet = try RTPPacket.parse(bytes)
                let media = packet.ssrc == 0x1111 ? packet : try RTXPacket.unwrap(packet, configuration: Self.rtx, mediaSSRC: 0x1111)
                sendTimes[media.sequenceNumber, default: []].append(ms)
            }
        }
        #expect(sendTimes.count == 10)
        for (_, times) in sendTimes {
            #expect(times.count == 10)
            for (earlier, later) in zip(times, times.dropFirst()) { #expect(later - earlier >= 10) }
        }
    }

    @Test func resendBytesStayWithinTheBudget() throws {
        var configuration = RetransmissionBuffer.Configuration()
        configuration.maxBytesPerSecond = 100_000
        configuration.minimumResendInterval = .zero
        var buffer = RetransmissionBuffer(configuration: configuration)
        for sequence: UInt16 in 0..<1000 {
            buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0, size: 988).serialized(), now: at(0))
        }
        let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: Array(0..<1000))
        var bytes = 0
        for ms in stride(from: 0, to: 1000, by: 10) {
            bytes += buffer.retransmissions(for: nack, now: at(ms)).reduce(0) { $0 + $1.count }
        }
        // One second's refill plus the initial bucket: at most 200 kB, and the budget is used.
        #expect(bytes <= 200_000)
        #expect(bytes >= 150_000)
    }

    /// With the round trip known (from the receiver's reports about our SRs), a packet goes out
    /// at most once per round trip: the receiver's repeated requests crossed the first resend.
    @Test func aKnownRoundTripPacesResendsOfOnePacket() throws {
        var buffer = RetransmissionBuffer(rtx: Self.rtx)
        buffer.roundTripTime = .milliseconds(80)
        buffer.packetSent(try videoPacket(sequenceNumber: 7, timestamp: 0).serialized(), now: at(0))
        let nack = GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [7])
        let times = (0..<200).filter { !buffer.retransmissions(for: nack, now: at($0)).isEmpty }
        #expect(times == [0, 80, 160])
        #expect(buffer.requestsUnanswerable == 0, "paced requests can still be answered later")
    }

    /// A request over the budget can be answered once the budget refills; one for a packet no
    /// longer held cannot: only that counts as past repair (it brings a key frame instead).
    @Test func overBudgetIsNotPastRepairButForgottenIs() throws {
        var configuration = RetransmissionBuffer.Configuration()
        configuration.maxBytesPerSecond = 1_000
        var buffer = RetransmissionBuffer(configuration: configuration)
        for sequence: UInt16 in 0..<4 {
            buffer.packetSent(try videoPacket(sequenceNumber: sequence, timestamp: 0, size: 900).serialized(), now: at(0))
        }
        let resent = buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [0, 1, 2]), now: at(1))
        #expect(resent.count == 1)
        #expect(buffer.requestsRefused == 2 && buffer.requestsUnanswerable == 0)
        _ = buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [500]), now: at(2))
        #expect(buffer.requestsUnanswerable == 1)
        buffer.setBudget(bytesPerSecond: 0)
        #expect(buffer.retransmissions(for: GenericNACK(senderSSRC: 9, mediaSSRC: 0x1111, lostSequenceNumbers: [3]), now: at(2000)).isEmpty)
    }
}
