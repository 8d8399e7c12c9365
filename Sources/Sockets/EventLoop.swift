import Foundation
import Wire
private import CLinux

/// One thread's event loop: `epoll` for readable sockets, deadlines kept in a heap (the wait
/// ends at the earliest one: no polling sleeps), and a queue for work sent from other threads,
/// woken through an `eventfd`. Everything registered runs on the loop's thread, so the engines
/// it drives need no locks.
public final class EventLoop: @unchecked Sendable {
    public struct TimerToken: Hashable, Sendable { fileprivate let id: UInt64 }
    public enum LoopError: Error, CustomStringConvertible {
        case system(call: String, errno: Int32)
        public var description: String {
            switch self {
            case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
            }
        }
    }

    public let clock: any MediaClock
    private let epoll: Int32
    private let wakeup: Int32
    // Touched only on the loop thread.
    private var readHandlers: [Int32: () -> Void] = [:]
    private var deadlines = DeadlineHeap<UInt64>()
    private var timers: [UInt64: () -> Void] = [:]
    private var nextTimerID: UInt64 = 0
    // Shared with other threads, under `lock`.
    private let lock = NSLock()
    private var injected: [@Sendable () -> Void] = []
    private var stopping = false
    private var running = false
    private var loopThread: pthread_t?

    public init(clock: any MediaClock = MonotonicClock()) throws(LoopError) {
        self.clock = clock
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw .system(call: "epoll_create1", errno: errno) }
        wakeup = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wakeup >= 0 else {
            close(epoll)
            throw .system(call: "eventfd", errno: errno)
        }
        try add(fd: wakeup)
    }

    deinit {
        close(wakeup)
        close(epoll)
    }

    /// Calls `handler` on the loop thread whenever `fd` is readable (level-triggered: read until
    /// EAGAIN or the handler is called again). Loop thread only, or before `run()`.
    public func watch(fd: Int32, onReadable handler: @escaping () -> Void) throws(LoopError) {
        assertConfined()
        readHandlers[fd] = handler
        try add(fd: fd)
    }

    /// Loop thread only, or before `run()`.
    public func unwatch(fd: Int32) {
        assertConfined()
        readHandlers[fd] = nil
        epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
    }

    /// Runs `work` on the loop thread at `deadline` (at once if it has passed). Loop thread
    /// only, or before `run()`.
    @discardableResult
    public func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> TimerToken {
        assertConfined()
        nextTimerID += 1
        timers[nextTimerID] = work
        deadlines.push(deadline, id: nextTimerID)
        return TimerToken(id: nextTimerID)
    }

    /// Loop thread only, or before `run()`.
    public func cancel(_ token: TimerToken) {
        assertConfined()
        timers[token.id] = nil
    }

    /// True on the loop's thread, and on any thread before `run()` has started (set-up) or after
    /// it has returned (tear-down): the times when loop-confined state may be touched.
    public var isConfinedHere: Bool {
        lock.withLock {
            guard let loopThread, running else { return true }
            return pthread_equal(loopThread, pthread_self()) != 0
        }
    }

    /// Stops a debug build at a loop-confined call made from another thread while the loop runs.
    /// Release builds skip the check (it takes a lock).
    @inline(__always)
    func assertConfined(_ what: StaticString = "a loop-confined call", file: StaticString = #fileID, line: UInt = #line) {
        assert(isConfinedHere, "\(what) made off the event loop's thread", file: file, line: line)
    }

    /// Why `call` did not run its work.
    public enum CallError: Error, Equatable, CustomStringConvertible {
        /// Called on the loop's own thread: waiting there for the loop would never end.
        case onLoopThread
        /// The loop has stopped (or stops before the work ran).
        case stopped
        /// The loop did not get to the work in time.
        case timedOut(Duration)
        public var description: String {
            switch self {
            case .onLoopThread: "called on the event loop's own thread, which would wait for itself"
            case .stopped: "the event loop has stopped"
            case .timedOut(let limit): "the event loop did not answer within \(limit)"
            }
        }
    }

    /// Runs `body` on the loop thread and waits for its result: for other threads (HTTP
    /// handlers) that need loop-confined state. Refuses at once on the loop thread and after
    /// `stop()`; gives up after `timeout` (the work may still run later; its result is dropped).
    public func call<T: Sendable>(timeout: Duration = .seconds(10), _ body: @escaping @Sendable () throws -> T) throws -> T {
        let (onLoop, stopped) = lock.withLock { () -> (Bool, Bool) in
            (loopThread.map { running && pthread_equal($0, pthread_self()) != 0 } ?? false, stopping)
        }
        if onLoop { throw CallError.onLoopThread }
        if stopped { throw CallError.stopped }
        let done = DispatchSemaphore(value: 0)
        let outcome = LockedBox<Result<T, Error>?>(nil)
        execute {
            outcome.set(Result { try body() })
            done.signal()
        }
        // Wait in slices, so a loop that stops with the work still queued fails the call.
        let start = ContinuousClock.now
        while done.wait(timeout: .now() + .milliseconds(100)) == .timedOut {
            if lock.withLock({ stopping && !running }) { throw CallError.stopped }
            if ContinuousClock.now - start >= timeout { throw CallError.timedOut(timeout) }
        }
        guard let result = outcome.get() else { throw CallError.stopped }
        return try result.get()
    }

    /// Runs `work` on the loop thread soon. Any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { injected.append(work) }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    /// True when called on the loop's own thread while it runs.
    public var inLoop: Bool {
        lock.withLock { loopThread.map { running && pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// The time the loop has spent not waiting for events (wall clock, so time its thread was
    /// kept off a busy core counts too): its load. Read on the loop thread.
    public private(set) var busyTime: Duration = .zero

    /// Serves events until `stop()`. Call from the thread that is to own the loop.
    public func run() {
        lock.withLock {
            loopThread = pthread_self()
            running = true
        }
        defer { lock.withLock { running = false } }
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var awake = clock.now()
        while !lock.withLock({ stopping }) {
            let timeout = waitMilliseconds()
            busyTime += clock.now() - awake
            let ready = epoll_wait(epoll, &events, Int32(events.count), timeout)
            awake = clock.now()
            // Overdue deadlines first: work sent from other threads then sees their effects.
            runDueTimers()
            if ready > 0 {
                for event in events[..<Int(ready)] {
                    let fd = withUnsafePointer(to: event) { tessera_epoll_data_fd($0) }
                    if fd == wakeup { runInjected() } else { readHandlers[fd]?() }
                }
            }
        }
    }

    /// Makes `run()` return after the work in hand. Any thread.
    public func stop() {
        lock.withLock { stopping = true }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    private func add(fd: Int32) throws(LoopError) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = fd
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else { throw .system(call: "epoll_ctl", errno: errno) }
    }

    /// Until the earliest deadline, rounded up to a whole millisecond; -1 (forever) if none.
    private func waitMilliseconds() -> Int32 {
        guard let earliest = deadlines.peek() else { return -1 }
        let now = clock.now()
        guard earliest > now else { return 0 }
        let nanoseconds = earliest.nanoseconds - now.nanoseconds
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }

    private func runDueTimers() {
        let now = clock.now()
        while let (deadline, id) = deadlines.peekEntry(), deadline <= now {
            deadlines.pop()
            if let work = timers.removeValue(forKey: id) { work() }
        }
    }

    private func runInjected() {
        var count: UInt64 = 0
        _ = read(wakeup, &count, 8)
        let work = lock.withLock { () -> [@Sendable () -> Void] in
            defer { injected.removeAll(keepingCapacity: true) }
            return injected
        }
        for item in work { item() }
    }
}

/// State that belongs to one loop's thread, carried through `Sendable` closures that run there.
/// Only code running on that loop (or before it runs, or after it stops) may touch `value`; a
/// debug build stops at a touch from elsewhere.
public final class LoopConfined<Value>: @unchecked Sendable {
    private let loop: EventLoop
    private var confined: Value

    public init(_ value: Value, on loop: EventLoop) {
        confined = value
        self.loop = loop
    }

    public var value: Value {
        get {
            loop.assertConfined("LoopConfined.value read")
            return confined
        }
        _modify {
            loop.assertConfined("LoopConfined.value changed")
            yield &confined
        }
        set {
            loop.assertConfined("LoopConfined.value changed")
            confined = newValue
        }
    }
}

/// A value shared between threads under a lock.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
