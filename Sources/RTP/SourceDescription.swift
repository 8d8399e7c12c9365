// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// The type of an SDES item (RFC 3550 §6.5).
public struct SDESItemType: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral {
    /// The 8-bit type on the wire; 0 ends a chunk's item list and is not an item.
    public var rawValue: UInt8
    /// The item type with this number.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The item type written as an integer literal.
    public init(integerLiteral value: UInt8) { rawValue = value }

    /// Canonical end-point identifier, the one item WebRTC sends (RFC 3550 §6.5.1).
    public static let cname: SDESItemType = 1
    /// User name (§6.5.2).
    public static let name: SDESItemType = 2
    /// Electronic mail address (§6.5.3).
    public static let email: SDESItemType = 3
    /// Phone number (§6.5.4).
    public static let phone: SDESItemType = 4
    /// Geographic location (§6.5.5).
    public static let location: SDESItemType = 5
    /// Application or tool name (§6.5.6).
    public static let tool: SDESItemType = 6
    /// Notice or status (§6.5.7).
    public static let note: SDESItemType = 7
    /// Private extension, prefix length and prefix inside the value (§6.5.8).
    public static let privateExtension: SDESItemType = 8
}

/// One SDES item: a type and up to 255 bytes of (usually UTF-8) text.
public struct SDESItem: Equatable, Sendable {
    /// What the text describes.
    public var type: SDESItemType
    /// The raw item bytes, kept as received (they need not be valid UTF-8).
    public var value: [UInt8]

    /// An item with raw bytes.
    public init(type: SDESItemType, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    /// An item with text.
    public init(type: SDESItemType, text: String) {
        self.init(type: type, value: Array(text.utf8))
    }

    /// The value as text, or nil when it is not valid UTF-8.
    public var text: String? { String(validating: value, as: UTF8.self) }
}

/// The items that describe one source.
public struct SDESChunk: Equatable, Sendable {
    /// The source (SSRC or CSRC) described.
    public var source: SSRC
    /// Its items, in wire order.
    public var items: [SDESItem]

    /// A chunk with these items.
    public init(source: SSRC, items: [SDESItem]) {
        self.source = source
        self.items = items
    }

    /// A chunk with a CNAME only, as WebRTC endpoints send.
    public init(source: SSRC, cname: String) {
        self.init(source: source, items: [SDESItem(type: .cname, text: cname)])
    }

    /// The CNAME text, if present.
    public var cname: String? { items.first { $0.type == .cname }?.text }
}

/// Source description, SDES (RFC 3550 §6.5): chunks of items per source, each chunk ended by a
/// null item and padded to 32 bits.
public struct SourceDescription: Equatable, Sendable {
    /// The chunks (at most 31).
    public var chunks: [SDESChunk]

    /// A source description with these chunks.
    public init(chunks: [SDESChunk]) { self.chunks = chunks }

    static func parse(count: UInt8, body: ByteReader) throws(RTCPParseError) -> SourceDescription {
        var reader = body
        // Each chunk is at least an SSRC and one word holding the null item (RFC 3550 §6.5).
        guard reader.remaining >= 8 * Int(count) else {
            throw .countExceedsLength(packetType: RTCPPacketType.sourceDescription, count: Int(count))
        }
        let start = reader.offset
        return try readingRTCP { () throws(Truncated) in
            var chunks: [SDESChunk] = []
            chunks.reserveCapacity(Int(count))
            for _ in 0..<count {
                let source = SSRC(try reader.u32())
                var items: [SDESItem] = []
                while true {
                    let type = try reader.u8()
                    if type == 0 { break }
                    let length = Int(try reader.u8())
                    items.append(SDESItem(type: SDESItemType(rawValue: type), value: Array(try reader.bytes(length))))
                }
                // Null octets pad the chunk to the next 32-bit boundary; a short last chunk is tolerated.
                let unaligned = (reader.offset - start) % 4
                if unaligned != 0 { try reader.skip(min(4 - unaligned, reader.remaining)) }
                chunks.append(SDESChunk(source: source, items: items))
            }
            return SourceDescription(chunks: chunks)
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.sourceDescription, count: chunks.count) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            for chunk in chunks {
                let start = writer.count
                writer.u32(chunk.source.rawValue)
                for item in chunk.items {
                    guard item.type.rawValue != 0 else { throw .invalidSDESItemType }
                    guard item.value.count <= 255 else { throw .textTooLong(item.value.count) }
                    writer.u8(item.type.rawValue)
                    writer.u8(UInt8(item.value.count))
                    writer.append(item.value)
                }
                // The null item, then nulls up to the 32-bit boundary.
                let used = writer.count - start + 1
                writer.zeros(1 + (4 - used % 4) % 4)
            }
        }
    }
}
