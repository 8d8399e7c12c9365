/// A media clock's deadlines, sans-IO: each deadline is the previous one plus the interval (not
/// "now plus the interval", so lateness does not accumulate and media timestamps stay regular);
/// a tick later than `maximumLateness` restarts the grid from now, counted in `resets`, rather
/// than catching up with a burst.
public struct TickSchedule: Sendable {
    public let maximumLateness: Duration
    /// The next deadline; nil while stopped.
    public private(set) var next: Instant?
    /// Ticks that came over `maximumLateness` late.
    public private(set) var resets = 0

    public init(maximumLateness: Duration) {
        self.maximumLateness = maximumLateness
    }

    public var isRunning: Bool { next != nil }

    /// Starts the grid with a first deadline `interval` from `now`; no change while running.
    public mutating func start(now: Instant, interval: Duration) {
        if next == nil { next = now + interval }
    }

    public mutating func stop() { next = nil }

    /// The deadline of a tick due by `now`, or nil when none is; the grid moves on by
    /// `interval` (asked per tick: a template can change the frame rate).
    public mutating func due(now: Instant, interval: Duration) -> Instant? {
        guard var deadline = next, deadline <= now else { return nil }
        if now - deadline > maximumLateness {
            deadline = now
            resets += 1
        }
        next = deadline + interval
        return deadline
    }
}
