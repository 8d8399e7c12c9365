/// Appends network-order (big-endian) integers to a growing buffer.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }

    public mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func u24(_ value: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func u32(_ value: UInt32) {
        u16(UInt16(truncatingIfNeeded: value >> 16))
        u16(UInt16(truncatingIfNeeded: value))
    }

    public mutating func u64(_ value: UInt64) {
        u32(UInt32(truncatingIfNeeded: value >> 32))
        u32(UInt32(truncatingIfNeeded: value))
    }

    public mutating func append<S: Sequence>(_ other: S) where S.Element == UInt8 { bytes.append(contentsOf: other) }

    public mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// Pads with zeros to a multiple of `alignment` bytes.
    public mutating func pad(to alignment: Int) {
        let extra = bytes.count % alignment
        if extra != 0 { zeros(alignment - extra) }
    }

    /// Overwrites two bytes already written, for length fields known only at the end.
    public mutating func setU16(_ value: UInt16, at offset: Int) {
        bytes[offset] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    public mutating func setU32(_ value: UInt32, at offset: Int) {
        setU16(UInt16(truncatingIfNeeded: value >> 16), at: offset)
        setU16(UInt16(truncatingIfNeeded: value), at: offset + 2)
    }
}
