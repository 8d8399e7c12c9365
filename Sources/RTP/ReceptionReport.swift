// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// One report block of an SR or RR (RFC 3550 §6.4.1): reception statistics about one source.
public struct ReceptionReport: Equatable, Sendable {
    /// The source these statistics are about.
    public var ssrc: SSRC
    /// Fraction of packets lost since the last report, in 1/256 units.
    public var fractionLost: UInt8
    /// Cumulative packets lost, a signed 24-bit value (negative with duplicates, RFC 3550 §6.4.1);
    /// serialization clamps to -8388608...8388607.
    public var cumulativeLost: Int32
    /// Extended highest sequence number received (cycles << 16 | highest seq).
    public var extendedHighestSequenceNumber: UInt32
    /// Interarrival jitter in timestamp units (RFC 3550 §6.4.1, A.8).
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR from this source (LSR).
    public var lastSenderReport: UInt32
    /// Delay since that SR in 1/65536 s (DLSR).
    public var delaySinceLastSenderReport: UInt32

    /// A report block with these fields.
    public init(
        ssrc: SSRC, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequenceNumber: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequenceNumber = extendedHighestSequenceNumber
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    /// Bytes of one block.
    static let size = 24

    /// Reads one block; the caller has checked that 24 bytes remain.
    static func read(_ reader: inout ByteReader) throws(Truncated) -> ReceptionReport {
        let ssrc = SSRC(try reader.u32())
        let lost = try reader.u32()
        // Sign-extend the 24-bit cumulative count.
        let cumulative = Int32(bitPattern: lost << 8) >> 8
        return ReceptionReport(
            ssrc: ssrc, fractionLost: UInt8(truncatingIfNeeded: lost >> 24), cumulativeLost: cumulative,
            extendedHighestSequenceNumber: try reader.u32(), jitter: try reader.u32(),
            lastSenderReport: try reader.u32(), delaySinceLastSenderReport: try reader.u32())
    }

    /// Appends the 24-byte block.
    func write(_ writer: inout ByteWriter) {
        writer.u32(ssrc.rawValue)
        writer.u8(fractionLost)
        let clamped = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        writer.u24(UInt32(bitPattern: clamped) & 0xFF_FFFF)
        writer.u32(extendedHighestSequenceNumber)
        writer.u32(jitter)
        writer.u32(lastSenderReport)
        writer.u32(delaySinceLastSenderReport)
    }
}
