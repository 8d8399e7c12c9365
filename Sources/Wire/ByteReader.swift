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
///
/// Everything is `@inlinable`: parsers in other modules read through it per byte, and a call
/// across modules per byte would cost more than the read.
public struct ByteReader: Sendable {
    public let bytes: [UInt8]
    @usableFromInline var position: Int
    /// Reads stop here (a sub-range of `bytes` can be read as if it were the whole).
    public let end: Int

    /// Offset of the next byte to read.
    @inlinable public var offset: Int { position }

    @inlinable
    public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        self.end = min(end ?? bytes.count, bytes.count)
        self.position = min(max(0, start), self.end)
    }

    @inlinable public var remaining: Int { end - position }
    @inlinable public var isAtEnd: Bool { position >= end }

    @inlinable @inline(__always)
    func need(_ count: Int) throws(Truncated) {
        guard count >= 0, count <= end - position else { throw Truncated(needed: count, offset: position) }
    }

    @inlinable public mutating func u8() throws(Truncated) -> UInt8 {
        try need(1)
        defer { position += 1 }
        return bytes[position]
    }

    @inlinable public mutating func u16() throws(Truncated) -> UInt16 {
        try need(2)
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    @inlinable public mutating func u24() throws(Truncated) -> UInt32 {
        try need(3)
        defer { position += 3 }
        return UInt32(bytes[position]) << 16 | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2])
    }

    @inlinable public mutating func u32() throws(Truncated) -> UInt32 {
        try need(4)
        defer { position += 4 }
        return UInt32(bytes[position]) << 24 | UInt32(bytes[position + 1]) << 16
            | UInt32(bytes[position + 2]) << 8 | UInt32(bytes[position + 3])
    }

    @inlinable public mutating func u64() throws(Truncated) -> UInt64 {
        let high = try u32()
        let low = try u32()
        return UInt64(high) << 32 | UInt64(low)
    }

    @inlinable public mutating func bytes(_ count: Int) throws(Truncated) -> ArraySlice<UInt8> {
        try need(count)
        defer { position += count }
        return bytes[position..<position + count]
    }

    @inlinable public mutating func skip(_ count: Int) throws(Truncated) {
        try need(count)
        position += count
    }

    /// The next byte without consuming it.
    @inlinable public func peek() throws(Truncated) -> UInt8 {
        try need(1)
        return bytes[position]
    }

    /// A reader over the next `count` bytes; this cursor moves past them.
    @inlinable public mutating func subReader(_ count: Int) throws(Truncated) -> ByteReader {
        try need(count)
        defer { position += count }
        return ByteReader(bytes, from: position, to: position + count)
    }

    /// The unread bytes.
    @inlinable public var rest: ArraySlice<UInt8> { bytes[position..<end] }
}
