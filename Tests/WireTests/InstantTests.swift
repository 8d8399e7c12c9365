import Testing
import Wire

@Suite struct InstantTests {
    @Test func durationsAddAndSubtract() {
        let t = Instant.milliseconds(1000)
        #expect(t + .milliseconds(20) == .milliseconds(1020))
        #expect(t + .milliseconds(-20) == .milliseconds(980))
        #expect((t + .seconds(2)) - t == .seconds(2))
        #expect(t - (t + .seconds(2)) == .seconds(-2))
    }

    @Test func arithmeticSaturatesInsteadOfTrapping() {
        #expect(Instant(nanoseconds: .max - 5) + .seconds(1) == Instant(nanoseconds: .max))
        #expect(Instant.milliseconds(1) + .seconds(-10) == Instant(nanoseconds: 0))
        #expect(Instant(nanoseconds: .max) - Instant(nanoseconds: 0) == .nanoseconds(Int64.max))
    }

    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualClock(start: .milliseconds(5))
        #expect(clock.now() == .milliseconds(5))
        clock.advance(by: .milliseconds(20))
        #expect(clock.now() == .milliseconds(25))
    }

    @Test func monotonicClockDoesNotGoBack() {
        let clock = MonotonicClock()
        let a = clock.now()
        #expect(clock.now() >= a)
    }
}
