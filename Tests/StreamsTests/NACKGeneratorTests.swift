import RTP
import Streams
import Testing
import Wire

@Suite struct NACKGeneratorTests {
    /// Feeds sequence numbers (as extended numbers) at one instant.
    static func arrive(_ generator: inout NACKGenerator, _ sequences: [Int64], _ now: Instant) {
        for sequence in sequences { generator.packetArrived(extendedSequenceNumber: sequence, now: now) }
    }

    @Test func gapIsNackedExactlyAfterTheReorderDelayNotBefore() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [1, 2, 3, 6], at(0))
        #expect(generator.pollLostSequenceNumbers(now: at(0)).isEmpty)
        #expect(generator.nextTimeout == at(15))
        #expect(generator.pollLostSequenceNumbers(now: at(14)).isEmpty)
        #expect(generator.pollLostSequenceNumbers(now: at(15)) == [4, 5])
        // Not again before a round trip (100 ms until measured).
        #expect(generator.pollLostSequenceNumbers(now: at(60)).isEmpty)
        #expect(generator.nextTimeout == at(115))
        #expect(generator.pollLostSequenceNumbers(now: at(115)) == [4, 5])
    }

    @Test func gapIsNackedOnceThreeLaterPacketsArrived() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [10, 11, 14, 15], at(0))
        #expect(generator.pollLostSequenceNumbers(now: at(1)).isEmpty)
        Self.arrive(&generator, [16], at(2))
        #expect(generator.pollLostSequenceNumbers(now: at(2)) == [12, 13])
    }

    @Test func reorderWithinTheWaitSendsNoNACK() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [1, 2, 4], at(0))
        Self.arrive(&generator, [3], at(5))
        Self.arrive(&generator, [5, 6, 7], at(10))
        for ms in stride(from: 0, through: 2000, by: 5) {
            #expect(generator.pollLostSequenceNumbers(now: at(10 + ms)).isEmpty)
        }
        #expect(generator.nextTimeout == nil)
        #expect(generator.requestsSent == 0)
    }

    @Test func retransmittedArrivalClearsItsEntry() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [1, 5], at(0))
        #expect(generator.pollLostSequenceNumbers(now: at(20)) == [2, 3, 4])
        Self.arrive(&generator, [3], at(60))  // the retransmission of 3
        #expect(generator.missingSequenceNumbers == [2, 4])
        #expect(generator.pollLostSequenceNumbers(now: at(120)) == [2, 4])
        Self.arrive(&generator, [2, 4], at(150))
        #expect(generator.missingCount == 0)
        #expect(generator.nextTimeout == nil)
        #expect(generator.pollLostSequenceNumbers(now: at(500)).isEmpty)
    }

    @Test func exhaustedBudgetGivesUpAndAsksForAKeyFrame() {
        var configuration = NACKGenerator.Configuration()
        configuration.maxRequestsPerPacket = 10
        configuration.maxTimeAge = .seconds(5)
        var generator = NACKGenerator(configuration: configuration)
        generator.roundTripTime = .milliseconds(50)
        Self.arrive(&generator, [1, 3], at(0))
        var requests = 0
        var lastRequest = -1000
        for ms in stride(from: 0, through: 2000, by: 1) {
            if generator.pollLostSequenceNumbers(now: at(ms)) == [2] {
                #expect(ms - lastRequest >= 50, "resent before a round trip passed")
                requests += 1
                lastRequest = ms
            }
        }
        #expect(requests == 10)
        #expect(generator.missingCount == 0)
        #expect(generator.packetsGivenUp == 1)
        #expect((generator.takeKeyFrameRequest()) == true)
        #expect((generator.takeKeyFrameRequest()) == false)
    }

    @Test func packetsOlderThanTheWindowAreGivenUp() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [1, 3], at(0))
        #expect(generator.pollLostSequenceNumbers(now: at(15)) == [2])
        Self.arrive(&generator, Array(4...1100), at(20))
        #expect(generator.missingCount == 0)
        #expect(generator.packetsGivenUp == 1)
        #expect(generator.keyFrameNeeded)
        // By time: a number missing for a second is dropped.
        var timed = NACKGenerator()
        Self.arrive(&timed, [1, 3], at(0))
        _ = timed.pollLostSequenceNumbers(now: at(999))
        #expect(timed.missingCount == 1)
        #expect(timed.pollLostSequenceNumbers(now: at(1000)).isEmpty)
        #expect(timed.missingCount == 0)
    }

    @Test func hugeGapKeepsMemoryBounded() {
        var generator = NACKGenerator()
        Self.arrive(&generator, [1, 2_999], at(0))
        #expect(generator.missingCount == 1000)
        #expect(generator.packetsGivenUp == 1997)
        #expect(generator.keyFrameNeeded)
        // Audio conceals instead of asking for a keyframe.
        var configuration = NACKGenerator.Configuration()
        configuration.requestsKeyFrameOnGiveUp = false
        var audio = NACKGenerator(configuration: configuration)
        Self.arrive(&audio, [1, 2_999], at(0))
        #expect(!audio.keyFrameNeeded)
    }

    @Test func receiveStreamSendsNACKThenPLIWhenRepairFails() throws {
        var stream = RTPReceiveStream(configuration: .init(localSSRC: 0xAAAA, mediaSSRC: 0x1111, clockRate: 90_000,
                                                           isVideo: true))
        for sequence: UInt16 in [100, 101, 102, 105] {
            _ = stream.receive(videoPacket(sequenceNumber: sequence, timestamp: 0), now: at(0))
        }
        #expect(stream.pollFeedback(now: at(0)).isEmpty)
        #expect(stream.nextTimeout == at(15))
        let feedback = stream.pollFeedback(now: at(15))
        guard case .nack(let nack) = try #require(feedback.first) else {
            Issue.record("expected a NACK, got \(feedback)")
            return
        }
        #expect(nack.senderSSRC == 0xAAAA && nack.mediaSSRC == 0x1111)
        #expect(nack.lostSequenceNumbers == [103, 104])
        var sawPLI = false
        for ms in stride(from: 20, through: 2000, by: 5) {
            for packet in stream.pollFeedback(now: at(ms)) {
                if case .pictureLossIndication(let pli) = packet {
                    #expect(pli.mediaSSRC == 0x1111)
                    sawPLI = true
                }
            }
            if sawPLI { break }
        }
        #expect(sawPLI)
    }

    /// A path that reorders by up to 50 ms (packets every 5 ms, none lost): counting later
    /// packets asks for a late packet again and again. The wait learns the path instead, and
    /// asks for a small share of what a generator that cannot learn asks for, while a real loss
    /// is still asked for once the learned wait has passed.
    @Test func aReorderingPathTeachesTheWaitSoLatePacketsAreNotAskedFor() {
        func run(_ generator: inout NACKGenerator) -> Int {
            var random = SplitMix64(seed: 3)
            var schedule: [(arrival: Int, sequence: Int64)] = []
            for sequence in 0..<800 { schedule.append((sequence * 5 + Int(random.next() % 50), Int64(sequence))) }
            schedule.sort { ($0.arrival, $0.sequence) < ($1.arrival, $1.sequence) }
            var requested = 0, next = 0
            for ms in 0..<4100 {
                while next < schedule.count, schedule[next].arrival <= ms {
                    generator.packetArrived(extendedSequenceNumber: schedule[next].sequence, now: at(ms))
                    next += 1
                }
                requested += generator.pollLostSequenceNumbers(now: at(ms)).count
            }
            return requested
        }
        var fixed = NACKGenerator(configuration: { var c = NACKGenerator.Configuration(); c.maximumReorderDelay = .zero; return c }())
        var learning = NACKGenerator()
        let withoutLearning = run(&fixed), withLearning = run(&learning)
        #expect(learning.learnedReorderDelay >= .milliseconds(30) && learning.learnedReorderDelay <= .milliseconds(55),
                "learned \(learning.learnedReorderDelay)")
        #expect(withoutLearning > 200, "counting packets asks for late ones: \(withoutLearning)")
        #expect(withLearning * 10 < withoutLearning, "learning asks for \(withLearning)")
        // A packet really lost is asked for once the learned wait has passed.
        learning.packetArrived(extendedSequenceNumber: 900, now: at(5000))
        learning.packetArrived(extendedSequenceNumber: 902, now: at(5000))
        #expect(learning.pollLostSequenceNumbers(now: at(5000 + 25)).isEmpty)
        #expect(learning.pollLostSequenceNumbers(now: at(5000 + 60)).contains(UInt16(901)))
    }
}
