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
        let lossy = Self.run(&estimator, sequence: &sequence, from: 0, seconds: 3, lossEvery: 5)  // 20 %
        #expect(estimator.lossFraction.map { abs($0 - 0.2) < 0.01 } == true)
        #expect(lossy[0] < 1_000_000)
        #expect(zip(lossy, lossy.dropFirst()).allSatisfy { $0 > $1 })
        let low = lossy.last ?? 0
        let clean = Self.run(&estimator, sequence: &sequence, from: 3000, seconds: 3, lossEvery: 0)
        #expect(estimator.lossFraction == 0)
        #expect(zip(clean, clean.dropFirst()).allSatisfy { $0 < $1 })
        // About 8 % a second.
        let growth = Double(clean[2]) / Double(clean[1])
        #expect(growth > 1.06 && growth < 1.10)
        #expect(clean[0] > low)
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
        estimator.receivedReceptionReport(ReceptionReport(ssrc: 0x1111, fractionLost: 64), now: at(0))  // 25 %
        #expect(estimator.estimate(now: at(0)).bitsPerSecond == 875_000)
        // Another within 300 ms does not decrease again.
        estimator.receivedReceptionReport(ReceptionReport(ssrc: 0x1111, fractionLost: 64), now: at(100))
        #expect(estimator.estimate(now: at(100)).bitsPerSecond == 875_000)
        // A report about someone else's stream is not ours.
        estimator.receivedReceptionReport(ReceptionReport(ssrc: 0x5555, fractionLost: 255), now: at(1000))
        #expect(estimator.estimate(now: at(1000)).bitsPerSecond == 875_000)
    }
}
