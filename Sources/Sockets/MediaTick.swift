import Wire

/// A media clock on the loop: `action(deadline)` at each deadline of a `TickSchedule` (the
/// previous deadline plus the interval; a tick later than `maximumLateness` restarts the grid
/// from now, counted in `resets`).
public final class MediaTick {
    private let loop: EventLoop
    private let interval: () -> Duration
    private let action: (Instant) -> Void
    private var timer: EventLoop.TimerToken?
    private var schedule: TickSchedule
    /// Ticks that came over `maximumLateness` late.
    public var resets: Int { schedule.resets }

    /// `interval` is asked at each tick (a video template can change the frame rate).
    public init(loop: EventLoop, interval: @escaping () -> Duration, maximumLateness: Duration, action: @escaping (Instant) -> Void) {
        self.loop = loop
        self.interval = interval
        schedule = TickSchedule(maximumLateness: maximumLateness)
        self.action = action
    }

    public var isRunning: Bool { timer != nil }

    public func start() {
        guard timer == nil else { return }
        schedule.start(now: loop.clock.now(), interval: interval())
        arm()
    }

    public func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
        schedule.stop()
    }

    private func arm() {
        guard let next = schedule.next else { return }
        timer = loop.schedule(at: next) { [weak self] in self?.fire() }
    }

    private func fire() {
        guard let deadline = schedule.due(now: loop.clock.now(), interval: interval()) else { return arm() }
        action(deadline)
        // The action may have stopped the tick.
        guard schedule.isRunning else { return }
        arm()
    }
}
