import Foundation
import Wire

/// A non-blocking TCP listening socket (ICE-TCP passive candidates, RFC 6544).
public final class TCPListener {
    public let fd: Int32
    /// The bound address, with the port the kernel chose when asked for 0.
    public let localAddress: TransportAddress

    public init(bind address: TransportAddress, backlog: Int32 = 128) throws(UDPSocket.SocketError) {
        let family = address.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", address: address, errno: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockaddr({ bind(fd, $0, $1) }) == 0, listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw .system(call: "bind/listen (TCP)", address: address, errno: code)
        }
        self.fd = fd
        localAddress = TransportAddress.bound(to: fd) ?? address
    }

    /// The next waiting connection, non-blocking; nil when none waits.
    public func accept() -> TCPConnection? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.accept(fd, $0, &length)
            }
        }
        guard client >= 0 else { return nil }
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        guard let remote = TransportAddress(storage) else {
            close(client)
            return nil
        }
        var yes: Int32 = 1
        setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        return TCPConnection(fd: client, remote: remote)
    }

    deinit { close(fd) }
}

/// One accepted TCP connection, non-blocking: reads what has arrived, writes what it can and
/// keeps the rest (up to `maximumPendingBytes`; whole messages beyond it are refused, so a
/// stalled peer cannot grow the host's memory).
public final class TCPConnection {
    public let fd: Int32
    public let remote: TransportAddress
    /// Bytes written by `send` that the kernel has not taken yet.
    private var pending: [UInt8] = []
    private var pendingStart = 0
    public static let maximumPendingBytes = 512 * 1024
    /// Messages refused because the pending bytes were at their bound.
    public private(set) var messagesRefused = 0
    public private(set) var isClosed = false

    init(fd: Int32, remote: TransportAddress) {
        self.fd = fd
        self.remote = remote
    }

    /// What arrived since the last read (at most `limit` bytes); nil once the peer closed the
    /// connection or it failed.
    public func read(limit: Int = 64 * 1024) -> [UInt8]? {
        guard !isClosed else { return nil }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, limit, 0) }
        if count > 0 { return Array(buffer[..<count]) }
        if count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return [] }
        isClosed = true
        return nil
    }

    /// Queues `bytes` (one whole message) and writes what the kernel takes now; false when the
    /// message was refused (the pending bytes are at their bound) or the connection is closed.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard !isClosed else { return false }
        guard pending.count - pendingStart + bytes.count <= Self.maximumPendingBytes else {
            messagesRefused += 1
            return false
        }
        pending.append(contentsOf: bytes)
        flush()
        return true
    }

    /// Whether bytes wait for the kernel.
    public var hasPending: Bool { pendingStart < pending.count }

    /// Writes what waits, as far as the kernel takes it.
    public func flush() {
        while pendingStart < pending.count, !isClosed {
            let written = pending[pendingStart...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written > 0 {
                pendingStart += written
            } else if written < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                break
            } else {
                isClosed = true
            }
        }
        if pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        } else if pendingStart > 64 * 1024 {
            pending.removeSubrange(0..<pendingStart)
            pendingStart = 0
        }
    }

    deinit { close(fd) }
}
