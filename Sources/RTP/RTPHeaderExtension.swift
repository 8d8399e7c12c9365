// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// One RTP header extension element (RFC 8285 §4): the SDP-negotiated local id and its data.
///
/// One-byte form (profile 0xBEDE, §4.2): ids 1...14, 1...16 bytes of data. Two-byte form
/// (profile 0x100X, §4.3): ids 1...255, 0...255 bytes of data.
public struct RTPHeaderExtension: Equatable, Sendable {
    /// The local identifier from `a=extmap` (RFC 8285 §5).
    public var id: UInt8
    /// The element's data (for parsed packets, a slice of the datagram).
    public var data: ArraySlice<UInt8>

    /// An element with this id and data.
    public init(id: UInt8, data: ArraySlice<UInt8>) {
        self.id = id
        self.data = data
    }

    /// An element with this id and data.
    public init(id: UInt8, data: [UInt8]) {
        self.init(id: id, data: data[...])
    }

    /// The "defined by profile" value of the one-byte form (RFC 8285 §4.2).
    public static let oneByteProfile: UInt16 = 0xBEDE
    /// The "defined by profile" value of the two-byte form, low 4 bits are app bits (RFC 8285 §4.3).
    public static let twoByteProfile: UInt16 = 0x1000

    /// Whether every element fits the one-byte form (RFC 8285 §4.2).
    static func fitsOneByte(_ elements: [RTPHeaderExtension]) -> Bool {
        for element in elements where element.id == 0 || element.id > 14 || element.data.isEmpty || element.data.count > 16 {
            return false
        }
        return true
    }

    /// Bytes of the elements, padded to 32 bits, without the 4-byte block header.
    static func blockLength(_ elements: [RTPHeaderExtension], oneByte: Bool) -> Int {
        var length = 0
        for element in elements { length += (oneByte ? 1 : 2) + element.data.count }
        return (length + 3) & ~3
    }

    /// Parses one-byte elements (RFC 8285 §4.2). Zero bytes between elements are padding; id 15
    /// ends parsing and what follows is ignored.
    static func parseOneByteElements(_ bytes: [UInt8], from start: Int, to end: Int) throws(RTPParseError)
        -> [RTPHeaderExtension]
    {
        var elements: [RTPHeaderExtension] = []
        var offset = start
        while offset < end {
            let header = bytes[offset]
            if header == 0 {
                offset += 1
                continue
            }
            let id = header >> 4
            if id == 15 { break }
            if id == 0 {
                // Id 0 with a length: libwebrtc and RFC 8285 §4.2 treat id 0 as one padding byte.
                offset += 1
                continue
            }
            let length = Int(header & 0x0F) + 1
            guard end - offset - 1 >= length else { throw .headerExtensionOverrun(id: id) }
            elements.append(RTPHeaderExtension(id: id, data: bytes[(offset + 1)..<(offset + 1 + length)]))
            offset += 1 + length
        }
        return elements
    }

    /// Parses two-byte elements (RFC 8285 §4.3). Zero bytes between elements are padding.
    static func parseTwoByteElements(_ bytes: [UInt8], from start: Int, to end: Int) throws(RTPParseError)
        -> [RTPHeaderExtension]
    {
        var elements: [RTPHeaderExtension] = []
        var offset = start
        while offset < end {
            let id = bytes[offset]
            if id == 0 {
                offset += 1
                continue
            }
            guard end - offset >= 2 else { throw .headerExtensionOverrun(id: id) }
            let length = Int(bytes[offset + 1])
            guard end - offset - 2 >= length else { throw .headerExtensionOverrun(id: id) }
            elements.append(RTPHeaderExtension(id: id, data: bytes[(offset + 2)..<(offset + 2 + length)]))
            offset += 2 + length
        }
        return elements
    }

    /// Writes the block header and elements, one-byte form when all fit, else two-byte.
    static func serialize(_ elements: [RTPHeaderExtension], into writer: inout ByteWriter) throws(RTPSerializeError) {
        let oneByte = fitsOneByte(elements)
        if !oneByte {
            for element in elements {
                guard element.id != 0 else { throw .invalidHeaderExtensionID(0) }
                guard element.data.count <= 255 else { throw .headerExtensionTooLong(id: element.id) }
            }
        }
        let length = blockLength(elements, oneByte: oneByte)
        guard length / 4 <= 0xFFFF else { throw .headerExtensionBlockTooLong }
        writer.u16(oneByte ? oneByteProfile : twoByteProfile)
        writer.u16(UInt16(length / 4))
        let start = writer.count
        for element in elements {
            if oneByte {
                writer.u8(element.id << 4 | UInt8(element.data.count - 1))
            } else {
                writer.u8(element.id)
                writer.u8(UInt8(element.data.count))
            }
            writer.append(element.data)
        }
        writer.zeros(length - (writer.count - start))
    }
}

extension RTPPacket {
    /// The data of the first extension element with this id, if present.
    public func headerExtensionData(id: UInt8) -> ArraySlice<UInt8>? {
        for element in extensions where element.id == id { return element.data }
        return nil
    }

    /// Sets (replaces or appends) the extension element with this id.
    public mutating func setHeaderExtensionData(id: UInt8, _ data: ArraySlice<UInt8>) {
        if let index = extensions.firstIndex(where: { $0.id == id }) {
            extensions[index].data = data
        } else {
            extensions.append(RTPHeaderExtension(id: id, data: data))
        }
    }

    /// Removes every extension element with this id.
    public mutating func removeHeaderExtension(id: UInt8) {
        extensions.removeAll { $0.id == id }
    }
}
