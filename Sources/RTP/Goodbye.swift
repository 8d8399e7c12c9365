// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Goodbye, BYE (RFC 3550 §6.6): these sources leave, with an optional reason.
public struct Goodbye: Equatable, Sendable {
    /// The sources that leave (at most 31).
    public var sources: [SSRC]
    /// The reason, up to 255 bytes of (usually UTF-8) text, kept as received; nil when absent.
    public var reason: [UInt8]?

    /// A goodbye with raw reason bytes.
    public init(sources: [SSRC], reason: [UInt8]? = nil) {
        self.sources = sources
        self.reason = reason
    }

    /// A goodbye with a text reason.
    public init(sources: [SSRC], reasonText: String) {
        self.init(sources: sources, reason: Array(reasonText.utf8))
    }

    /// The reason as text, or nil when absent or not valid UTF-8.
    public var reasonText: String? { reason.flatMap { String(validating: $0, as: UTF8.self) } }

    static func parse(count: UInt8, body: ByteReader) throws(RTCPParseError) -> Goodbye {
        var reader = body
        guard reader.remaining >= 4 * Int(count) else {
            throw .countExceedsLength(packetType: RTCPPacketType.goodbye, count: Int(count))
        }
        return try readingRTCP { () throws(Truncated) in
            var sources: [SSRC] = []
            sources.reserveCapacity(Int(count))
            for _ in 0..<count { sources.append(SSRC(try reader.u32())) }
            var reason: [UInt8]?
            if !reader.isAtEnd {
                let length = Int(try reader.u8())
                reason = Array(try reader.bytes(length))
            }
            return Goodbye(sources: sources, reason: reason)
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.goodbye, count: sources.count) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            for source in sources { writer.u32(source.rawValue) }
            if let reason {
                guard reason.count <= 255 else { throw .textTooLong(reason.count) }
                writer.u8(UInt8(reason.count))
                writer.append(reason)
                writer.pad(to: 4)
            }
        }
    }
}
