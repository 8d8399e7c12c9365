import Testing
import Wire
@testable import Load

/// The loss check judges the host: on an impaired run, only what a receiver lost beyond what its
/// own impaired network dropped.
@Suite struct LossCheckTests {
    func lossCheck(_ options: LoadOptions, _ results: [LoadParticipant.Results]) throws -> LoadReport.Check {
        let checks = LoadChecks(options: options, identities: results.indices.map { "load-\($0)" }, results: results,
                                audioLatencies: [], videoLatencies: []).all
        return try #require(checks.first { $0.name.hasPrefix("loss at most") })
    }

    func received(expected: Int64, lost: Int64, onTheWay: Int64) -> LoadParticipant.Results {
        var results = LoadParticipant.Results()
        (results.packetsExpected, results.packetsLost, results.packetsLostOnTheWay) = (expected, lost, onTheWay)
        return results
    }

    @Test func anUnluckyDrawOfTheImpairmentIsNotTheHostsLoss() throws {
        var options = LoadOptions()
        options.impairment = NetworkImpairment(loss: 0.05)
        // 7.2% lost, all of it dropped by the participant's own 5% network (an unlucky draw).
        let unlucky = try lossCheck(options, [received(expected: 1000, lost: 72, onTheWay: 72), received(expected: 1000, lost: 50, onTheWay: 48)])
        #expect(unlucky.passed && unlucky.name == "loss at most 2.0% beyond the impairment's")
        // 3% lost beyond what the network dropped: the host's.
        let hostLost = try lossCheck(options, [received(expected: 1000, lost: 80, onTheWay: 50)])
        #expect(!hostLost.passed && hostLost.detail.contains("load-0 lost 8.00%") && hostLost.detail.contains("3.00% more"))
    }

    @Test func withoutImpairmentAllLossCounts() throws {
        let options = LoadOptions()
        let check = try lossCheck(options, [received(expected: 1000, lost: 30, onTheWay: 0)])
        #expect(!check.passed && check.name == "loss at most 2.0%" && check.detail == "load-0 lost 3.00% of what the host sent")
        #expect(try lossCheck(options, [received(expected: 1000, lost: 20, onTheWay: 0)]).passed)
    }
}
