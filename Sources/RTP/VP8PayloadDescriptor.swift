// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// A VP8 picture id (RFC 7741 §4.2): 7 bits, or 15 bits when the M bit is set.
public enum VP8PictureID: Hashable, Sendable {
    /// A 7-bit id; serialization keeps the low 7 bits.
    case short(UInt8)
    /// A 15-bit id; serialization keeps the low 15 bits.
    case long(UInt16)

    /// The id as a number.
    public var value: UInt16 {
        switch self {
        case .short(let id): UInt16(id & 0x7F)
        case .long(let id): id & 0x7FFF
        }
    }
}

/// The temporal layer fields of the descriptor (RFC 7741 §4.2, T bit).
public struct VP8TemporalLayer: Hashable, Sendable {
    /// TID: the temporal layer index, 0...3.
    public var index: UInt8
    /// Y: layer sync, the frame depends only on the base layer.
    public var layerSync: Bool

    /// Layer fields with these values.
    public init(index: UInt8, layerSync: Bool = false) {
        self.index = index
        self.layerSync = layerSync
    }
}

/// The VP8 payload descriptor that starts every VP8 RTP payload (RFC 7741 §4.2).
///
/// ```
///      0 1 2 3 4 5 6 7
///     +-+-+-+-+-+-+-+-+
///     |X|R|N|S|R| PID | (REQUIRED)
///     +-+-+-+-+-+-+-+-+
/// X:  |I|L|T|K| RSV   | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// I:  |M| PictureID   | (OPTIONAL, 7 or 15 bits)
///     +-+-+-+-+-+-+-+-+
/// L:  |   TL0PICIDX   | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// T/K:|TID|Y| KEYIDX  | (OPTIONAL)
///     +-+-+-+-+-+-+-+-+
/// ```
public struct VP8PayloadDescriptor: Hashable, Sendable {
    /// N: the frame is not used as a reference by other frames, so losing it harms nothing after it.
    public var nonReference: Bool
    /// S: the payload starts a VP8 partition.
    public var startOfPartition: Bool
    /// PID: the partition index, 0...7 (serialization keeps 3 bits).
    public var partitionIndex: UInt8
    /// I: the picture id, which increases by one per frame.
    public var pictureID: VP8PictureID?
    /// L: the temporal level zero picture index.
    public var tl0PictureIndex: UInt8?
    /// T: the temporal layer.
    public var temporalLayer: VP8TemporalLayer?
    /// K: the temporal key frame index, 5 bits.
    public var keyIndex: UInt8?

    /// A descriptor with these fields.
    public init(
        nonReference: Bool = false, startOfPartition: Bool = false, partitionIndex: UInt8 = 0,
        pictureID: VP8PictureID? = nil, tl0PictureIndex: UInt8? = nil, temporalLayer: VP8TemporalLayer? = nil,
        keyIndex: UInt8? = nil
    ) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayer = temporalLayer
        self.keyIndex = keyIndex
    }

    /// The payload starts a frame: S set and partition 0 (RFC 7741 §4.4).
    public var isStartOfFrame: Bool { startOfPartition && partitionIndex == 0 }

    /// Whether an RTP payload begins a VP8 key frame: the start of partition 0 (RFC 7741 §4.4)
    /// whose frame tag has P = 0 (RFC 6386 §9.1). False for anything unreadable.
    public static func beginsKeyFrame(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let (descriptor, length) = try? parse(payload), descriptor.isStartOfFrame,
              let first = payload.dropFirst(length).first else { return false }
        return VP8FrameHeader.isKeyFrame(firstByte: first)
    }

    /// The picture size of the key frame `payload` begins (its first packet carries the frame
    /// header, RFC 6386 §9.1), or nil when it begins none or is malformed.
    public static func keyFrameSize(_ payload: ArraySlice<UInt8>) -> VP8KeyFrameSize? {
        guard let (descriptor, length) = try? parse(payload), descriptor.isStartOfFrame,
              let header = try? VP8FrameHeader.parse(payload.dropFirst(length)), header.isKeyFrame else { return nil }
        return header.keyFrameSize
    }

    /// Reads the descriptor at the start of `payload`; returns it and the number of bytes it took.
    public static func parse(_ payload: ArraySlice<UInt8>) throws(VP8ParseError) -> (VP8PayloadDescriptor, Int) {
        let start = payload.startIndex
        let end = payload.endIndex
        var index = start
        @inline(__always) func next() throws(VP8ParseError) -> UInt8 {
            guard index < end else { throw .truncated(Truncated(needed: 1, offset: index - start)) }
            defer { index += 1 }
            return payload[index]
        }
        let first = try next()
        var descriptor = VP8PayloadDescriptor(
            nonReference: first & 0x20 != 0, startOfPartition: first & 0x10 != 0, partitionIndex: first & 0x07)
        if first & 0x80 != 0 {
            let extensions = try next()
            if extensions & 0x80 != 0 {
                let high = try next()
                if high & 0x80 != 0 {
                    descriptor.pictureID = .long(UInt16(high & 0x7F) << 8 | UInt16(try next()))
                } else {
                    descriptor.pictureID = .short(high)
                }
            }
            if extensions & 0x40 != 0 { descriptor.tl0PictureIndex = try next() }
            if extensions & 0x30 != 0 {
                let layer = try next()
                if extensions & 0x20 != 0 {
                    descriptor.temporalLayer = VP8TemporalLayer(index: layer >> 6, layerSync: layer & 0x20 != 0)
                }
                if extensions & 0x10 != 0 { descriptor.keyIndex = layer & 0x1F }
            }
        }
        return (descriptor, index - start)
    }

    /// Bytes `serialize` writes.
    public var serializedSize: Int {
        var size = 1
        if pictureID != nil || tl0PictureIndex != nil || temporalLayer != nil || keyIndex != nil { size += 1 }
        switch pictureID {
        case .none: break
        case .short: size += 1
        case .long: size += 2
        }
        if tl0PictureIndex != nil { size += 1 }
        if temporalLayer != nil || keyIndex != nil { size += 1 }
        return size
    }

    /// Appends the descriptor; the X byte is written only when an optional field is present.
    public func serialize(into bytes: inout [UInt8]) {
        let hasLayer = temporalLayer != nil || keyIndex != nil
        let extended = pictureID != nil || tl0PictureIndex != nil || hasLayer
        bytes.append(
            (extended ? 0x80 : 0) | (nonReference ? 0x20 : 0) | (startOfPartition ? 0x10 : 0) | (partitionIndex & 0x07))
        guard extended else { return }
        bytes.append(
            (pictureID != nil ? 0x80 : 0) | (tl0PictureIndex != nil ? 0x40 : 0) | (temporalLayer != nil ? 0x20 : 0)
                | (keyIndex != nil ? 0x10 : 0))
        switch pictureID {
        case .none: break
        case .short(let id): bytes.append(id & 0x7F)
        case .long(let id):
            bytes.append(0x80 | UInt8(truncatingIfNeeded: id >> 8) & 0x7F)
            bytes.append(UInt8(truncatingIfNeeded: id))
        }
        if let tl0PictureIndex { bytes.append(tl0PictureIndex) }
        if hasLayer {
            var layer: UInt8 = 0
            if let temporalLayer { layer |= (temporalLayer.index & 0x03) << 6 | (temporalLayer.layerSync ? 0x20 : 0) }
            if let keyIndex { layer |= keyIndex & 0x1F }
            bytes.append(layer)
        }
    }

    /// The descriptor as bytes.
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(serializedSize)
        serialize(into: &bytes)
        return bytes
    }
}
