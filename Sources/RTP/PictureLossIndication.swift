// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Picture loss indication, PSFB FMT 1 (RFC 4585 §6.3.1): the receiver lost picture data and
/// asks the sender for a keyframe.
public struct PictureLossIndication: Equatable, Sendable {
    /// The FMT value.
    public static let format: UInt8 = 1
    /// Who asks.
    public var senderSSRC: SSRC
    /// The video stream that needs a keyframe.
    public var mediaSSRC: SSRC

    /// A PLI from `senderSSRC` about `mediaSSRC`.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
    }

    static func parse(body: ByteReader) throws(RTCPParseError) -> PictureLossIndication {
        var reader = body
        let sources = try FeedbackSources.read(&reader)
        return PictureLossIndication(senderSSRC: sources.sender, mediaSSRC: sources.media)
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.payloadFeedback, count: Self.format) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(senderSSRC.rawValue)
            writer.u32(mediaSSRC.rawValue)
        }
    }
}
