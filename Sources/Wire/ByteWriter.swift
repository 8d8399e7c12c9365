/// Appends network-order (big-endian) integers to a growing buffer.
/// `@inlinable` throughout, like `ByteReader`: serializers in other modules call it per field.
public struct ByteWriter: Sendable {
    @usableFromInline var storage: [UInt8]

    /// What has been written.
    @inlinable public var bytes: [UInt8] { storage }

    @inlinable
    public init(capacity: Int = 0) {
        storage = []
        storage.reserveCapacity(capacity)
    }

    @inlinable public var count: Int { storage.count }

    @inlinable public mutating func u8(_ value: UInt8) { storage.append(value) }

    @inlinable public mutating func u16(_ value: UInt16) {
        storage.append(UInt8(truncatingIfNeeded: value >> 8))
        storage.append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable public mutating func u24(_ value: UInt32) {
        storage.append(UInt8(truncatingIfNeeded: value >> 16))
        storage.append(UInt8(truncatingIfNeeded: value >> 8))
        storage.append(UInt8(truncatingIfNeeded: value))
    }

    @inlinable public mutating func u32(_ value: UInt32) {
        u16(UInt16(truncatingIfNeeded: value >> 16))
        u16(UInt16(truncatingIfNeeded: value))
    }

    @inlinable public mutating func u64(_ value: UInt64) {
        u32(UInt32(truncatingIfNeeded: value >> 32))
        u32(UInt32(truncatingIfNeeded: value))
    }

    @inlinable public mutating func append<S: Sequence>(_ other: S) where S.Element == UInt8 { storage.append(contentsOf: other) }

    @inlinable public mutating func zeros(_ count: Int) { storage.append(contentsOf: repeatElement(0, count: count)) }

    /// Pads with zeros to a multiple of `alignment` bytes.
    @inlinable public mutating func pad(to alignment: Int) {
        let extra = storage.count % alignment
        if extra != 0 { zeros(alignment - extra) }
    }

    /// Overwrites two bytes already written, for length fields known only at the end.
    @inlinable public mutating func setU16(_ value: UInt16, at offset: Int) {
        storage[offset] = UInt8(truncatingIfNeeded: value >> 8)
        storage[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    @inlinable public mutating func setU32(_ value: UInt32, at offset: Int) {
        setU16(UInt16(truncatingIfNeeded: value >> 16), at: offset)
        setU16(UInt16(truncatingIfNeeded: value), at: offset + 2)
    }
}
