import Media
import RTP

/// The RTP side of one participant's mix, sans-IO: each Opus packet becomes an RTP packet on the
/// host's negotiated audio SSRC and the negotiated Opus payload type, sequence numbers +1 a packet
/// and timestamps +960 (20 ms at 48 kHz) a packet, the marker on the first (RFC 3551 §4.1: the
/// start of a talkspurt). Starts from random sequence number and timestamp (RFC 3550 §5.1).
public struct AudioRTPSender {
    public let ssrc: SSRC
    public let payloadType: PayloadType
    public private(set) var sequenceNumber: UInt16
    public private(set) var timestamp: UInt32
    public private(set) var packetsSent = 0

    public init(ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16 = .random(in: 0...UInt16.max),
         timestamp: UInt32 = .random(in: 0...UInt32.max)) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
    }

    /// The next packet carrying `payload` (one 20 ms Opus frame).
    public mutating func packet(_ payload: [UInt8]) -> RTPPacket {
        let packet = RTPPacket(marker: packetsSent == 0, payloadType: payloadType, sequenceNumber: sequenceNumber,
                               timestamp: timestamp, ssrc: ssrc, payload: payload[...])
        sequenceNumber &+= 1
        timestamp &+= UInt32(AudioFrame.samplesPer20ms)
        packetsSent += 1
        return packet
    }
}
