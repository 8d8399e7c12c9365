/// An IP address and a UDP port: where a datagram came from or goes to, as STUN reports it in
/// MAPPED-ADDRESS and XOR-MAPPED-ADDRESS (RFC 8489 §14.1, §14.2) and as ICE names a candidate
/// (RFC 8445 §5.1.1). Stored as integers in network order, so it is cheap to copy, hash and
/// compare on the per-packet path; no allocation.
///
/// (Sockets adds parsing from config text and conversion to and from `sockaddr` at the socket
/// boundary.)
public struct TransportAddress: Sendable, Hashable, CustomStringConvertible {
    /// The IP half of a transport address.
    public enum IP: Sendable, Hashable {
        /// An IPv4 address as a 32-bit integer in network order: 192.0.2.1 is `0xC000_0201`.
        case v4(UInt32)
        /// An IPv6 address as two 64-bit halves in network order: `high` holds bytes 0..<8.
        case v6(high: UInt64, low: UInt64)
    }

    /// The IP address.
    public var ip: IP
    /// The UDP port.
    public var port: UInt16

    /// A transport address from an IP address and a port.
    public init(ip: IP, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// An IPv4 transport address from its four dotted-quad octets: `TransportAddress(ipv4: 192, 0, 2, 1, port: 3478)`.
    public init(ipv4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) {
        ip = .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d))
        self.port = port
    }

    /// A transport address from address bytes in network order: 4 for IPv4, 16 for IPv6; nil
    /// for any other count.
    public init?(addressBytes: some Collection<UInt8>, port: UInt16) {
        switch addressBytes.count {
        case 4:
            ip = .v4(addressBytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            var high: UInt64 = 0, low: UInt64 = 0
            for (index, byte) in addressBytes.enumerated() {
                if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            }
            ip = .v6(high: high, low: low)
        default:
            return nil
        }
        self.port = port
    }

    /// True for an IPv4 address.
    public var isIPv4: Bool {
        if case .v4 = ip { return true }
        return false
    }

    /// The address bytes in network order: 4 for IPv4, 16 for IPv6.
    public var addressBytes: [UInt8] {
        switch ip {
        case .v4(let address):
            return (0..<4).map { UInt8(truncatingIfNeeded: address >> (24 - 8 * $0)) }
        case .v6(let high, let low):
            return (0..<16).map { index in
                let half = index < 8 ? high : low
                return UInt8(truncatingIfNeeded: half >> (56 - 8 * (index % 8)))
            }
        }
    }

    /// `192.0.2.1:32853` or `[2001:db8::1]:32853`, the IPv6 text in the RFC 5952 canonical form.
    public var description: String {
        switch ip {
        case .v4(let address):
            let octets = (0..<4).map { String(UInt8(truncatingIfNeeded: address >> (24 - 8 * $0))) }
            return octets.joined(separator: ".") + ":\(port)"
        case .v6(let high, let low):
            return "[\(Self.ipv6Text(high: high, low: low))]:\(port)"
        }
    }

    /// RFC 5952 §4: lowercase hex, no leading zeros, the longest run of two or more zero groups
    /// (the first one on a tie) written as `::`.
    private static func ipv6Text(high: UInt64, low: UInt64) -> String {
        let groups: [UInt16] = (0..<8).map { index in
            let half = index < 4 ? high : low
            return UInt16(truncatingIfNeeded: half >> (48 - 16 * (index % 4)))
        }
        var bestStart = -1, bestLength = 1, runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                if index - runStart > bestLength { bestStart = runStart; bestLength = index - runStart }
                runStart = -1
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestStart >= 0 else { return hex.joined(separator: ":") }
        let head = hex[..<bestStart].joined(separator: ":")
        let tail = hex[(bestStart + bestLength)...].joined(separator: ":")
        return head + "::" + tail
    }
}
