import Testing
@testable import Load

/// The slowest receiver's composite frame rate over the steady window (`LoadRun.framesReceivedPerSecond`):
/// what `scripts/bench-load.sh rooms` reads for each room, since the host's own count sums them all.
@Suite struct CompositeFrameRateTests {
    /// Arrivals every 1/rate s from `from` to `to` (seconds into the run).
    private func receiver(rate: Double, from: Double = 0, to: Double = 20, gap: ClosedRange<Double>? = nil) -> LoadParticipant.Results {
        var results = LoadParticipant.Results()
        var at = from
        while at < to {
            if !(gap?.contains(at) ?? false) { results.frameArrivals.append(at) }
            at += 1 / rate
        }
        return results
    }

    @Test func theSlowestReceiverInTheWindowCounts() throws {
        let rate = try #require(LoadRun.framesReceivedPerSecond([receiver(rate: 30), receiver(rate: 30, gap: 10...12)], from: 4, to: 19))
        #expect(abs(rate - 30 * 13 / 15) < 0.2, "\(rate)")
        // Frames before the window (joining) or after it (leaving) do not count.
        let steady = try #require(LoadRun.framesReceivedPerSecond([receiver(rate: 30, from: 3)], from: 4, to: 19))
        #expect(abs(steady - 30) < 0.2)
    }

    @Test func aWindowUnderASecondOrNoReceiverGivesNothing() {
        #expect(LoadRun.framesReceivedPerSecond([receiver(rate: 30)], from: 4, to: 4.5) == nil)
        #expect(LoadRun.framesReceivedPerSecond([], from: 4, to: 19) == nil)
        #expect(LoadRun.framesReceivedPerSecond([LoadParticipant.Results()], from: 4, to: 19) == 0)
    }
}
