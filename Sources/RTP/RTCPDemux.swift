/// What a datagram on a port shared by RTP and RTCP is (RFC 5761 §4).
public enum MuxedPacketKind: Equatable, Sendable {
    /// An RTP packet.
    case rtp
    /// An RTCP (compound) packet.
    case rtcp
}

extension MuxedPacketKind {
    /// Tells RTCP from RTP on a muxed port (RFC 5761 §4):
    ///
    /// ```
    ///  second byte & 0x7F:   0 ... 63 | 64 ... 95 | 96 ... 127
    ///                           RTP   |   RTCP    |    RTP
    /// ```
    ///
    /// RTCP packet types 192...223 read as RTP payload types 64...95 (marker bit set), which is why
    /// RFC 5761 forbids those payload types with rtcp-mux. Returns nil for fewer than 4 bytes or a
    /// version other than 2 (those are STUN, DTLS or garbage: see the RFC 7983 demux first).
    public static func classify(_ bytes: [UInt8]) -> MuxedPacketKind? {
        guard bytes.count >= 4, bytes[0] >> 6 == 2 else { return nil }
        let payloadType = bytes[1] & 0x7F
        return (64...95).contains(payloadType) ? .rtcp : .rtp
    }
}
