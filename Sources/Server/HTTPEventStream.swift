import Foundation

/// A `text/event-stream` response body (server-sent events, HTML Living Standard §9.2) that
/// stays open: producers `send` events from any thread, and libmicrohttpd's thread for the
/// connection blocks in `read` until there is something to write. A comment line goes out every
/// 15 s so proxies and clients see the stream is alive. Bounded: a client that stops reading
/// loses the oldest events beyond 256 KiB, never the host's memory.
public final class HTTPEventStream: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var closed = false
    static let maxPendingBytes = 256 * 1024
    static let keepAlive: TimeInterval = 15

    public init() {}

    /// Queues one event; `data` may span lines (each becomes a `data:` line).
    public func send(event: String, data: String) {
        var text = "event: \(event)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        text += "\n"
        condition.withLock {
            guard !closed else { return }
            pending.append(contentsOf: text.utf8)
            if pending.count > Self.maxPendingBytes { pending.removeFirst(pending.count - Self.maxPendingBytes) }
            condition.signal()
        }
    }

    /// Ends the stream: the client sees the response end.
    public func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }

    public var isClosed: Bool { condition.withLock { closed } }

    /// Up to `max` bytes, waiting for some; nil once the stream is closed and drained.
    func read(max: Int) -> [UInt8]? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(Self.keepAlive)
        while pending.isEmpty && !closed {
            if !condition.wait(until: deadline) { return Array(":\n\n".utf8) }
        }
        if pending.isEmpty { return nil }
        let count = min(max, pending.count)
        defer { pending.removeFirst(count) }
        return Array(pending[..<count])
    }
}
