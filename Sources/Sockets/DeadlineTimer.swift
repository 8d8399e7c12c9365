import Wire

/// One timer on the loop for an engine that says when it next needs the time
/// (`nextTimeout`): `arm(at:)` after every call into the engine. An earlier timer already armed
/// is kept (it fires, the engine finds nothing due and says its next deadline again), so a
/// deadline that moves later costs nothing, and one that moves earlier re-arms.
public final class DeadlineTimer {
    private let loop: EventLoop
    private var token: EventLoop.TimerToken?
    private var armedAt: Instant?
    /// Called on the loop with the time when the deadline has come.
    public var action: ((Instant) -> Void)?

    public init(loop: EventLoop) { self.loop = loop }

    /// Makes sure the action runs by `deadline`.
    public func arm(at deadline: Instant) {
        if let armedAt, armedAt <= deadline { return }
        if let token { loop.cancel(token) }
        armedAt = deadline
        // Unowned, not weak: a weak reference would give every timer a side table and each of its
        // retains (one per datagram, at the re-arm) the runtime's slow path. Safe, because deinit
        // cancels the scheduled work and the loop runs no work cancelled.
        token = loop.schedule(at: deadline) { [unowned self] in
            self.token = nil
            self.armedAt = nil
            self.action?(self.loop.clock.now())
        }
    }

    public func cancel() {
        if let token { loop.cancel(token) }
        token = nil
        armedAt = nil
    }

    deinit {
        if let token { loop.cancel(token) }
    }
}
