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

    /// Durations under 9.2 s take a 64-bit path, longer ones the 128-bit one: both truncate
    /// toward zero to whole nanoseconds and agree at the seam.
    @Test func secondsAndNanosecondsAgreeOnBothSidesOfSixtyFourBits() {
        for d: Duration in [.zero, .nanoseconds(1), .nanoseconds(-1), .milliseconds(20), .milliseconds(-1500), .seconds(9),
                            .seconds(10), .seconds(-10), .seconds(86_400) + .nanoseconds(7), .seconds(-86_400) - .nanoseconds(7)] {
            let (whole, atto) = d.components
            #expect(d.nanosecondsClamped == whole * 1_000_000_000 + atto / 1_000_000_000, "\(d)")
            #expect(abs(d.seconds - (Double(whole) + Double(atto) / 1e18)) < 1e-9, "\(d)")
        }
        #expect(Duration(attoseconds: 1_999_999_999).nanosecondsClamped == 1)
        #expect(Duration(attoseconds: -1_999_999_999).nanosecondsClamped == -1)
        #expect(Duration.seconds(Int64.max).nanosecondsClamped == .max)
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
