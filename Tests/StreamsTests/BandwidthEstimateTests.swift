import RTP
import Streams
import Testing
import Wire

@Suite struct BandwidthEstimateTests {
    /// Sends 100 packets of 1000 bytes per second for `seconds`, in 100 ms feedback rounds where
    /// every `lossEvery`-th packet is reported lost (0: none), and returns the estimate after each
    /// second.
    static func run(_ estimator: inout ReceiverBandwidthEstimate, sequence: inout UInt16, from startMs: Int,
                    seconds: Int, lossEvery: Int) -> [Int] {
        var estimates: [Int] = []
        var feedbackCount: UInt8 = 0
        for round in 0..<(seconds * 10) {
            let roundStart = startMs + round * 100
            let base = sequence
            var deltas: [Int16?] = []
            // Each packet arrives 5 ms after it was sent; the first delta counts from the
            // reference time (64 ms units), the others from the packet received before.
            let referenceTime = UInt32(roundStart / 64)
            var previousArrival = Int(referenceTime) * 64
            for index in 0..<10 {
                estimator.packetSent(transportSequenceNumber: sequence, size: 1000, now: at(roundStart + index * 10))
                let lost = lossEvery > 0 && Int(sequence) % lossEvery == 0
                let arrival = roundStart + index * 10 + 5
                deltas.append(lost ? nil : Int16((arrival - previousArrival) * 4))  // 250 µs ticks
                if !lost { previousArrival = arrival }
                sequence &+= 1
            }
            let feedback = TransportCCFeedback(senderSSRC: 0xAAAA, mediaSSRC: 0x1111, baseSequenceNumber: base,
                                               referenceTime: referenceTime, feedbackPacketCount: feedbackCount,
                                               receiveDeltas: deltas)
            feedbackCount &+= 1
            estimator.receivedTransportFeedback(feedback, now: at(roundStart + 100))
            if round % 10 == 9 { estimates.append(estimator.estimate(now: at(roundStart + 100)).bitsPerSecond) }
        }
        return estimates
    }

    @Test func estimateFallsUnderHeavyLossAndRisesWhenClean() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        var sequence: UInt16 = 65_000  // crosses the wrap
        let lossy = Self.run(&estimator, sequence: &sequence, from: 0, seconds: 3, lossEvery: 4)  // 25 %
        #expect(estimator.lossFraction.map { abs($0 - 0.25) < 0.03 } == true)
        #expect(lossy[0] < 1_000_000)
        #expect(zip(lossy, lossy.dropFirst()).allSatisfy { $0 > $1 })
        let low = lossy.last ?? 0
        let clean = Self.run(&estimator, sequence: &sequence, from: 3000, seconds: 3, lossEvery: 0)
        #expect(estimator.lossFraction == 0)
        #expect(zip(clean, clean.dropFirst()).allSatisfy { $0 < $1 })
        // About 8 % a second.
        let growth = Double(clean[2]) / Double(clean[1])
        #expect(growth > 1.06 && growth < 1.10)
        // The lossy run's last missing packets are judged lost 100 ms into the clean one (the
        // reorder window), so its first second may still lower the estimate once.
        #expect(clean[1] > low)
        #expect(estimator.acknowledgedBitrate.map { abs($0 - 800_000) < 50_000 } == true)
    }

    @Test func moderateLossHoldsTheEstimate() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        var sequence: UInt16 = 0
        let held = Self.run(&estimator, sequence: &sequence, from: 0, seconds: 2, lossEvery: 20)  // 5 %
        #expect(held == [1_000_000, 1_000_000])
    }

    @Test func increaseIsCappedByWhatTheReceiverAcknowledged() {
        var configuration = ReceiverBandwidthEstimate.Configuration()
        configuration.initialBitrate = 1_000_000
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111], configuration: configuration)
        var sequence: UInt16 = 0
        // 800 kbit/s acknowledged: the estimate stops at 1.5 × 800k + 10k.
        let clean = Self.run(&estimator, sequence: &sequence, from: 0, seconds: 10, lossEvery: 0)
        #expect((clean.last ?? 0) <= 1_210_000)
        #expect((clean.last ?? 0) >= 1_150_000)
    }

    @Test func rembCapsTheEstimateOnlyForOurStreams() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111, 0x2222])
        #expect((estimator.receivedREMB(ReceiverEstimatedMaximumBitrate(senderSSRC: 9, bitrate: 100_000,
                                                                        ssrcs: [0x9999]), now: at(0))) == false)
        #expect(estimator.estimate(now: at(0)).bitsPerSecond == 1_000_000)
        #expect((estimator.receivedREMB(ReceiverEstimatedMaximumBitrate(senderSSRC: 9, bitrate: 300_000,
                                                                       ssrcs: [0x2222]), now: at(10))) == true)
        #expect(estimator.estimate(now: at(20)) == BandwidthEstimate(bitsPerSecond: 300_000, at: at(10)))
        // Through the wire: parse a REMB compound and apply it.
        let bytes = try? RTCPPacket.serializeCompound([.receiverEstimatedMaximumBitrate(
            ReceiverEstimatedMaximumBitrate(senderSSRC: 9, bitrate: 2_000_000, ssrcs: [0x1111]))])
        for packet in (try? RTCPPacket.parseCompound(bytes ?? [])) ?? [] {
            if case .receiverEstimatedMaximumBitrate(let remb) = packet { estimator.receivedREMB(remb, now: at(30)) }
        }
        // 2 Mbit/s REMB: the loss-based 1 Mbit/s is now the smaller.
        #expect(estimator.estimate(now: at(40)).bitsPerSecond == 1_000_000)
    }

    @Test func receiverReportLossAlsoDrivesTheEstimate() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        func block(highest: UInt32, lost: Int32, ssrc: SSRC = 0x1111) -> ReceptionReport {
            ReceptionReport(ssrc: ssrc, fractionLost: 0, cumulativeLost: lost, extendedHighestSequenceNumber: highest)
        }
        // The first block is the baseline; 25 of the next 100 packets lost.
        estimator.receivedReceptionReport(block(highest: 1000, lost: 3), now: at(0))
        estimator.receivedReceptionReport(block(highest: 1100, lost: 28), now: at(1000))
        #expect(estimator.lossFraction == 0.25)
        #expect(estimator.estimate(now: at(1000)).bitsPerSecond == 875_000)
        // Another within 300 ms does not decrease again.
        estimator.receivedReceptionReport(block(highest: 1200, lost: 53), now: at(1100))
        #expect(estimator.estimate(now: at(1100)).bitsPerSecond == 875_000)
        // A report about someone else's stream is not ours.
        estimator.receivedReceptionReport(block(highest: 1, lost: 0, ssrc: 0x5555), now: at(2000))
        estimator.receivedReceptionReport(block(highest: 500, lost: 499, ssrc: 0x5555), now: at(2000))
        #expect(estimator.estimate(now: at(2000)).bitsPerSecond == 875_000)
    }

    /// Chromium sends an RR with every NACK, so its fraction lost covers a few packets: one
    /// packet late by jitter reads as 50-83 % there though the stream lost 1 of 100. Loss is
    /// read from cumulative lost over at least 20 packets, so the estimate holds.
    @Test func frequentReportsOverFewPacketsAreReadOverTheWholeStretch() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        var highest: UInt32 = 5000
        var lost: Int32 = 0
        for step in 0..<100 {
            // Every fifth report: 2 packets expected, one missing (fraction 50 %), found by the next.
            let missing: Int32 = step % 5 == 0 ? 1 : (step % 5 == 1 ? -1 : 0)
            highest += 2
            lost += missing
            estimator.receivedReceptionReport(
                ReceptionReport(ssrc: 0x1111, fractionLost: missing > 0 ? 128 : 0, cumulativeLost: lost,
                                extendedHighestSequenceNumber: highest), now: at(step * 20))
        }
        #expect(estimator.estimate(now: at(1000)).bitsPerSecond >= 1_000_000)
        #expect(estimator.lossFraction.map { $0 < 0.1 } == true)
    }

    /// Jitter reorders: each feedback reports the last 3 of its 10 packets missing, and the next
    /// one (its window moved back to them, as libwebrtc's receiver does) reports them received.
    /// Nothing was lost, so the estimate must not fall (before: 30 % "loss" halved it in seconds).
    @Test func packetsReportedMissingThenReceivedAreLateNotLost() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        var sequence: UInt16 = 65_500  // crosses the wrap
        var late: [UInt16] = []
        var feedbackCount: UInt8 = 0
        for round in 0..<30 {
            let roundStart = round * 100
            let referenceTime = UInt32(roundStart / 64)
            var previousArrival = Int(referenceTime) * 64
            let base = late.first ?? sequence
            var deltas: [Int16?] = []
            // Last round's late packets arrive first in this one.
            for _ in late {
                let arrival = max(previousArrival, roundStart)
                deltas.append(Int16((arrival - previousArrival) * 4))
                previousArrival = arrival
            }
            late = []
            for index in 0..<10 {
                estimator.packetSent(transportSequenceNumber: sequence, size: 1000, now: at(roundStart + index * 10))
                if index >= 7 {
                    late.append(sequence)
                    deltas.append(nil)
                } else {
                    let arrival = roundStart + index * 10 + 5
                    deltas.append(Int16((arrival - previousArrival) * 4))
                    previousArrival = arrival
                }
                sequence &+= 1
            }
            let feedback = TransportCCFeedback(senderSSRC: 0xAAAA, mediaSSRC: 0x1111, baseSequenceNumber: base,
                                               referenceTime: referenceTime, feedbackPacketCount: feedbackCount,
                                               receiveDeltas: deltas)
            feedbackCount &+= 1
            estimator.receivedTransportFeedback(feedback, now: at(roundStart + 100))
        }
        #expect(estimator.estimate(now: at(3000)).bitsPerSecond >= 1_000_000)
        #expect(estimator.lossFraction.map { $0 < 0.02 } == true)
        #expect(estimator.acknowledgedBitrate.map { abs($0 - 800_000) < 100_000 } == true)
    }
}
