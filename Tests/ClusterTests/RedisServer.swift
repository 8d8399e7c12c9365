import Cluster
import Foundation

/// A real `redis-server` for one test: a free loopback port, no persistence, killed at the end.
/// Nil (and the reason) when redis-server is not installed; `scripts/setup.sh test` installs it.
final class RedisServer {
    let url: RedisURL
    private let process: Process

    static let executable = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static var missingReason: String? {
        executable == nil ? "redis-server is not installed (scripts/setup.sh test installs it): skipping the tests that need Redis" : nil
    }

    /// A server on `port`, or on a free one.
    init?(port given: Int? = nil) {
        guard let executable = Self.executable, let port = given ?? Self.freePort() else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                             "--loglevel", "warning"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        self.process = process
        url = RedisURL(host: "127.0.0.1", port: port)
        // Until it answers PING: at most 100 tries, 20 ms apart.
        let probe = RedisConnection(url: url, connectTimeout: .milliseconds(200))
        for _ in 0..<100 {
            if (try? probe.command(["PING"])) == .status("PONG") { return }
            usleep(20_000)
        }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return nil
    }

    // SIGKILL, not SIGTERM: the test runner's threads may hold SIGTERM blocked, a mask the
    // child inherits, and with persistence off there is nothing to shut down cleanly.
    deinit { kill() }

    /// Stops the server (as `kill -9` would end it for the clients). Twice is harmless.
    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A port nothing listens on now: bound to 0, read, closed.
    static func freePort() -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Int32 in
                guard bind(fd, sa, length) == 0 else { return -1 }
                return getsockname(fd, sa, &length)
            }
        }
        guard bound == 0 else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
