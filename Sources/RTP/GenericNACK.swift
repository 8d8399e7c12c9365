// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// One generic NACK entry (RFC 4585 §6.2.1): a lost packet and a bitmask of the 16 after it.
public struct NACKPair: Equatable, Sendable {
    /// PID: the sequence number of a lost packet.
    public var packetID: UInt16
    /// BLP: bit i set means `packetID + i + 1` is lost too.
    public var lostBitmask: UInt16

    /// An entry with these fields.
    public init(packetID: UInt16, lostBitmask: UInt16 = 0) {
        self.packetID = packetID
        self.lostBitmask = lostBitmask
    }
}

/// Generic NACK, RTPFB FMT 1 (RFC 4585 §6.2.1): asks the sender to retransmit lost packets.
public struct GenericNACK: Equatable, Sendable {
    /// The FMT value.
    public static let format: UInt8 = 1
    /// Who sends the feedback.
    public var senderSSRC: SSRC
    /// The stream whose packets are lost.
    public var mediaSSRC: SSRC
    /// The entries (FCI).
    public var pairs: [NACKPair]

    /// A NACK with these entries.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC, pairs: [NACKPair]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.pairs = pairs
    }

    /// A NACK for these lost sequence numbers, given in ascending order (across the wrap);
    /// each run within 16 of an entry's PID shares the entry.
    public init(senderSSRC: SSRC, mediaSSRC: SSRC, lostSequenceNumbers: [UInt16]) {
        var pairs: [NACKPair] = []
        for sequenceNumber in lostSequenceNumbers {
            if let last = pairs.last {
                let distance = sequenceNumber &- last.packetID
                if distance == 0 { continue }
                if distance <= 16 {
                    pairs[pairs.count - 1].lostBitmask |= 1 << (distance - 1)
                    continue
                }
            }
            pairs.append(NACKPair(packetID: sequenceNumber))
        }
        self.init(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, pairs: pairs)
    }

    /// Every sequence number the entries name, in entry order.
    public var lostSequenceNumbers: [UInt16] {
        var lost: [UInt16] = []
        lost.reserveCapacity(pairs.count * 2)
        for pair in pairs {
            lost.append(pair.packetID)
            var mask = pair.lostBitmask
            var bit: UInt16 = 1
            while mask != 0 {
                if mask & 1 != 0 { lost.append(pair.packetID &+ bit) }
                mask >>= 1
                bit += 1
            }
        }
        return lost
    }

    static func parse(body: ByteReader) throws(RTCPParseError) -> GenericNACK {
        var reader = body
        let sources = try FeedbackSources.read(&reader)
        return try readingRTCP { () throws(Truncated) in
            var pairs: [NACKPair] = []
            pairs.reserveCapacity(reader.remaining / 4)
            while reader.remaining >= 4 {
                pairs.append(NACKPair(packetID: try reader.u16(), lostBitmask: try reader.u16()))
            }
            return GenericNACK(senderSSRC: sources.sender, mediaSSRC: sources.media, pairs: pairs)
        }
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        try writer.rtcpPacket(type: RTCPPacketType.transportFeedback, count: Self.format) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(senderSSRC.rawValue)
            writer.u32(mediaSSRC.rawValue)
            for pair in pairs {
                writer.u16(pair.packetID)
                writer.u16(pair.lostBitmask)
            }
        }
    }
}
