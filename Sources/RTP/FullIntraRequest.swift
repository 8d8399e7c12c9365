// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// One FIR entry (RFC 5104 §4.3.1.1): the stream that must send a keyframe and the request's
/// sequence number (the same number for a repeated request, +1 for a new one).
public struct FIREntry: Equatable, Sendable {
    /// The stream that must send a decoder refresh point.
    public var ssrc: SSRC
    /// The command sequence number.
    public var sequenceNumber: UInt8

    /// An entry with these fields.
    public init(ssrc: SSRC, sequenceNumber: UInt8) {
        self.ssrc = ssrc
        self.sequenceNumber = sequenceNumber
    }
}

/// Full intra request, PSFB FMT 4 (RFC 5104 §4.3.1): a keyframe request, used by mixers.
public struct FullIntraRequest: Equatable, Sendable {
    /// The FMT value.
    public static let format: UInt8 = 4
    /// Who asks.
    public var senderSSRC: SSRC
    /// The media source field, which RFC 5104 §4.3.1.2 says is unused (0).
    public var mediaSSRC: SSRC
    /// The requests.
    public var entries: [FIREntry]

    /// A FIR with these entries.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC = 0, entries: [FIREntry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    static func parse(body: ByteReader) throws(RTCPParseError) -> FullIntraRequest {
        var reader = body
        let sources = try FeedbackSources.read(&reader)
        return try readingRTCP { () throws(Truncated) in
            var entries: [FIREntry] = []
            entries.reserveCapacity(reader.remaining / 8)
            while reader.remaining >= 8 {
                let ssrc = SSRC(try reader.u32())
                let sequenceNumber = try reader.u8()
                try reader.skip(3)  // reserved
                entries.append(FIREntry(ssrc: ssrc, sequenceNumber: sequenceNumber))
            }
            return FullIntraRequest(senderSSRC: sources.sender, mediaSSRC: sources.media, entries: entries)
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.payloadFeedback, count: Self.format) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(senderSSRC.rawValue)
            writer.u32(mediaSSRC.rawValue)
            for entry in entries {
                writer.u32(entry.ssrc.rawValue)
                writer.u8(entry.sequenceNumber)
                writer.zeros(3)
            }
        }
    }
}
