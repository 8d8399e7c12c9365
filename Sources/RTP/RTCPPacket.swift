// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// RTCP packet type numbers (RFC 3550 §12.1, RFC 4585 §6.1).
public enum RTCPPacketType {
    /// Sender report, SR (RFC 3550 §6.4.1).
    public static let senderReport: UInt8 = 200
    /// Receiver report, RR (RFC 3550 §6.4.2).
    public static let receiverReport: UInt8 = 201
    /// Source description, SDES (RFC 3550 §6.5).
    public static let sourceDescription: UInt8 = 202
    /// Goodbye, BYE (RFC 3550 §6.6).
    public static let goodbye: UInt8 = 203
    /// Application-defined, APP (RFC 3550 §6.7); kept as `.unknown`.
    public static let applicationDefined: UInt8 = 204
    /// Transport-layer feedback, RTPFB (RFC 4585 §6.1).
    public static let transportFeedback: UInt8 = 205
    /// Payload-specific feedback, PSFB (RFC 4585 §6.1).
    public static let payloadFeedback: UInt8 = 206
}

/// One packet of an RTCP compound packet (RFC 3550 §6.1).
public enum RTCPPacket: Equatable, Sendable {
    /// Sender report (RFC 3550 §6.4.1).
    case senderReport(SenderReport)
    /// Receiver report (RFC 3550 §6.4.2).
    case receiverReport(ReceiverReport)
    /// Source description: CNAME and friends (RFC 3550 §6.5).
    case sourceDescription(SourceDescription)
    /// Goodbye (RFC 3550 §6.6).
    case goodbye(Goodbye)
    /// Generic NACK: retransmission request (RFC 4585 §6.2.1).
    case nack(GenericNACK)
    /// Picture loss indication: keyframe request (RFC 4585 §6.3.1).
    case pictureLossIndication(PictureLossIndication)
    /// Full intra request: keyframe request with sequence numbers (RFC 5104 §4.3.1).
    case fullIntraRequest(FullIntraRequest)
    /// Receiver estimated maximum bitrate (draft-alvestrand-rmcat-remb-03 §2.2).
    case receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate)
    /// Transport-wide congestion control feedback
    /// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1).
    case transportCC(TransportCCFeedback)
    /// A packet of a type (or feedback FMT) this module does not interpret, kept as received:
    /// the packet type, the 5-bit count/FMT field, and the body after the 4-byte header without padding.
    case unknown(type: UInt8, format: UInt8, body: [UInt8])

    /// Parses a compound packet (RFC 3550 §6.1) into its packets, in order.
    public static func parseCompound(_ bytes: [UInt8]) throws(RTCPParseError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .truncated(Truncated(needed: 4, offset: 0)) }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { throw .truncated(Truncated(needed: 4, offset: offset)) }
            let first = bytes[offset]
            let version = first >> 6
            guard version == 2 else { throw .unsupportedVersion(version) }
            let count = first & 0x1F
            let type = bytes[offset + 1]
            let length = 4 * (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) + 1)
            guard length <= bytes.count - offset else {
                throw .lengthExceedsDatagram(offset: offset, declared: length, available: bytes.count - offset)
            }
            var end = offset + length
            if first & 0x20 != 0 {
                let padding = bytes[end - 1]
                guard padding > 0, Int(padding) <= length - 4 else { throw .invalidPadding(padding) }
                end -= Int(padding)
            }
            let body = ByteReader(bytes, from: offset + 4, to: end)
            packets.append(try parse(type: type, count: count, body: body))
            offset += length
        }
        return packets
    }

    /// Parses one packet's body, given its header's type and count/FMT.
    static func parse(type: UInt8, count: UInt8, body: ByteReader) throws(RTCPParseError) -> RTCPPacket {
        switch type {
        case RTCPPacketType.senderReport:
            return .senderReport(try SenderReport.parse(count: count, body: body))
        case RTCPPacketType.receiverReport:
            return .receiverReport(try ReceiverReport.parse(count: count, body: body))
        case RTCPPacketType.sourceDescription:
            return .sourceDescription(try SourceDescription.parse(count: count, body: body))
        case RTCPPacketType.goodbye:
            return .goodbye(try Goodbye.parse(count: count, body: body))
        case RTCPPacketType.transportFeedback:
            switch count {
            case GenericNACK.format: return .nack(try GenericNACK.parse(body: body))
            case TransportCCFeedback.format: return .transportCC(try TransportCCFeedback.parse(body: body))
            default: break
            }
        case RTCPPacketType.payloadFeedback:
            switch count {
            case PictureLossIndication.format:
                return .pictureLossIndication(try PictureLossIndication.parse(body: body))
            case FullIntraRequest.format: return .fullIntraRequest(try FullIntraRequest.parse(body: body))
            case ReceiverEstimatedMaximumBitrate.format:
                // FMT 15 is any application-layer feedback (RFC 4585 §6.4); only 'REMB' is read.
                if let remb = try ReceiverEstimatedMaximumBitrate.parse(body: body) {
                    return .receiverEstimatedMaximumBitrate(remb)
                }
            default: break
            }
        default: break
        }
        return .unknown(type: type, format: count, body: Array(body.rest))
    }

    /// Writes packets as one compound packet.
    public static func serializeCompound(_ packets: [RTCPPacket]) throws(RTCPSerializeError) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        for packet in packets { try packet.serialize(into: &writer) }
        return writer.bytes
    }

    /// This packet alone as bytes.
    public func serialized() throws(RTCPSerializeError) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        try serialize(into: &writer)
        return writer.bytes
    }

    /// Appends this packet to `writer`.
    public func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        switch self {
        case .senderReport(let report): try report.serialize(into: &writer)
        case .receiverReport(let report): try report.serialize(into: &writer)
        case .sourceDescription(let description): try description.serialize(into: &writer)
        case .goodbye(let goodbye): try goodbye.serialize(into: &writer)
        case .nack(let nack): try nack.serialize(into: &writer)
        case .pictureLossIndication(let pli): try pli.serialize(into: &writer)
        case .fullIntraRequest(let fir): try fir.serialize(into: &writer)
        case .receiverEstimatedMaximumBitrate(let remb): try remb.serialize(into: &writer)
        case .transportCC(let feedback): try feedback.serialize(into: &writer)
        case .unknown(let type, let format, let body):
            guard format <= 31 else { throw .invalidFormat(format) }
            try writer.rtcpPacket(type: type, count: format) { (out: inout ByteWriter) throws(RTCPSerializeError) in
                out.append(body)
            }
        }
    }
}

extension ByteWriter {
    /// Writes an RTCP header (RFC 3550 §6.4.1), the body, and the length; a body that is not a
    /// multiple of 4 bytes is padded with the P bit set.
    mutating func rtcpPacket(
        type: UInt8, count: Int, body: (inout ByteWriter) throws(RTCPSerializeError) -> Void
    ) throws(RTCPSerializeError) {
        guard count >= 0, count <= 31 else { throw .countTooLarge(packetType: type, count: count) }
        let start = self.count
        u8(0x80 | UInt8(count))
        u8(type)
        u16(0)
        try body(&self)
        let unaligned = (self.count - start) % 4
        if unaligned != 0 {
            let padding = 4 - unaligned
            zeros(padding - 1)
            u8(UInt8(padding))
            setU16(UInt16(0xA0 | count) << 8 | UInt16(type), at: start)
        }
        let words = (self.count - start) / 4 - 1
        guard words <= 0xFFFF else { throw .packetTooLong(self.count - start) }
        setU16(UInt16(words), at: start + 2)
    }

    /// `rtcpPacket` with a count that is already 5 bits.
    mutating func rtcpPacket(
        type: UInt8, count: UInt8, body: (inout ByteWriter) throws(RTCPSerializeError) -> Void
    ) throws(RTCPSerializeError) {
        try rtcpPacket(type: type, count: Int(count), body: body)
    }
}

/// Runs reads whose bounds the caller has not all checked, turning `Truncated` into the RTCP error.
@inline(__always)
func readingRTCP<T>(_ body: () throws(Truncated) -> T) throws(RTCPParseError) -> T {
    do { return try body() } catch { throw .truncated(error) }
}
