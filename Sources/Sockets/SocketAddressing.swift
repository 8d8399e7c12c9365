import Foundation
import Wire


/// Why a listen address in the config could not be read.
public enum AddressParseError: Error, Equatable, CustomStringConvertible {
    case missingPort(String), badPort(String), badHost(String)
    public var description: String {
        switch self {
        case .missingPort(let s): "\"\(s)\" has no port (write HOST:PORT)"
        case .badPort(let s): "\"\(s)\" has a port outside 0...65535"
        case .badHost(let s): "\"\(s)\" is not an IPv4 or IPv6 address"
        }
    }
}

/// The socket boundary: config text and `sockaddr` structures to and from `TransportAddress`.
extension TransportAddress {
    /// The address socket `fd` is bound to (the port the kernel chose after binding port 0).
    static func bound(to fd: Int32) -> TransportAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return status == 0 ? TransportAddress(storage) : nil
    }

    /// Reads `127.0.0.1:8080` or `[::1]:8080`.
    public init(parsing text: String) throws(AddressParseError) {
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
        for (family, count) in [(AF_INET, 4), (AF_INET6, 16)] {
            var bytes = [UInt8](repeating: 0, count: count)
            let converted = bytes.withUnsafeMutableBytes { inet_pton(family, String(host), $0.baseAddress) }
            if converted == 1, let address = TransportAddress(addressBytes: bytes, port: port) {
                self = address
                return
            }
        }
        throw .badHost(text)
    }

    /// True for 127.0.0.0/8 and ::1: traffic that cannot leave the machine.
    public var isLoopback: Bool {
        switch ip {
        case .v4(let address): address >> 24 == 127
        case .v6(let high, let low): high == 0 && low == 1
        }
    }

    /// True for 0.0.0.0 and ::, which a socket binds to mean "every interface" and no peer can
    /// send to.
    public var isUnspecified: Bool {
        switch ip {
        case .v4(let address): address == 0
        case .v6(let high, let low): high == 0 && low == 0
        }
    }

    /// The address a socket call filled in; nil for a family other than IPv4 and IPv6. Read in
    /// place, with no array made: every datagram received comes through here.
    init?(_ storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            self = withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in.self)
                return TransportAddress(ip: .v4(UInt32(bigEndian: address.sin_addr.s_addr)), port: UInt16(bigEndian: address.sin_port))
            }
        case AF_INET6:
            self = withUnsafeBytes(of: &storage) { raw in
                let address = raw.load(as: sockaddr_in6.self)
                let (high, low) = withUnsafeBytes(of: address.sin6_addr) { bytes in
                    (UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                     UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
                }
                return TransportAddress(ip: .v6(high: high, low: low), port: UInt16(bigEndian: address.sin6_port))
            }
        default:
            return nil
        }
    }

    /// Writes this address as a `sockaddr_in` or `sockaddr_in6`; returns its length.
    public func store(into storage: inout sockaddr_storage) -> socklen_t {
        withUnsafeMutableBytes(of: &storage) { raw in
            if isIPv4 {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = port.bigEndian
                withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: addressBytes) }
                raw.storeBytes(of: address, as: sockaddr_in.self)
                return socklen_t(MemoryLayout<sockaddr_in>.size)
            }
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: addressBytes) }
            raw.storeBytes(of: address, as: sockaddr_in6.self)
            return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    }

    /// Calls `body` with this address as a socket address.
    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        var storage = sockaddr_storage()
        let length = store(into: &storage)
        return try withUnsafePointer(to: &storage) { try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) } }
    }
}
