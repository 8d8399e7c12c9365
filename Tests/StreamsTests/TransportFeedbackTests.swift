import RTP
import Streams
import Testing
import Wire

@Suite struct TransportFeedbackTests {
    /// Packets every 5 ms with one lost: the feedback, once due, says which arrived and when,
    /// to the 250 µs tick, and survives serialization; the next covers only what came after.
    @Test func feedbackReportsEachArrivalAndTheLossToTheTick() throws {
        var recorder = TransportFeedbackRecorder()
        for (index, sequence) in [UInt16(65_534), 65_535, 0, 2, 3].enumerated() {
            recorder.packetArrived(sequenceNumber: sequence, now: at(index * 5))
        }
        let polled = recorder.pollFeedback(now: at(20), senderSSRC: 1, mediaSSRC: 2)
        let first = try #require(polled)
        let parsed = try RTCPPacket.parseCompound(try RTCPPacket.serializeCompound([.transportCC(first)]))
        guard case .transportCC(let feedback) = parsed.first else {
            Issue.record("not transport-cc: \(parsed)")
            return
        }
        #expect(feedback.baseSequenceNumber == 65_534)
        #expect(feedback.receiveDeltas.map { $0 != nil } == [true, true, true, false, true, true])
        // Arrivals 5 ms apart are 20 ticks apart, the lost number between two of them too.
        #expect(Array(feedback.receiveDeltas.compactMap { $0 }.dropFirst()) == [20, 20, 20, 20])
        // The reference time plus the first delta is the first arrival.
        let firstArrivalMicroseconds = feedback.referenceTimeMilliseconds * 1_000 + Int64(feedback.receiveDeltas[0] ?? 0) * 250
        #expect(firstArrivalMicroseconds == Int64(at(0).nanoseconds / 1_000) / 250 * 250)
        #expect(recorder.pollFeedback(now: at(21), senderSSRC: 1, mediaSSRC: 2) == nil, "nothing new")
        // The number reported lost arrives late: the next feedback starts from it again, and
        // reports it and those after it that arrived (held for the back window) with their times.
        recorder.packetArrived(sequenceNumber: 1, now: at(30))
        recorder.packetArrived(sequenceNumber: 4, now: at(31))
        #expect(recorder.nextTimeout == at(120), "feedback at most every 100 ms")
        let polledAgain = recorder.pollFeedback(now: at(120), senderSSRC: 1, mediaSSRC: 2)
        let second = try #require(polledAgain)
        #expect(second.baseSequenceNumber == 1 && second.receiveDeltas.map { $0 != nil } == [true, true, true, true])
        // Reported once more, it is not reported again; past the back window the late number's
        // stretch is not reported (its arrivals were let go).
        #expect(recorder.pollFeedback(now: at(300), senderSSRC: 1, mediaSSRC: 2) == nil)
        recorder.packetArrived(sequenceNumber: 5, now: at(1_000))
        recorder.packetArrived(sequenceNumber: 65_533, now: at(1_001))
        let polledLate = recorder.pollFeedback(now: at(1_001), senderSSRC: 1, mediaSSRC: 2)
        let third = try #require(polledLate)
        #expect(third.baseSequenceNumber == 65_533 && third.receiveDeltas.map { $0 != nil } == [true, false, false, false, false, false, false, false, true])
    }

    /// Hostile numbering (huge jumps) costs bounded work and never stalls the feedback.
    @Test func hugeJumpsAreBoundedAndFeedbackGoesOn() {
        var recorder = TransportFeedbackRecorder()
        var random = SplitMix64(seed: 9)
        var made = 0
        for step in 0..<2_000 {
            recorder.packetArrived(sequenceNumber: UInt16(truncatingIfNeeded: random.next()), now: at(step))
            while let due = recorder.nextTimeout, due <= at(step) {
                guard let feedback = recorder.pollFeedback(now: at(step), senderSSRC: 1, mediaSSRC: 2) else { continue }
                #expect(feedback.receiveDeltas.count <= TransportFeedbackRecorder.maximumStatuses)
                made += 1
            }
        }
        #expect(made > 0)
    }
}
