/// Reading past the end of the bytes a parser was given.
public struct Truncated: Error, Equatable, Sendable {
    /// Bytes the read wanted.
    public let needed: Int
    /// Where the read started.
    public let offset: Int
    public init(needed: Int, offset: Int) {
        self.needed = needed
        self.offset = offset
    }
}

/// A cursor over received bytes that reads network-order (big-endian) integers and never reads
/// out of bounds: a read past the end throws `Truncated` and leaves the cursor where it was.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    /// Offset of the next byte to read.
    public private(set) var offset: Int
    /// Reads stop here (a sub-range of `bytes` can be read as if it were the whole).
    public let end: Int

    public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.end = min(end ?? bytes.count, bytes.count)
        self.offset = min(max(0, start), self.end)
    }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }

    @inline(__always)
    private func need(_ count: Int) throws(Truncated) {
        guard count >= 0, count <= end - offset else { throw Truncated(needed: count, offset: offset) }
    }

    public mutating func u8() throws(Truncated) -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func u16() throws(Truncated) -> UInt16 {
        try need(2)
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    public mutating func u24() throws(Truncated) -> UInt32 {
        try need(3)
        defer { offset += 3 }
        return UInt32(bytes[offset]) << 16 | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2])
    }

    public mutating func u32() throws(Truncated) -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    public mutating func u64() throws(Truncated) -> UInt64 {
        let high = try u32()
        let low = try u32()
        return UInt64(high) << 32 | UInt64(low)
    }

    public mutating func bytes(_ count: Int) throws(Truncated) -> ArraySlice<UInt8> {
        try need(count)
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    public mutating func skip(_ count: Int) throws(Truncated) {
        try need(count)
        offset += count
    }

    /// The next byte without consuming it.
    public func peek() throws(Truncated) -> UInt8 {
        try need(1)
        return bytes[offset]
    }

    /// A reader over the next `count` bytes; this cursor moves past them.
    public mutating func subReader(_ count: Int) throws(Truncated) -> ByteReader {
        try need(count)
        defer { offset += count }
        return ByteReader(bytes, from: offset, to: offset + count)
    }

    /// The unread bytes.
    public var rest: ArraySlice<UInt8> { bytes[offset..<end] }
}
