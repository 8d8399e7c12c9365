/// A synchronization source identifier (RFC 3550 §3, §5.1): names one sender's RTP stream.
public struct SSRC: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    /// The 32-bit value carried on the wire.
    public var rawValue: UInt32

    /// The source with this 32-bit wire value.
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The source with this 32-bit wire value.
    @inlinable public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    /// The source written as an integer literal, as in tests and fixtures.
    @inlinable public init(integerLiteral value: UInt32) { rawValue = value }

    /// Orders sources by their wire value (for stable maps and logs).
    @inlinable public static func < (lhs: SSRC, rhs: SSRC) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The value in hexadecimal, as packet captures show it.
    public var description: String { "0x" + String(rawValue, radix: 16) }
}

/// An RTP payload type (RFC 3550 §5.1): the 7-bit number that SDP `a=rtpmap` binds to a codec.
public struct PayloadType: RawRepresentable, Hashable, Comparable, Sendable, ExpressibleByIntegerLiteral,
    CustomStringConvertible
{
    /// The value; only 0...127 fits on the wire.
    public var rawValue: UInt8

    /// The payload type with this number.
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The payload type with this number.
    @inlinable public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    /// The payload type written as an integer literal.
    @inlinable public init(integerLiteral value: UInt8) { rawValue = value }

    /// Orders payload types by number.
    @inlinable public static func < (lhs: PayloadType, rhs: PayloadType) -> Bool { lhs.rawValue < rhs.rawValue }
    /// The decimal number, as SDP writes it.
    public var description: String { String(rawValue) }
}
