// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Why received bytes are not an RTP packet (RFC 3550 §5.1, RFC 8285) or a header extension value.
public enum RTPParseError: Error, Equatable, Sendable {
    /// The bytes end before a field the header says is there.
    case truncated(Truncated)
    /// The version field is not 2 (RFC 3550 §5.1).
    case unsupportedVersion(UInt8)
    /// The P bit is set but the padding count is 0 or longer than the packet after the header
    /// (RFC 3550 §5.1).
    case invalidPadding(UInt8)
    /// A header extension element's length runs past the extension block (RFC 8285 §4.2, §4.3).
    case headerExtensionOverrun(id: UInt8)
    /// A header extension element's data does not have the shape its URI defines.
    case invalidHeaderExtensionValue(id: UInt8)
}

/// Why an RTP packet value cannot be written to the wire.
public enum RTPSerializeError: Error, Equatable, Sendable {
    /// More than 15 contributing sources (the CC field is 4 bits, RFC 3550 §5.1).
    case tooManyCSRCs(Int)
    /// A payload type above 127.
    case invalidPayloadType(PayloadType)
    /// An extension id outside 1...255 (0 is padding, RFC 8285 §4.3).
    case invalidHeaderExtensionID(UInt8)
    /// An extension element with more than 255 bytes of data (RFC 8285 §4.3).
    case headerExtensionTooLong(id: UInt8)
    /// The extension block is longer than 65535 32-bit words (RFC 3550 §5.3.1).
    case headerExtensionBlockTooLong
    /// Both RFC 8285 elements and an other-profile extension block are set; a packet has one block.
    case conflictingHeaderExtensions
}
