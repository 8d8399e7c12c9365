/// Extends 16-bit RTP sequence numbers to 64 bits (RFC 3550 Appendix A.1): each number is placed
/// at the extended value nearest the previous one, so reordering across the wrap and backward jumps
/// of less than half the space come out right.
///
/// A forward distance of exactly 32768 counts as backward. The first number unwraps to itself;
/// numbers before it can come out negative.
public struct SequenceUnwrapper: Equatable, Sendable {
    private var last: Int64?

    /// An unwrapper that has seen nothing.
    public init() {}

    /// The last extended value returned, if any.
    public var lastUnwrapped: Int64? { last }

    /// The extended value of `sequenceNumber`, without recording it.
    public func peek(_ sequenceNumber: UInt16) -> Int64 {
        guard let last else { return Int64(sequenceNumber) }
        let previous = UInt16(truncatingIfNeeded: last)
        return last + Int64(Int16(bitPattern: sequenceNumber &- previous))
    }

    /// The extended value of `sequenceNumber`; later numbers are placed relative to it.
    public mutating func unwrap(_ sequenceNumber: UInt16) -> Int64 {
        let value = peek(sequenceNumber)
        last = value
        return value
    }
}

/// Extends 32-bit RTP timestamps to 64 bits, the same way `SequenceUnwrapper` does for sequence
/// numbers: each timestamp lands nearest the previous one (within 2^31 either way).
public struct TimestampUnwrapper: Equatable, Sendable {
    private var last: Int64?

    /// An unwrapper that has seen nothing.
    public init() {}

    /// The last extended value returned, if any.
    public var lastUnwrapped: Int64? { last }

    /// The extended value of `timestamp`, without recording it.
    public func peek(_ timestamp: UInt32) -> Int64 {
        guard let last else { return Int64(timestamp) }
        let previous = UInt32(truncatingIfNeeded: last)
        return last + Int64(Int32(bitPattern: timestamp &- previous))
    }

    /// The extended value of `timestamp`; later timestamps are placed relative to it.
    public mutating func unwrap(_ timestamp: UInt32) -> Int64 {
        let value = peek(timestamp)
        last = value
        return value
    }
}
