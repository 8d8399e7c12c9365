import Foundation

/// A thread running an event loop until `stop()`, which waits for the loop to return: after it,
/// whatever the loop's handlers reference may be released from any thread. (Asking the loop to
/// stop and letting go of its sockets at once would free them under a handler still running.)
public final class EventLoopThread: @unchecked Sendable {
    public let loop: EventLoop
    private let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stopped = false

    /// Starts `loop.run()` on a new thread named `name`.
    public init(_ loop: EventLoop, name: String = "tessera-loop") {
        self.loop = loop
        startNamedThread(name) { [loop, finished] in
            loop.run()
            finished.signal()
        }
    }

    /// Stops the loop and waits for its thread to end; later calls return at once.
    public func stop() {
        let first = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        loop.stop()
        finished.wait()
    }
}
