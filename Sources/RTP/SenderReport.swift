// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Sender report, SR (RFC 3550 §6.4.1): a sender's NTP/RTP timestamp pair for lip sync, its
/// packet and octet counts, and reception report blocks.
public struct SenderReport: Equatable, Sendable {
    /// The sender.
    public var ssrc: SSRC
    /// Wallclock time of the report, 64-bit NTP format (RFC 3550 §4).
    public var ntpTimestamp: UInt64
    /// The RTP timestamp that corresponds to `ntpTimestamp`.
    public var rtpTimestamp: UInt32
    /// Packets sent since the stream began.
    public var packetCount: UInt32
    /// Payload octets sent since the stream began.
    public var octetCount: UInt32
    /// Report blocks about the sources this sender receives (at most 31).
    public var reports: [ReceptionReport]
    /// Profile-specific extension bytes after the report blocks (RFC 3550 §6.4.1), usually empty.
    public var profileExtension: [UInt8]

    /// A sender report with these fields.
    public init(
        ssrc: SSRC, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
        reports: [ReceptionReport] = [], profileExtension: [UInt8] = []
    ) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
        self.profileExtension = profileExtension
    }

    static func parse(count: UInt8, body: ByteReader) throws(RTCPParseError) -> SenderReport {
        var reader = body
        guard reader.remaining >= 24 + ReceptionReport.size * Int(count) else {
            throw .countExceedsLength(packetType: RTCPPacketType.senderReport, count: Int(count))
        }
        return try readingRTCP { () throws(Truncated) in
            let ssrc = SSRC(try reader.u32())
            let ntp = try reader.u64()
            let rtp = try reader.u32()
            let packets = try reader.u32()
            let octets = try reader.u32()
            var reports: [ReceptionReport] = []
            reports.reserveCapacity(Int(count))
            for _ in 0..<count { reports.append(try ReceptionReport.read(&reader)) }
            return SenderReport(
                ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: packets, octetCount: octets,
                reports: reports, profileExtension: Array(reader.rest))
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.senderReport, count: reports.count) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(ssrc.rawValue)
            writer.u64(ntpTimestamp)
            writer.u32(rtpTimestamp)
            writer.u32(packetCount)
            writer.u32(octetCount)
            for report in reports { report.write(&writer) }
            writer.append(profileExtension)
        }
    }
}
