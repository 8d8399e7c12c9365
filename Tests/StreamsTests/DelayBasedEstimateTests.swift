import RTP
import Streams
import Testing
import Wire

/// The delay-based half of the estimate (`ReceiverBandwidthEstimate.delayBased`) against a simulated bottleneck: a link of some capacity
/// whose queue never drops (a deep router buffer), 20 ms each way. The receiver's transport-cc
/// comes from the project's own `TransportFeedbackRecorder` (every 100 ms), as a peer sends it.
@Suite struct DelayBasedEstimateTests {
    /// What the sender saw: the delay-based estimate every 100 ms, the longest a packet queued (ms), and
    /// whether the delay-based half ever said over-use.
    struct Run {
        var estimates: [Int] = []
        /// The longest a packet queued in each 100 ms (ms).
        var queues: [Double] = []
        var overused = false
    }

    /// Sends 1200-byte packets at `sendRate(ms, estimate)` bits/s into a link of `capacity`
    /// bits/s for `milliseconds`, in 1 ms steps on the manual clock.
    static func simulate(_ estimator: inout ReceiverBandwidthEstimate, milliseconds: Int,
                         sendRate: (_ ms: Int, _ estimate: Int) -> Double, capacity: Double) -> Run {
        var run = Run()
        var recorder = TransportFeedbackRecorder()
        var sequence: UInt16 = 65_400  // crosses the wrap
        var credit = 0.0
        var linkFree = 0.0  // ms: when the link finishes what it holds
        var inFlight: [(arrival: Double, sequence: UInt16)] = []
        var feedbackOnItsWay: [(deliverAt: Int, feedback: TransportCCFeedback)] = []
        var queue = 0.0
        for ms in 0..<milliseconds {
            credit += sendRate(ms, Int(estimator.delayBased.bitrate ?? 1_500_000)) / 1000
            while credit >= 9600 {
                credit -= 9600
                estimator.packetSent(transportSequenceNumber: sequence, size: 1200, now: at(ms))
                let leaves = max(Double(ms), linkFree) + 9600 / capacity * 1000
                queue = max(queue, leaves - Double(ms))
                linkFree = leaves
                inFlight.append((leaves + 20, sequence))
                sequence &+= 1
            }
            while let first = inFlight.first, first.arrival <= Double(ms) {
                inFlight.removeFirst()
                recorder.packetArrived(sequenceNumber: first.sequence, now: start + .microseconds(Int64(first.arrival * 1000)))
            }
            if let feedback = recorder.pollFeedback(now: at(ms), senderSSRC: 7, mediaSSRC: 0x1111) {
                feedbackOnItsWay.append((ms + 20, feedback))
            }
            while let first = feedbackOnItsWay.first, first.deliverAt <= ms {
                feedbackOnItsWay.removeFirst()
                estimator.receivedTransportFeedback(first.feedback, now: at(ms))
                run.overused = run.overused || estimator.delayBased.usage == .overusing
            }
            if ms % 100 == 99 {
                run.estimates.append(Int(estimator.delayBased.bitrate ?? Double(estimator.estimate(now: at(ms)).bitsPerSecond)))
                run.queues.append(queue)
                queue = 0
            }
        }
        return run
    }

    /// 1.5 Mbit/s into 600 kbit/s, nothing lost: the queue grows by 0.9 Mbit each second, which
    /// only the arrival times show. The estimate falls under the link's rate within 2 s (the
    /// loss-based half alone would stay at 1.5 Mbit/s for ever).
    @Test func aQueueBuildingWithoutLossBringsTheEstimateUnderTheLink() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111], configuration: {
            var configuration = ReceiverBandwidthEstimate.Configuration()
            configuration.initialBitrate = 1_500_000
            return configuration
        }())
        let run = Self.simulate(&estimator, milliseconds: 3000, sendRate: { _, _ in 1_500_000 }, capacity: 600_000)
        #expect(estimator.lossFraction == 0, "nothing was lost")
        #expect(run.overused)
        let afterTwoSeconds = run.estimates[19]
        #expect(afterTwoSeconds < 600_000 && afterTwoSeconds > 300_000, "\(run.estimates)")
    }

    /// 1 Mbit/s on a 5 Mbit/s link (only the link's own pacing, no queue): no over-use, and the
    /// estimate does not fall.
    @Test func aPathWithRoomSaysNothing() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111])
        let run = Self.simulate(&estimator, milliseconds: 5000, sendRate: { _, _ in 1_000_000 }, capacity: 5_000_000)
        #expect(!run.overused)
        #expect(run.estimates.allSatisfy { $0 >= 1_000_000 }, "\(run.estimates)")
    }

    /// The sender follows the estimate (as an encoder whose rate is set from it every 100 ms): on
    /// a 600 kbit/s link the queue of its first second at 1.5 Mbit/s drains, and stays short,
    /// instead of growing for ever.
    @Test func aSenderThatFollowsTheEstimateKeepsTheQueueShort() {
        var estimator = ReceiverBandwidthEstimate(mediaSSRCs: [0x1111], configuration: {
            var configuration = ReceiverBandwidthEstimate.Configuration()
            configuration.initialBitrate = 1_500_000
            return configuration
        }())
        var rate = 1_500_000.0
        let run = Self.simulate(&estimator, milliseconds: 20_000, sendRate: { ms, estimate in
            if ms % 100 == 0 { rate = Double(estimate) }
            return rate
        }, capacity: 600_000)
        let lastTenSeconds = run.queues.suffix(100)
        #expect((lastTenSeconds.max() ?? 0) < 400, "queues in the last 10 s: \(lastTenSeconds.map { Int($0) })")
        let estimates = run.estimates.suffix(100)
        #expect(estimates.allSatisfy { $0 > 250_000 && $0 < 900_000 }, "\(estimates)")
    }
}
