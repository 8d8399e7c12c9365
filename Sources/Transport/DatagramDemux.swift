/// What a datagram on the shared media port carries, told by its first byte (RFC 7983 §7, as
/// updated by RFC 9443 §3):
///
/// ```
///                 +----------------+
///                 |        [0..3] -+--> STUN
///                 |                |
///                 |      [16..19] -+--> ZRTP (dropped)
///   packet -->    |                |
///                 |      [20..63] -+--> DTLS
///                 |                |
///                 |      [64..79] -+--> TURN channel (dropped: the host is not a relay)
///                 |                |
///                 |    [128..191] -+--> RTP / RTCP (told apart by RFC 5761 §4)
///                 +----------------+
/// ```
public enum DatagramKind: Sendable, Equatable {
    case stun, dtls, rtpOrRTCP, unknown

    @inline(__always)
    public init(firstByte: UInt8) {
        switch firstByte {
        case 0...3: self = .stun
        case 20...63: self = .dtls
        case 128...191: self = .rtpOrRTCP
        default: self = .unknown
        }
    }

    public init<Bytes: Collection<UInt8>>(datagram: Bytes) {
        guard let first = datagram.first else {
            self = .unknown
            return
        }
        self.init(firstByte: first)
    }
}
