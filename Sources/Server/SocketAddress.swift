import Foundation

/// An IPv4 or IPv6 address with a port, as written in the config: `127.0.0.1:8080`, `[::1]:8080`.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    public enum Family: Sendable, Hashable { case v4, v6 }
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case missingPort(String), badPort(String), badHost(String)
        public var description: String {
            switch self {
            case .missingPort(let s): "\"\(s)\" has no port (write HOST:PORT)"
            case .badPort(let s): "\"\(s)\" has a port outside 0...65535"
            case .badHost(let s): "\"\(s)\" is not an IPv4 or IPv6 address"
            }
        }
    }

    public let family: Family
    /// Address bytes in network order: 4 for IPv4, 16 for IPv6.
    public let addressBytes: [UInt8]
    public let port: UInt16

    public init(parsing text: String) throws(ParseError) {
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .badHost(text) }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .missingPort(text) }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .missingPort(text) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = UInt16(portText) else { throw .badPort(text) }
        if let bytes = Self.presentationToNetwork(AF_INET, String(host), count: 4) {
            self.init(family: .v4, addressBytes: bytes, port: port)
        } else if let bytes = Self.presentationToNetwork(AF_INET6, String(host), count: 16) {
            self.init(family: .v6, addressBytes: bytes, port: port)
        } else {
            throw .badHost(text)
        }
    }

    public init(family: Family, addressBytes: [UInt8], port: UInt16) {
        self.family = family
        self.addressBytes = addressBytes
        self.port = port
    }

    /// True for 127.0.0.0/8 and ::1: traffic that cannot leave the machine.
    public var isLoopback: Bool {
        switch family {
        case .v4: addressBytes.first == 127
        case .v6: addressBytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = addressBytes.withUnsafeBytes { raw in
            inet_ntop(family == .v4 ? AF_INET : AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { family == .v4 ? "\(host):\(port)" : "[\(host)]:\(port)" }

    public func withPort(_ port: UInt16) -> SocketAddress {
        SocketAddress(family: family, addressBytes: addressBytes, port: port)
    }

    /// Calls `body` with this address as a `sockaddr_in` or `sockaddr_in6`.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        switch family {
        case .v4:
            var sa = sockaddr_in()
            sa.sin_family = sa_family_t(AF_INET)
            sa.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin_addr) { $0.copyBytes(from: addressBytes) }
            return try withUnsafePointer(to: &sa) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6:
            var sa = sockaddr_in6()
            sa.sin6_family = sa_family_t(AF_INET6)
            sa.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sa.sin6_addr) { $0.copyBytes(from: addressBytes) }
            return try withUnsafePointer(to: &sa) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    private static func presentationToNetwork(_ family: Int32, _ host: String, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBytes { inet_pton(family, host, $0.baseAddress) }
        return ok == 1 ? bytes : nil
    }
}
