// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Receiver estimated maximum bitrate, REMB: PSFB FMT 15 with the 'REMB' identifier
/// (draft-alvestrand-rmcat-remb-03 §2.2). The receiver's estimate of the total bitrate it can take
/// for the listed streams.
///
/// ```
/// |  Unique identifier 'R' 'E' 'M' 'B'                            |
/// |  Num SSRC     | BR Exp    |  BR Mantissa                      |
/// |   SSRC feedback ...                                           |
/// ```
public struct ReceiverEstimatedMaximumBitrate: Equatable, Sendable {
    /// The FMT value (application layer feedback, RFC 4585 §6.4).
    public static let format: UInt8 = 15
    /// The identifier that makes an AFB message a REMB.
    static let identifier: UInt32 = 0x5245_4D42  // "REMB"

    /// Who estimates.
    public var senderSSRC: SSRC
    /// The media source field, always 0 for REMB.
    public var mediaSSRC: SSRC
    /// The estimate in bits per second. Serialization uses an 18-bit mantissa and 6-bit exponent,
    /// rounding down when the value needs more than 18 significant bits.
    public var bitrate: UInt64
    /// The streams the estimate applies to (at most 255).
    public var ssrcs: [SSRC]

    /// A REMB with these fields.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC = 0, bitrate: UInt64, ssrcs: [SSRC]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    /// Reads a REMB; nil when the AFB message is not a REMB (no 'REMB' identifier).
    static func parse(body: ByteReader) throws(RTCPParseError) -> ReceiverEstimatedMaximumBitrate? {
        var reader = body
        let sources = try FeedbackSources.read(&reader)
        guard reader.remaining >= 8 else { return nil }
        let (identifier, count, encoded) = try readingRTCP { () throws(Truncated) in
            (try reader.u32(), Int(try reader.u8()), try reader.u24())
        }
        guard identifier == Self.identifier else { return nil }
        guard reader.remaining >= 4 * count else {
            throw .countExceedsLength(packetType: RTCPPacketType.payloadFeedback, count: count)
        }
        let exponent = UInt64(encoded >> 18)
        let mantissa = UInt64(encoded & 0x3_FFFF)
        // libwebrtc's check too: the mantissa must survive the shift.
        guard (mantissa << exponent) >> exponent == mantissa else { throw .bitrateOverflow }
        let ssrcs = try readingRTCP { () throws(Truncated) in
            var ssrcs: [SSRC] = []
            ssrcs.reserveCapacity(count)
            for _ in 0..<count { ssrcs.append(SSRC(try reader.u32())) }
            return ssrcs
        }
        return ReceiverEstimatedMaximumBitrate(
            senderSSRC: sources.sender, mediaSSRC: sources.media, bitrate: mantissa << exponent, ssrcs: ssrcs)
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        guard ssrcs.count <= 255 else { throw .tooManyEntries(ssrcs.count) }
        var exponent: UInt64 = 0
        while bitrate >> exponent > 0x3_FFFF { exponent += 1 }
        let mantissa = bitrate >> exponent
        try writer.rtcpPacket(type: RTCPPacketType.payloadFeedback, count: Self.format) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(senderSSRC.rawValue)
            writer.u32(mediaSSRC.rawValue)
            writer.u32(Self.identifier)
            writer.u8(UInt8(ssrcs.count))
            writer.u24(UInt32(exponent << 18 | mantissa))
            for ssrc in ssrcs { writer.u32(ssrc.rawValue) }
        }
    }
}
