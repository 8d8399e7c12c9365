import Testing
import Wire
import WireTesting

/// The tests' network: what it promises, so that a test under "5 % loss" really has it.
@Suite struct NetEmTests {
    /// Sends `count` numbered packets 20 ms apart and collects what arrives, in arrival order.
    private func run(_ impairment: NetEm<Int>.Impairment, count: Int = 20_000, seed: UInt64 = 7) -> (arrived: [Int], counters: NetEm<Int>.Counters) {
        var network = NetEm<Int>(impairment, seed: seed)
        var now = Instant.milliseconds(1_000)
        var arrived: [Int] = []
        var refused = 0
        for number in 0..<count {
            if !network.send(number, now: now) { refused += 1 }
            now = now + .milliseconds(20)
            arrived += network.receive(now: now)
        }
        arrived += network.receive(now: now + .seconds(10))
        #expect(refused == network.counters.lost, "send says which packets the network lost")
        return (arrived, network.counters)
    }

    @Test func aCleanNetworkDeliversEverythingInOrderAfterItsDelay() {
        var network = NetEm<Int>(.clean(delay: .milliseconds(30)), seed: 1)
        network.send(1, now: .milliseconds(1_000))
        network.send(2, now: .milliseconds(1_000))
        #expect(network.receive(now: .milliseconds(1_029)).isEmpty)
        #expect(network.nextArrival == .milliseconds(1_030))
        #expect(network.receive(now: .milliseconds(1_030)) == [1, 2])
        #expect(run(.clean()).arrived == Array(0..<20_000))
    }

    @Test func randomLossLosesItsShare() {
        let (arrived, counters) = run(NetworkImpairment(loss: 0.05))
        let share = Double(counters.lost) / Double(counters.sent)
        #expect(abs(share - 0.05) < 0.006, "lost \(share)")
        #expect(arrived.count == counters.sent - counters.lost)
    }

    @Test func burstsKeepTheShareAndComeInRunsOfTheirLength() {
        let (arrived, counters) = run(NetworkImpairment(loss: 0.05, burstLength: 4), count: 100_000)
        let share = Double(counters.lost) / Double(counters.sent)
        #expect(abs(share - 0.05) < 0.01, "lost \(share)")
        // Runs of consecutive missing numbers.
        var runs: [Int] = []
        var previous = -1
        for number in arrived {
            if number != previous + 1 { runs.append(number - previous - 1) }
            previous = number
        }
        let meanRun = Double(runs.reduce(0, +)) / Double(max(1, runs.count))
        #expect(meanRun > 3 && meanRun < 5, "mean burst \(meanRun)")
    }

    @Test func jitterReordersAndDuplicationRepeats() {
        let (arrived, counters) = run(NetworkImpairment(jitter: .milliseconds(30), duplicate: 0.01))
        #expect(arrived != arrived.sorted())
        #expect(counters.duplicated > 100 && arrived.count == counters.sent + counters.duplicated)
        #expect(Set(arrived).count == counters.sent)
    }

    @Test func theSameSeedGivesTheSameRun() {
        let impairment = NetEm<Int>.Impairment(loss: 0.05, burstLength: 2, jitter: .milliseconds(30), reorder: 0.01, duplicate: 0.01)
        #expect(run(impairment, count: 2_000, seed: 42).arrived == run(impairment, count: 2_000, seed: 42).arrived)
        #expect(run(impairment, count: 2_000, seed: 42).arrived != run(impairment, count: 2_000, seed: 43).arrived)
    }
}
