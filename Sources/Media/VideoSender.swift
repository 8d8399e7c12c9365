import RTP

/// The send side of one VP8 stream: encoded frames from ``VP8Encoder`` in, RTP packets out
/// (RFC 7741 §4.1), ready for SRTP. The mirror of ``VideoReceiver``.
///
/// Each frame becomes one or more packets of at most `maxPayloadSize` payload bytes
/// (``VP8Packetizer``: one partition, a 15-bit picture id), all with the frame's timestamp; the
/// last has the marker bit. Sequence numbers run on from packet to packet and wrap; timestamps
/// are the encoder's 90 kHz `rtpTimestamp` plus `timestampOffset`. RFC 3550 §5.1 wants both to
/// start at random values, which the defaults do.
public struct VideoSender: Sendable {
    /// Counters for metrics and tests.
    public struct Statistics: Equatable, Sendable {
        /// Frames packetized.
        public var framesSent = 0
        /// Key frames among them.
        public var keyFramesSent = 0
        /// Packets made.
        public var packetsSent = 0
        /// Payload bytes made (VP8 descriptors included, RTP headers not).
        public var payloadBytesSent = 0
    }

    /// The payload type SDP bound to VP8 for this peer.
    public let payloadType: PayloadType
    /// The stream's SSRC.
    public let ssrc: SSRC
    /// Added to every encoder timestamp (a random start, RFC 3550 §5.1).
    public let timestampOffset: UInt32
    /// The sequence number the next packet gets.
    public private(set) var nextSequenceNumber: UInt16
    /// Counters.
    public private(set) var statistics = Statistics()
    private var packetizer: VP8Packetizer

    /// A sender of `payloadType` on `ssrc`, with payloads of at most `maxPayloadSize` bytes (the
    /// MTU less IP, UDP, RTP header, header extensions and SRTP tag; 1200 suits any path). Nil
    /// when `maxPayloadSize` cannot hold a VP8 descriptor and one byte of frame.
    public init?(payloadType: PayloadType, ssrc: SSRC, maxPayloadSize: Int = 1200,
                 firstSequenceNumber: UInt16 = .random(in: 0...UInt16.max),
                 timestampOffset: UInt32 = .random(in: 0...UInt32.max),
                 firstPictureID: UInt16 = .random(in: 0...0x7FFF)) {
        guard let packetizer = VP8Packetizer(maxPayloadSize: maxPayloadSize, firstPictureID: firstPictureID) else {
            return nil
        }
        self.packetizer = packetizer
        self.payloadType = payloadType
        self.ssrc = ssrc
        self.timestampOffset = timestampOffset
        nextSequenceNumber = firstSequenceNumber
    }

    /// The largest payload a packet carries.
    public var maxPayloadSize: Int { packetizer.maxPayloadSize }

    /// The packets for one encoded frame, in sending order; none for an empty frame.
    public mutating func packetize(_ frame: EncodedVideoFrame) -> [RTPPacket] {
        let payloads = packetizer.packetize(frame.data)
        guard !payloads.isEmpty else { return [] }
        let timestamp = frame.rtpTimestamp &+ timestampOffset
        var packets: [RTPPacket] = []
        packets.reserveCapacity(payloads.count)
        for (index, payload) in payloads.enumerated() {
            packets.append(RTPPacket(
                marker: index == payloads.count - 1, payloadType: payloadType, sequenceNumber: nextSequenceNumber,
                timestamp: timestamp, ssrc: ssrc, payload: payload[...]))
            nextSequenceNumber &+= 1
            statistics.payloadBytesSent += payload.count
        }
        statistics.framesSent += 1
        if frame.isKeyFrame { statistics.keyFramesSent += 1 }
        statistics.packetsSent += payloads.count
        return packets
    }
}
