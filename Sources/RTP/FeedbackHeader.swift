// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// The two SSRCs that open every feedback message (RFC 4585 §6.1).
struct FeedbackSources {
    var sender: SSRC
    var media: SSRC

    static func read(_ reader: inout ByteReader) throws(RTCPParseError) -> FeedbackSources {
        try readingRTCP { () throws(Truncated) in
            FeedbackSources(sender: SSRC(try reader.u32()), media: SSRC(try reader.u32()))
        }
    }
}
