import Testing
@testable import Load

/// `--rejoin`'s check, as the report shows it.
@Suite struct RejoinCheckTests {
    func checks(_ options: LoadOptions, _ results: [LoadParticipant.Results]) -> [LoadReport.Check] {
        LoadChecks(options: options, identities: results.indices.map { "load-\($0)" }, results: results, audioLatencies: [], videoLatencies: []).all
    }

    @Test func aParticipantStillOutAtTheEndFailsItAndRejoinsPassIt() throws {
        var options = LoadOptions()
        options.rejoin = true
        var back = LoadParticipant.Results()
        back.rejoins = [LoadReport.Rejoin(failedAt: 10, reason: "nothing from the host for 3 s", host: "http://127.0.0.1:8082", attempts: 4,
                                          gapMilliseconds: 6200)]
        var out = LoadParticipant.Results()
        out.rejoinUnfinished = "load-1: its transport failed (consentLost) at 12.0 s and 3 tries had not brought media back"
        let failing = try #require(checks(options, [back, out]).first { $0.name.hasPrefix("every failed transport rejoins") })
        #expect(!failing.passed && failing.detail.contains("load-1"))
        let passing = try #require(checks(options, [back, back]).first { $0.name.hasPrefix("every failed transport rejoins") })
        #expect(passing.passed && passing.detail.contains("2 rejoins") && passing.detail.contains("6200 ms"))
        options.rejoin = false
        #expect(!checks(options, [back]).contains { $0.name.hasPrefix("every failed transport rejoins") }, "no such check without --rejoin")
    }
}
