#if canImport(Glibc)
import Glibc
#endif
import Wire

extension NTPClockMapping {
    /// The wall clock (CLOCK_REALTIME) read beside `clock`'s instant: a shell's one reading,
    /// from which engines map instants to NTP time for their sender reports (engines never
    /// read a clock themselves).
    public static func reading(_ clock: any MediaClock) -> NTPClockMapping {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let unixNanoseconds = UInt64(max(0, wall.tv_sec)) * 1_000_000_000 + UInt64(max(0, wall.tv_nsec))
        return NTPClockMapping(instant: clock.now(), ntp: NTPTimestamp(unixNanoseconds: unixNanoseconds))
    }
}
