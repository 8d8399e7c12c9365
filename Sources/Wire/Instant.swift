import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A point on the host's monotonic clock, in nanoseconds from an arbitrary origin. Engines never
/// read a clock: the I/O shell passes `Instant`s in, and tests pass a `ManualClock`'s.
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static func milliseconds(_ ms: UInt64) -> Instant { Instant(nanoseconds: ms * 1_000_000) }

    public static func < (a: Instant, b: Instant) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Saturates at the clock's ends rather than wrapping.
    public static func + (a: Instant, d: Duration) -> Instant {
        let delta = d.nanosecondsClamped
        if delta >= 0 {
            let (sum, overflow) = a.nanoseconds.addingReportingOverflow(delta.magnitude)
            return Instant(nanoseconds: overflow ? .max : sum)
        }
        return Instant(nanoseconds: a.nanoseconds > delta.magnitude ? a.nanoseconds - delta.magnitude : 0)
    }

    /// The time from `b` to `a`; negative if `a` is earlier.
    public static func - (a: Instant, b: Instant) -> Duration {
        a >= b ? .nanoseconds(Int64(clamping: a.nanoseconds - b.nanoseconds))
            : .nanoseconds(-Int64(clamping: b.nanoseconds - a.nanoseconds))
    }

    public var description: String { "\(Double(nanoseconds) / 1e9)s" }
}

extension Duration {
    /// The duration in seconds, as a Double: for rates, reports and APIs that take seconds.
    public var seconds: Double {
        // Under 9.2 s (nearly every duration of the media path) the attoseconds fit 64 bits and
        // no 128-bit division (`components`) is needed: asked for every packet.
        if let small = Int64(exactly: attoseconds) { return Double(small) / 1e18 }
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, clamped to Int64.
    public var nanosecondsClamped: Int64 {
        if let small = Int64(exactly: attoseconds) { return small / 1_000_000_000 }  // as in `seconds`
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

/// Where the shell gets `Instant`s from.
public protocol MediaClock: Sendable {
    func now() -> Instant
}

/// CLOCK_MONOTONIC: never jumps with wall-clock changes.
public struct MonotonicClock: MediaClock {
    public init() {}
    public func now() -> Instant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Instant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }
}

/// A clock that moves only when told: tests step engines through time in memory, and offline
/// work (composing recordings) runs as fast as the CPU allows.
public final class ManualClock: MediaClock, Sendable {
    private let current: Mutex<Instant>

    public init(start: Instant = Instant(nanoseconds: 1_000_000_000)) { current = Mutex(start) }

    public func now() -> Instant { current.withLock { $0 } }

    public func advance(by duration: Duration) { current.withLock { $0 = $0 + duration } }

    public func set(_ instant: Instant) { current.withLock { $0 = instant } }
}
