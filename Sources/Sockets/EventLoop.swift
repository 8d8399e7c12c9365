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
    private var deadlines = DeadlineHeap()
    private var timers: [UInt64: () -> Void] = [:]
    private var nextTimerID: UInt64 = 0
    // Shared with other threads, under `lock`.
    private let lock = NSLock()
    private var injected: [@Sendable () -> Void] = []
    private var stopping = false
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
        readHandlers[fd] = handler
        try add(fd: fd)
    }

    public func unwatch(fd: Int32) {
        readHandlers[fd] = nil
        epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil)
    }

    /// Runs `work` on the loop thread at `deadline` (at once if it has passed). Loop thread only.
    @discardableResult
    public func schedule(at deadline: Instant, _ work: @escaping () -> Void) -> TimerToken {
        nextTimerID += 1
        timers[nextTimerID] = work
        deadlines.push(deadline, id: nextTimerID)
        return TimerToken(id: nextTimerID)
    }

    public func cancel(_ token: TimerToken) { timers[token.id] = nil }

    /// Runs `work` on the loop thread soon. Any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        lock.withLock { injected.append(work) }
        var one: UInt64 = 1
        _ = write(wakeup, &one, 8)
    }

    /// True when called on the loop's own thread.
    public var inLoop: Bool {
        guard let loopThread = lock.withLock({ self.loopThread }) else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    /// Serves events until `stop()`. Call from the thread that is to own the loop.
    public func run() {
        lock.withLock { loopThread = pthread_self() }
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while !lock.withLock({ stopping }) {
            let ready = epoll_wait(epoll, &events, Int32(events.count), waitMilliseconds())
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

/// A binary min-heap of (deadline, timer id); ties keep scheduling order.
struct DeadlineHeap {
    private var entries: [(deadline: Instant, id: UInt64)] = []

    var isEmpty: Bool { entries.isEmpty }
    func peek() -> Instant? { entries.first?.deadline }
    func peekEntry() -> (Instant, UInt64)? { entries.first.map { ($0.deadline, $0.id) } }

    private static func less(_ a: (deadline: Instant, id: UInt64), _ b: (deadline: Instant, id: UInt64)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    mutating func push(_ deadline: Instant, id: UInt64) {
        entries.append((deadline, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count, Self.less(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, Self.less(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// State that belongs to one loop's thread, carried through `Sendable` closures that run there.
/// Only code running on that loop may touch `value`.
public final class LoopConfined<Value>: @unchecked Sendable {
    public var value: Value
    public init(_ value: Value) { self.value = value }
}
