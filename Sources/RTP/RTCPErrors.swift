// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Why received bytes are not a valid RTCP compound packet (RFC 3550 §6, RFC 4585, RFC 5104).
public enum RTCPParseError: Error, Equatable, Sendable {
    /// The bytes end before a field the packet says is there.
    case truncated(Truncated)
    /// A packet's version field is not 2 (RFC 3550 §6.4.1).
    case unsupportedVersion(UInt8)
    /// A packet's length field runs past the end of the datagram (RFC 3550 §6.4.1).
    case lengthExceedsDatagram(offset: Int, declared: Int, available: Int)
    /// The P bit is set but the padding count is 0 or longer than the packet body.
    case invalidPadding(UInt8)
    /// A report, chunk, source or entry count needs more bytes than the length field gives.
    case countExceedsLength(packetType: UInt8, count: Int)
    /// A transport-cc status symbol is the reserved value 3
    /// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1.1).
    case reservedPacketStatusSymbol
    /// A REMB bitrate whose mantissa shifted by its exponent does not fit 64 bits.
    case bitrateOverflow
}

/// Why an RTCP packet value cannot be written to the wire.
public enum RTCPSerializeError: Error, Equatable, Sendable {
    /// More than 31 report blocks, chunks or sources (5-bit count, RFC 3550 §6.4.1).
    case countTooLarge(packetType: UInt8, count: Int)
    /// An SDES item or BYE reason longer than 255 bytes (RFC 3550 §6.5, §6.6).
    case textTooLong(Int)
    /// An SDES item of type 0, which is the end-of-list marker (RFC 3550 §6.5).
    case invalidSDESItemType
    /// A packet longer than the 16-bit length field can describe.
    case packetTooLong(Int)
    /// More than 255 SSRCs in a REMB or more than 65535 statuses in transport-cc feedback.
    case tooManyEntries(Int)
    /// A format (FMT) above 31 in an unknown packet.
    case invalidFormat(UInt8)
}
