// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Receiver report, RR (RFC 3550 §6.4.2): reception report blocks from a participant that does
/// not send (or whose report blocks overflow its SR).
public struct ReceiverReport: Equatable, Sendable {
    /// The reporter.
    public var ssrc: SSRC
    /// Report blocks about the sources it receives (at most 31).
    public var reports: [ReceptionReport]
    /// Profile-specific extension bytes after the report blocks, usually empty.
    public var profileExtension: [UInt8]

    /// A receiver report with these fields.
    public init(ssrc: SSRC, reports: [ReceptionReport] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reports = reports
        self.profileExtension = profileExtension
    }

    static func parse(count: UInt8, body: ByteReader) throws(RTCPParseError) -> ReceiverReport {
        var reader = body
        guard reader.remaining >= 4 + ReceptionReport.size * Int(count) else {
            throw .countExceedsLength(packetType: RTCPPacketType.receiverReport, count: Int(count))
        }
        return try readingRTCP { () throws(Truncated) in
            let ssrc = SSRC(try reader.u32())
            var reports: [ReceptionReport] = []
            reports.reserveCapacity(Int(count))
            for _ in 0..<count { reports.append(try ReceptionReport.read(&reader)) }
            return ReceiverReport(ssrc: ssrc, reports: reports, profileExtension: Array(reader.rest))
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.receiverReport, count: reports.count) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(ssrc.rawValue)
            for report in reports { report.write(&writer) }
            writer.append(profileExtension)
        }
    }
}
