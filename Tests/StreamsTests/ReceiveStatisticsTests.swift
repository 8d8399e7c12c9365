import RTP
import Streams
import Testing
import Wire

@Suite struct ReceiveStatisticsTests {
    /// Ten packets 100...109, 20 ms and 1800 ticks (90 kHz) apart; 102 and 105 never arrive and
    /// 101 is 5 ms late. Hand-computed (RFC 3550 A.3, A.8): expected 10, received 8, lost 2,
    /// fraction 2·256/10 = 51; jitter 28.1, 54.5, 51.1, 47.9, 44.9, 42.1, 39.5 → 39.
    @Test func reportShowsHandComputedLossAndJitter() throws {
        var stats = RTPReceiveStatistics(ssrc: 0x1111, clockRate: 90_000, minimumSequential: 1)
        let arrivals: [(UInt16, Int)] = [(100, 0), (101, 25), (103, 60), (104, 80), (106, 120), (107, 140),
                                         (108, 160), (109, 180)]
        for (sequence, ms) in arrivals {
            let timestamp = 1000 + UInt32(sequence - 100) * 1800
            let arrival = stats.record(sequenceNumber: sequence, timestamp: timestamp, payloadSize: 10, arrival: at(ms))
            #expect(arrival == .accepted(extendedSequenceNumber: Int64(sequence)))
        }
        let reportValue = stats.makeReceptionReport(now: at(200))
        let report = try #require(reportValue)
        #expect(report.ssrc == 0x1111)
        #expect(report.extendedHighestSequenceNumber == 109)
        #expect(report.cumulativeLost == 2)
        #expect(report.fractionLost == 51)
        #expect(report.jitter == 39)
        #expect(stats.packetsReceived == 8)
        #expect(stats.payloadBytesReceived == 80)

        // The next interval loses nothing: fraction 0, cumulative unchanged.
        for sequence: UInt16 in 110...113 {
            _ = stats.record(sequenceNumber: sequence, timestamp: 1000 + UInt32(sequence - 100) * 1800,
                             arrival: at(Int(sequence - 100) * 20))
        }
        let nextValue = stats.makeReceptionReport(now: at(300))
        let next = try #require(nextValue)
        #expect(next.fractionLost == 0)
        #expect(next.cumulativeLost == 2)
        #expect(next.extendedHighestSequenceNumber == 113)
    }

    @Test func reorderedPacketFillsItsGapAndDuplicatesAreNotCounted() throws {
        var stats = RTPReceiveStatistics(ssrc: 1, clockRate: 48_000, minimumSequential: 1)
        for sequence: UInt16 in [1, 2, 4, 5, 3] {
            _ = stats.record(sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, arrival: at(Int(sequence) * 20))
        }
        #expect(stats.record(sequenceNumber: 3, timestamp: 2880, arrival: at(120)) == .duplicate)
        #expect(stats.record(sequenceNumber: 5, timestamp: 4800, arrival: at(121)) == .duplicate)
        let reportValue = stats.makeReceptionReport(now: at(200))
        let report = try #require(reportValue)
        #expect(report.cumulativeLost == 0)
        #expect(report.fractionLost == 0)
        #expect(report.extendedHighestSequenceNumber == 5)
        #expect(stats.packetsReceived == 5)
    }

    @Test func sequenceWrapCountsACycle() throws {
        var stats = RTPReceiveStatistics(ssrc: 1, clockRate: 90_000, minimumSequential: 1)
        var sequence: UInt16 = 65_530
        for index in 0..<12 {
            if sequence != 2 {  // one loss just after the wrap
                _ = stats.record(sequenceNumber: sequence, timestamp: UInt32(index) * 3000, arrival: at(index * 33))
            }
            sequence &+= 1
        }
        // 65530...65535, 0...5: highest is 5 in cycle 1.
        let reportValue = stats.makeReceptionReport(now: at(500))
        let report = try #require(reportValue)
        #expect(report.extendedHighestSequenceNumber == 1 << 16 | 5)
        #expect(report.cumulativeLost == 1)
        // A packet from before the wrap arriving late lands in cycle 0.
        var late = RTPReceiveStatistics(ssrc: 1, clockRate: 90_000, minimumSequential: 1)
        _ = late.record(sequenceNumber: 65_535, timestamp: 0, arrival: at(0))
        _ = late.record(sequenceNumber: 1, timestamp: 6000, arrival: at(66))
        #expect(late.record(sequenceNumber: 0, timestamp: 3000, arrival: at(70)) == .accepted(extendedSequenceNumber: 65_536))
        #expect(late.cumulativeLost == 0)
    }

    @Test func probationHoldsTheFirstPacketUntilASecondFollowsIt() {
        var stats = RTPReceiveStatistics(ssrc: 1, clockRate: 90_000)
        #expect(stats.record(sequenceNumber: 500, timestamp: 0, arrival: at(0)) == .probation)
        #expect(!stats.isValid)
        #expect(stats.record(sequenceNumber: 501, timestamp: 3000, arrival: at(33)) == .accepted(extendedSequenceNumber: 501))
        #expect(stats.packetsReceived == 2)
        #expect(stats.cumulativeLost == 0)
    }

    @Test func confirmedLargeJumpRestartsTheStatistics() throws {
        var stats = RTPReceiveStatistics(ssrc: 1, clockRate: 90_000, minimumSequential: 1)
        for sequence: UInt16 in 10...19 where sequence != 12 {
            _ = stats.record(sequenceNumber: sequence, timestamp: UInt32(sequence) * 3000, arrival: at(Int(sequence)))
        }
        #expect(stats.cumulativeLost == 1)
        // A single stray far-away packet is held, not counted.
        #expect(stats.record(sequenceNumber: 40_000, timestamp: 0, arrival: at(30)) == .discontinuity)
        #expect(stats.record(sequenceNumber: 20, timestamp: 60_000, arrival: at(31)) == .accepted(extendedSequenceNumber: 20))
        // Two in sequence (A.1 bad_seq) are a restart: the new stream has no loss.
        #expect(stats.record(sequenceNumber: 50_000, timestamp: 0, arrival: at(40)) == .discontinuity)
        #expect(stats.record(sequenceNumber: 50_001, timestamp: 3000, arrival: at(73)) == .restarted(extendedSequenceNumber: 50_001))
        _ = stats.record(sequenceNumber: 50_002, timestamp: 6000, arrival: at(106))
        let reportValue = stats.makeReceptionReport(now: at(200))
        let report = try #require(reportValue)
        #expect(report.cumulativeLost == 0)
        #expect(report.extendedHighestSequenceNumber == 50_002)
    }

    @Test func retransmittedPacketsDoNotHideNetworkLoss() throws {
        var stats = RTPReceiveStatistics(ssrc: 1, clockRate: 90_000, minimumSequential: 1)
        for sequence: UInt16 in [1, 2, 4] { _ = stats.record(sequenceNumber: sequence, timestamp: 0, arrival: at(0)) }
        #expect(stats.record(sequenceNumber: 3, timestamp: 0, arrival: at(50), isRetransmission: true)
            == .accepted(extendedSequenceNumber: 3))
        // The late original after its retransmission is a duplicate.
        #expect(stats.record(sequenceNumber: 3, timestamp: 0, arrival: at(60)) == .duplicate)
        #expect(stats.cumulativeLost == 1)
    }

    @Test func reportCarriesLastSenderReportAndDelaySinceIt() throws {
        var stats = RTPReceiveStatistics(ssrc: 7, clockRate: 90_000, minimumSequential: 1)
        _ = stats.record(sequenceNumber: 1, timestamp: 0, arrival: at(0))
        stats.receivedSenderReport(ntpTimestamp: 0x1122_3344_5566_7788, arrival: at(100))
        let reportValue = stats.makeReceptionReport(now: at(1600))
        let report = try #require(reportValue)
        #expect(report.lastSenderReport == 0x3344_5566)
        #expect(report.delaySinceLastSenderReport == 98_304)  // 1.5 s in 1/65536 s
    }
}
