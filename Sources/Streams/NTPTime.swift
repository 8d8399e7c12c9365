import Wire

/// A 64-bit NTP timestamp (RFC 3550 §4): seconds since 1900-01-01 in the high 32 bits, the
/// fraction of a second in the low 32 bits. SR carries it; LSR/DLSR use its middle 32 bits.
public struct NTPTimestamp: RawRepresentable, Hashable, Comparable, Sendable {
    /// The 64-bit wire value.
    public var rawValue: UInt64

    /// The timestamp with this wire value.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Seconds between the NTP era (1900) and the Unix epoch (1970), RFC 868.
    public static let unixEpochOffsetSeconds: UInt64 = 2_208_988_800

    /// The NTP time of a Unix wall-clock time given in nanoseconds since 1970.
    public init(unixNanoseconds: UInt64) {
        let seconds = unixNanoseconds / 1_000_000_000 + Self.unixEpochOffsetSeconds
        let nanos = unixNanoseconds % 1_000_000_000
        rawValue = seconds << 32 | (nanos << 32) / 1_000_000_000
    }

    /// Seconds since the NTP era, as a Double (sub-microsecond resolution in this era).
    public var seconds: Double { Double(rawValue >> 32) + Double(rawValue & 0xFFFF_FFFF) / 4_294_967_296 }

    /// The middle 32 bits (16.16 fixed point seconds), the "compact" form of LSR and DLSR
    /// (RFC 3550 §6.4.1).
    public var compact: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 16) }

    /// Orders timestamps by value (within one era).
    public static func < (lhs: NTPTimestamp, rhs: NTPTimestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The timestamp `duration` later (wrapping at the era boundary, as NTP does).
    public static func + (lhs: NTPTimestamp, duration: Duration) -> NTPTimestamp {
        let units = NTPTimestamp.units(of: duration)
        return NTPTimestamp(rawValue: units >= 0 ? lhs.rawValue &+ UInt64(units) : lhs.rawValue &- units.magnitude)
    }

    /// A duration in 2^-32 s units, clamped to Int64.
    static func units(of duration: Duration) -> Int64 {
        let nanoseconds = duration.nanosecondsClamped
        let seconds = nanoseconds / 1_000_000_000
        let remainder = nanoseconds % 1_000_000_000
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1 << 32)
        guard !overflow else { return nanoseconds < 0 ? .min : .max }
        return whole + (remainder << 32) / 1_000_000_000
    }
}

/// A compact NTP duration, 1/65536 s units (DLSR and RTT, RFC 3550 §6.4.1), as a `Duration`.
@inline(__always)
func duration(compactNTP value: UInt32) -> Duration {
    .nanoseconds(Int64(value) * 1_000_000_000 / 65_536)
}

/// A non-negative duration in compact NTP units (1/65536 s), saturating at UInt32.max.
@inline(__always)
func compactNTP(of duration: Duration) -> UInt32 {
    // Microseconds, capped at 65536 s (the largest compact value) so the product cannot overflow.
    let microseconds = min(max(0, duration.nanosecondsClamped) / 1_000, 65_536_000_000)
    return UInt32(clamping: microseconds * 65_536 / 1_000_000)
}

/// Maps the host's monotonic `Instant`s to NTP wall-clock time: the shell reads the wall clock
/// once (or after a step) and gives the pair here, so engines never read a clock.
public struct NTPClockMapping: Equatable, Sendable {
    /// A monotonic instant.
    public var instant: Instant
    /// The wall-clock NTP time at `instant`.
    public var ntp: NTPTimestamp

    /// A mapping that pins `ntp` to `instant`.
    public init(instant: Instant, ntp: NTPTimestamp) {
        self.instant = instant
        self.ntp = ntp
    }

    /// The NTP time at `now`, assuming the wall clock runs at the monotonic clock's rate.
    public func ntp(at now: Instant) -> NTPTimestamp { ntp + (now - instant) }
}

/// A sender's wall clock against one of its RTP clocks, from its latest sender report
/// (RFC 3550 §6.4.1): what lip sync lines streams up by.
public struct SenderClock: Sendable, Equatable {
    /// The report's NTP time and the RTP timestamp of the same instant.
    public var ntp: NTPTimestamp
    public var rtpTimestamp: UInt32
    public var clockRate: UInt32

    public init(ntp: NTPTimestamp, rtpTimestamp: UInt32, clockRate: UInt32) {
        self.ntp = ntp
        self.rtpTimestamp = rtpTimestamp
        self.clockRate = clockRate
    }

    /// The sender's wall-clock time, in NTP seconds, at which `timestamp` was sampled (within
    /// half the RTP clock's wrap of the report).
    public func seconds(at timestamp: UInt32) -> Double {
        ntp.seconds + Double(Int32(bitPattern: timestamp &- rtpTimestamp)) / Double(max(1, clockRate))
    }
}
