import Foundation
private import CHiredis

/// A Redis reply (RESP2, which hiredis 0.14 speaks), as Swift values: nothing of hiredis leaves
/// this file.
public indirect enum RedisReply: Sendable, Equatable {
    /// A bulk string: bytes, binary-safe.
    case string([UInt8])
    /// A status line such as `OK`.
    case status(String)
    case integer(Int64)
    /// A nil bulk string or nil array (a missing key).
    case null
    case array([RedisReply])
    /// An error reply (`ERR …`, `WRONGTYPE …`): the server's answer, not a failure to talk to it.
    case error(String)

    /// A bulk string or status as UTF-8 text; nil for anything else or bytes that are not UTF-8.
    public var text: String? {
        switch self {
        case .string(let bytes): String(validating: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of an array; nil for anything else.
    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Replies nested deeper than this are refused (hiredis itself stops at 7 levels).
    static let maximumDepth = 16

    /// Copies a hiredis reply; nil for an unknown type or one nested too deep.
    fileprivate init?(_ reply: UnsafePointer<redisReply>, depth: Int = 0) {
        guard depth <= Self.maximumDepth else { return nil }
        let r = reply.pointee
        switch r.type {
        case tessera_redis_reply_string():
            self = .string(r.str.map { pointer in
                Array(UnsafeRawBufferPointer(start: pointer, count: Int(clamping: r.len)).bindMemory(to: UInt8.self))
            } ?? [])
        case tessera_redis_reply_status():
            self = .status(r.str.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(clamping: r.len)), as: UTF8.self) } ?? "")
        case tessera_redis_reply_error():
            self = .error(r.str.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: Int(clamping: r.len)), as: UTF8.self) } ?? "")
        case tessera_redis_reply_integer():
            self = .integer(Int64(r.integer))
        case tessera_redis_reply_nil():
            self = .null
        case tessera_redis_reply_array():
            var elements: [RedisReply] = []
            let count = Int(clamping: r.elements)
            elements.reserveCapacity(min(count, 1024))
            if count > 0 {
                guard let vector = r.element else { return nil }
                for index in 0..<count {
                    guard let element = vector[index], let value = RedisReply(UnsafePointer(element), depth: depth + 1) else { return nil }
                    elements.append(value)
                }
            }
            self = .array(elements)
        default:
            return nil
        }
    }

    /// Parses one reply from RESP bytes with hiredis's own reader (what a connection uses on
    /// the socket): the reply, nil when the bytes end before it does, or `.protocol` for bytes
    /// that are not RESP. For tests, and for reading a reply kept as bytes.
    public static func parse(_ bytes: [UInt8]) throws(RedisError) -> RedisReply? {
        guard let reader = redisReaderCreate() else { throw .protocol("out of memory") }
        defer { redisReaderFree(reader) }
        let fed = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { redisReaderFeed(reader, $0.baseAddress, buffer.count) }
        }
        guard fed == tessera_redis_ok() else { throw .protocol(String(cString: tessera_redis_reader_error(reader))) }
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &raw) == tessera_redis_ok() else {
            throw .protocol(String(cString: tessera_redis_reader_error(reader)))
        }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        guard let reply = RedisReply(raw.assumingMemoryBound(to: redisReply.self)) else { throw .protocol("a reply of an unknown type") }
        return reply
    }
}

public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Could not connect (refused, unreachable, timed out, or SELECT refused).
    case connect(String)
    /// The connection failed during a command (closed, timed out): it is dropped, and the next
    /// command connects anew.
    case io(String)
    /// Bytes that are not RESP.
    case `protocol`(String)
    public var description: String {
        switch self {
        case .connect(let reason): "cannot connect to Redis: \(reason)"
        case .io(let reason): "Redis connection failed: \(reason)"
        case .protocol(let reason): "Redis protocol error: \(reason)"
        }
    }
}

/// `redis://HOST:PORT[/DB]`: the one form the config takes (no user, password or TLS: the
/// directory is meant for a private network or loopback).
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var database: Int

    public init(host: String, port: Int = 6379, database: Int = 0) {
        self.host = host
        self.port = port
        self.database = database
    }

    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case invalid(String)
        public var description: String { if case .invalid(let reason) = self { reason } else { "" } }
    }

    public init(parsing text: String) throws(ParseError) {
        guard text.utf8.count <= 512 else { throw .invalid("is longer than 512 bytes") }
        guard text.hasPrefix("redis://") else { throw .invalid("must start with redis:// (redis://HOST:PORT[/DB])") }
        var rest = Substring(text.dropFirst("redis://".count))
        guard !rest.contains("@") else { throw .invalid("takes no user or password (redis://HOST:PORT[/DB])") }
        guard !rest.contains("?"), !rest.contains("#") else { throw .invalid("takes no query or fragment") }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let tail = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !tail.isEmpty {
                guard tail.utf8.count <= 5, tail.allSatisfy(\.isASCII), tail.allSatisfy(\.isNumber), let number = Int(tail), (0...9999).contains(number) else {
                    throw .invalid("the database after / must be a number 0…9999, not \"\(tail.prefix(16))\"")
                }
                database = number
            }
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {  // [IPv6]:PORT
            guard let close = rest.firstIndex(of: "]") else { throw .invalid("an IPv6 address needs its closing ]") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .invalid("expected :PORT after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw .invalid("needs a host") }
        guard host.utf8.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) }) else {
            throw .invalid("\"\(host.prefix(64))\" is not a host name or an IP address")
        }
        var port = 6379
        if let portText {
            guard portText.utf8.count <= 5, !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(portText),
                  (1...65535).contains(number)
            else { throw .invalid("the port must be 1…65535, not \"\(portText.prefix(16))\"") }
            port = number
        }
        self.init(host: String(host), port: port, database: database)
    }

    public var description: String {
        "redis://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (database == 0 ? "" : "/\(database)")
    }
}

/// One blocking connection to Redis, for one thread: commands go as argv (binary-safe), each
/// bounded by `commandTimeout`. After a failure the connection is dropped and the next command
/// connects again (bounded by `connectTimeout`), so a Redis that went away and came back is
/// simply reached again. Not thread-safe: the cluster's worker thread owns it.
public final class RedisConnection {
    public let url: RedisURL
    public let connectTimeout: Duration
    public let commandTimeout: Duration
    private var context: UnsafeMutablePointer<redisContext>?

    public init(url: RedisURL, connectTimeout: Duration = .milliseconds(500), commandTimeout: Duration = .seconds(1)) {
        self.url = url
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    deinit { close() }

    public var isConnected: Bool { context != nil }

    /// Drops the connection; the next command connects again.
    public func close() {
        if let context { redisFree(context) }
        context = nil
    }

    private static func timeval(_ duration: Duration) -> Glibc.timeval {
        let (seconds, attoseconds) = duration.components
        return Glibc.timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
    }

    /// Connects when not connected (and selects the database).
    public func connect() throws(RedisError) {
        guard context == nil else { return }
        guard let made = redisConnectWithTimeout(url.host, Int32(url.port), Self.timeval(connectTimeout)) else {
            throw .connect("out of memory")
        }
        if tessera_redis_context_failed(made) != 0 {
            let reason = String(cString: tessera_redis_context_error(made))
            redisFree(made)
            throw .connect("\(url): \(reason)")
        }
        guard redisSetTimeout(made, Self.timeval(commandTimeout)) == tessera_redis_ok() else {
            redisFree(made)
            throw .connect("\(url): cannot set the command timeout")
        }
        context = made
        if url.database != 0 {
            let selected: RedisReply
            do { selected = try command(["SELECT", String(url.database)]) } catch { throw .connect("\(url): \(error)") }
            if case .error(let reason) = selected {
                close()
                throw .connect("\(url): SELECT \(url.database): \(reason)")
            }
        }
    }

    /// Sends one command and waits for its reply (an error reply is a reply, not a throw).
    public func command(_ arguments: [[UInt8]]) throws(RedisError) -> RedisReply {
        try connect()
        guard let context, !arguments.isEmpty, arguments.count <= Int(Int32.max) else { throw .io("no command") }
        // hiredis copies the arguments into its output buffer before it returns.
        var pointers: [UnsafePointer<CChar>?] = []
        var lengths: [Int] = []
        var storage: [UnsafeMutablePointer<CChar>] = []
        defer { storage.forEach { $0.deallocate() } }
        for argument in arguments {
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, argument.count))
            argument.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { if let base = $0.baseAddress { copy.update(from: base, count: $0.count) } }
            }
            storage.append(copy)
            pointers.append(UnsafePointer(copy))
            lengths.append(argument.count)
        }
        let raw = pointers.withUnsafeMutableBufferPointer { argv in
            lengths.withUnsafeBufferPointer { argvlen in
                redisCommandArgv(context, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
            }
        }
        guard let raw else {
            let reason = String(cString: tessera_redis_context_error(context))
            close()
            throw .io(reason.isEmpty ? "no reply" : reason)
        }
        defer { freeReplyObject(raw) }
        guard let reply = RedisReply(raw.assumingMemoryBound(to: redisReply.self)) else {
            close()
            throw .protocol("a reply of an unknown type")
        }
        return reply
    }

    /// `command` with text arguments.
    public func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        try command(arguments.map { Array($0.utf8) })
    }
}
