// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Why bytes are not a VP8 RTP payload (RFC 7741) or VP8 frame header (RFC 6386 §9.1).
public enum VP8ParseError: Error, Equatable, Sendable {
    /// The bytes end before a field the descriptor or header says is there.
    case truncated(Truncated)
    /// A key frame does not carry the start code 9d 01 2a (RFC 6386 §9.1).
    case invalidKeyFrameStartCode
}
