import Wire

/// A media clock on the loop: `action(deadline)` every `interval`, each deadline the previous
/// one plus the interval (not "now plus the interval", so lateness does not accumulate and the
/// media timestamps stay regular). A tick later than `maximumLateness` restarts the schedule
/// from now, counted in `resets`, rather than catching up with a burst.
public final class MediaTick {
    private let loop: EventLoop
    private let interval: () -> Duration
    private let maximumLateness: Duration
    private let action: (Instant) -> Void
    private var timer: EventLoop.TimerToken?
    private var deadline: Instant?
    /// Ticks that came over `maximumLateness` late.
    public private(set) var resets = 0

    /// `interval` is asked at each tick (a video template can change the frame rate).
    public init(loop: EventLoop, interval: @escaping () -> Duration, maximumLateness: Duration, action: @escaping (Instant) -> Void) {
        self.loop = loop
        self.interval = interval
        self.maximumLateness = maximumLateness
        self.action = action
    }

    public var isRunning: Bool { timer != nil }

    public func start() {
        guard timer == nil else { return }
        schedule(loop.clock.now() + interval())
    }

    public func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
        deadline = nil
    }

    private func schedule(_ next: Instant) {
        deadline = next
        timer = loop.schedule(at: next) { [weak self] in self?.fire() }
    }

    private func fire() {
        guard var deadline else { return }
        let now = loop.clock.now()
        if now - deadline > maximumLateness {
            deadline = now
            resets += 1
        }
        action(deadline)
        // The action may have stopped the tick.
        guard self.deadline != nil else { return }
        schedule(deadline + interval())
    }
}
