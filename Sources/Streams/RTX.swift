import RTP
import Wire

/// The retransmission stream that goes with a media stream (RFC 4588 §4, §8: SSRC-multiplexed,
/// `a=rtpmap:<pt> rtx/<rate>` with `a=fmtp:<pt> apt=<media pt>`, `a=ssrc-group:FID`).
public struct RTXConfiguration: Equatable, Sendable {
    /// The RTX stream's SSRC.
    public var ssrc: SSRC
    /// The RTX payload type.
    public var payloadType: PayloadType
    /// The media payload type it carries (`apt`).
    public var associatedPayloadType: PayloadType

    /// An RTX stream `ssrc` that carries `associatedPayloadType` as `payloadType`.
    public init(ssrc: SSRC, payloadType: PayloadType, associatedPayloadType: PayloadType) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.associatedPayloadType = associatedPayloadType
    }
}

/// Why an RTX packet cannot be turned back into the media packet it carries.
public enum RTXUnwrapError: Error, Equatable, Sendable {
    /// The payload is shorter than the 2-byte original sequence number (RFC 4588 §4), as in the
    /// padding-only packets senders use for bandwidth probing.
    case missingOriginalSequenceNumber
    /// The packet is not from the RTX stream, or not of its payload type.
    case notRetransmission(ssrc: SSRC, payloadType: PayloadType)
}

/// RFC 4588 §4 payload format: the RTX packet has the media packet's header with the RTX SSRC,
/// RTX payload type and the RTX stream's own sequence number; its payload is the original sequence
/// number (OSN) followed by the original payload.
///
/// ```
/// |                         RTP Header                            |
/// |            OSN                |                               |
/// |                  Original RTP Packet Payload                  |
/// ```
public enum RTXPacket {
    /// Wraps `original` for the RTX stream as packet `sequenceNumber` of that stream. Padding is
    /// dropped; marker, timestamp, CSRCs and header extensions are kept.
    public static func wrap(
        _ original: RTPPacket, configuration: RTXConfiguration, sequenceNumber: UInt16
    ) -> RTPPacket {
        var payload: [UInt8] = []
        payload.reserveCapacity(2 + original.payload.count)
        payload.append(UInt8(truncatingIfNeeded: original.sequenceNumber >> 8))
        payload.append(UInt8(truncatingIfNeeded: original.sequenceNumber))
        payload.append(contentsOf: original.payload)
        var packet = original
        packet.ssrc = configuration.ssrc
        packet.payloadType = configuration.payloadType
        packet.sequenceNumber = sequenceNumber
        packet.payload = payload[...]
        packet.paddingLength = 0
        return packet
    }

    /// The media packet an RTX packet carries (RFC 4588 §4): the OSN becomes the sequence number,
    /// the associated payload type and the media SSRC come back. The payload is a slice of the
    /// RTX packet's bytes (no copy).
    public static func unwrap(
        _ rtx: RTPPacket, configuration: RTXConfiguration, mediaSSRC: SSRC
    ) throws(RTXUnwrapError) -> RTPPacket {
        guard rtx.ssrc == configuration.ssrc, rtx.payloadType == configuration.payloadType else {
            throw .notRetransmission(ssrc: rtx.ssrc, payloadType: rtx.payloadType)
        }
        guard rtx.payload.count >= 2 else { throw .missingOriginalSequenceNumber }
        let start = rtx.payload.startIndex
        var packet = rtx
        packet.sequenceNumber = UInt16(rtx.payload[start]) << 8 | UInt16(rtx.payload[start + 1])
        packet.payload = rtx.payload[(start + 2)...]
        packet.payloadType = configuration.associatedPayloadType
        packet.ssrc = mediaSSRC
        packet.paddingLength = 0
        return packet
    }
}

/// The send side's history of recently sent RTP packets, from which generic NACKs
/// (RFC 4585 §6.2.1) are answered, as RTX (RFC 4588) when configured, else with the original bytes.
///
/// Bounded by count (a ring of `capacity` slots indexed by sequence number) and by age
/// (`maxAge`; `maxAgeAskedAgain` for a receiver still waiting past an RTX resend). A NACK storm
/// cannot amplify: each packet is resent at most once per `minimumResendInterval`, and all
/// resends together are held to `maxBytesPerSecond` by a token bucket that holds at most one
/// second's worth. Storing a packet keeps a reference to its bytes (no copy).
public struct RetransmissionBuffer: Sendable {
    /// Bounds and pacing.
    public struct Configuration: Equatable, Sendable {
        /// Packets kept (rounded up to a power of two); 0 keeps none (a receiver that did not
        /// agree NACK asks for nothing, and a kept packet's bytes are memory held for naught).
        public var capacity: Int = 1024
        /// Packets older than this are not resent, but for the case below.
        public var maxAge: Duration = .seconds(1)
        /// A packet asked for again after its RTX resend, by a receiver that seems not to take
        /// RTX, goes (as its original bytes) up to this age: that receiver is still waiting at
        /// the hole (aiortc until its jitter buffer overflows, 128 packets later) and asks again
        /// only at its next gap, seconds later at a few percent loss.
        public var maxAgeAskedAgain: Duration = .seconds(10)
        /// A packet is resent at most once per this interval, or per round trip when one is
        /// known (a receiver asks again before the resend could have reached it).
        public var minimumResendInterval: Duration = .milliseconds(10)
        /// Resent bytes per second at most (RTP bytes, before SRTP).
        public var maxBytesPerSecond: Int = 250_000
        /// The defaults: 1024 packets, 1 s, 10 ms per packet, 2 Mbit/s of resends.
        public init() {}
    }

    struct Slot: Sendable {
        var sequenceNumber: UInt16
        var sentAt: Instant
        var lastResentAt: Instant?
        /// Whether its last resend was on the RTX stream.
        var lastResentAsRTX = false
        /// Whether a request after that RTX resend was counted (`rtxResendsAskedAgain`).
        var askedAgainCounted = false
        var bytes: [UInt8]
    }

    /// The configuration in use (the byte budget may change with the stream's rate: `setBudget`).
    public private(set) var configuration: Configuration
    /// RTX stream, when negotiated.
    public var rtx: RTXConfiguration?
    /// The RTX stream's next sequence number.
    public private(set) var nextRTXSequenceNumber: UInt16
    private var slots: [Slot?]
    private let mask: Int
    private var tokens: Double
    private var tokensUpdatedAt: Instant?
    /// The round trip to the receiver, when measured: no packet is resent twice within it (as
    /// libwebrtc's packet history does), since a second request inside it crossed the first resend.
    public var roundTripTime: Duration?
    /// Packets resent so far.
    public private(set) var packetsResent: Int64 = 0
    /// RTX resends, and requests for a packet whose last resend was RTX (see `resend`).
    private var rtxResends = 0
    private var rtxResendsAskedAgain = 0
    /// First requests answered in-stream because the receiver seems to take no RTX.
    private var firstRequestsInStream = 0
    /// Requested packets not resent: unknown, too old, paced or over the byte budget.
    public private(set) var requestsRefused: Int64 = 0
    /// Requested packets that no resend can bring any more: unknown or too old (not those paced
    /// or over the budget, which a later request may still get). A receiver missing these needs
    /// a key frame instead.
    public private(set) var requestsUnanswerable: Int64 = 0

    /// A buffer with these bounds; `rtx` and the RTX stream's first sequence number (random per
    /// RFC 3550 §5.1) when RTX is negotiated.
    public init(configuration: Configuration = Configuration(), rtx: RTXConfiguration? = nil,
                firstRTXSequenceNumber: UInt16 = 0) {
        self.configuration = configuration
        self.rtx = rtx
        nextRTXSequenceNumber = firstRTXSequenceNumber
        var size = 1
        while size < max(1, configuration.capacity) { size <<= 1 }
        slots = [Slot?](repeating: nil, count: size)
        mask = size - 1
        tokens = Double(configuration.maxBytesPerSecond)
    }

    /// Holds all resends to `bytesPerSecond` from now on: repair as a share of the stream's rate,
    /// so that it never crowds out the media it repairs.
    public mutating func setBudget(bytesPerSecond: Int) {
        configuration.maxBytesPerSecond = max(0, bytesPerSecond)
        tokens = min(tokens, Double(configuration.maxBytesPerSecond))
    }

    /// Keeps a sent packet (serialized, before SRTP). Bytes that are not an RTP header are ignored.
    public mutating func packetSent(_ bytes: [UInt8], now: Instant) {
        guard configuration.capacity > 0, bytes.count >= RTPPacket.fixedHeaderSize else { return }
        let sequenceNumber = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        slots[Int(sequenceNumber) & mask] = Slot(sequenceNumber: sequenceNumber, sentAt: now, lastResentAt: nil, bytes: bytes)
    }

    /// The stored bytes of packet `sequenceNumber` if still held and young enough.
    public func storedPacket(_ sequenceNumber: UInt16, now: Instant) -> [UInt8]? {
        guard let slot = slots[Int(sequenceNumber) & mask], slot.sequenceNumber == sequenceNumber,
            now - slot.sentAt <= configuration.maxAge
        else { return nil }
        return slot.bytes
    }

    /// The packets to send in answer to `nack`, serialized and in the NACK's order: RTX packets
    /// when RTX is configured (the original bytes for a receiver that seems not to take RTX), else
    /// the original bytes. Paced and budgeted (see the type).
    public mutating func retransmissions(for nack: GenericNACK, now: Instant) -> [[UInt8]] {
        refillTokens(now: now)
        var out: [[UInt8]] = []
        // A NACK lists each number once per bit; 17 per pair bounds the work for hostile masks.
        for pair in nack.pairs {
            var mask = UInt32(pair.lostBitmask) << 1 | 1
            var offset: UInt16 = 0
            while mask != 0 {
                if mask & 1 != 0, let packet = resend(pair.packetID &+ offset, now: now) { out.append(packet) }
                mask >>= 1
                offset += 1
            }
        }
        return out
    }

    private mutating func resend(_ sequenceNumber: UInt16, now: Instant) -> [UInt8]? {
        let index = Int(sequenceNumber) & mask
        guard var slot = slots[index], slot.sequenceNumber == sequenceNumber else {
            requestsRefused += 1
            requestsUnanswerable += 1
            return nil
        }
        // A receiver may not take RTX at all: aiortc routes an RTX packet by its payload type
        // alone, so never on a second video m-line that shares the first's RTX type, and waits
        // at the hole until its jitter buffer overflows (128 packets: 8 s of a small camera).
        // Such a receiver asks again for every packet resent as RTX; one that takes RTX, only
        // for those whose resend was lost. A request after an RTX resend is counted even when it
        // is too old or too soon to answer: aiortc asks again only at its next gap, often more
        // than `maxAge` later.
        let askedAgainAfterRTX = slot.lastResentAsRTX
        if askedAgainAfterRTX && !slot.askedAgainCounted {
            rtxResendsAskedAgain += 1
            slot.askedAgainCounted = true
            slots[index] = slot
        }
        // While at least half the stream's RTX resends were asked for again, a packet asked for
        // again goes as its original bytes on the media stream (RFC 4588 §1's "same stream"
        // repair, taken as a late packet); from the second such request on, so do first requests,
        // but for every eighth, which tests RTX again (a receiver that merely lost a few RTX
        // resends gets RTX back). Else RTX: an in-stream repair counts in the receiver's reports
        // as received, not lost, and its lateness as jitter.
        let rtxSeemsIgnored = rtxResendsAskedAgain * 2 >= rtxResends
        let maxAge = askedAgainAfterRTX && rtxSeemsIgnored ? configuration.maxAgeAskedAgain : configuration.maxAge
        guard now - slot.sentAt <= maxAge else {
            requestsRefused += 1
            requestsUnanswerable += 1
            return nil
        }
        if let last = slot.lastResentAt, now - last < max(configuration.minimumResendInterval, roundTripTime ?? .zero) {
            requestsRefused += 1
            return nil
        }
        var bytes = slot.bytes
        let asRTX: RTXConfiguration?
        if askedAgainAfterRTX {
            asRTX = rtxSeemsIgnored ? nil : rtx
        } else if rtx != nil, rtxResendsAskedAgain >= 2, rtxSeemsIgnored {
            firstRequestsInStream += 1
            asRTX = firstRequestsInStream % 8 == 0 ? rtx : nil
        } else {
            asRTX = rtx
        }
        if let rtx = asRTX {
            guard let original = try? RTPPacket.parse(slot.bytes) else {
                requestsRefused += 1
                return nil
            }
            let wrapped = RTXPacket.wrap(original, configuration: rtx, sequenceNumber: nextRTXSequenceNumber)
            guard let serialized = try? wrapped.serialized() else {
                requestsRefused += 1
                return nil
            }
            bytes = serialized
        }
        guard Double(bytes.count) <= tokens else {
            // Not past repair: the receiver asks again a round trip later, when the budget has
            // refilled.
            requestsRefused += 1
            return nil
        }
        tokens -= Double(bytes.count)
        if asRTX != nil {
            nextRTXSequenceNumber &+= 1
            rtxResends += 1
            // The share follows the receiver of late: the counts halve as they grow.
            if rtxResends >= 128 { (rtxResends, rtxResendsAskedAgain) = (rtxResends / 2, rtxResendsAskedAgain / 2) }
        }
        slot.lastResentAt = now
        slot.lastResentAsRTX = asRTX != nil
        slot.askedAgainCounted = false
        slots[index] = slot
        packetsResent += 1
        return bytes
    }

    private mutating func refillTokens(now: Instant) {
        let rate = Double(max(0, configuration.maxBytesPerSecond))
        if let last = tokensUpdatedAt, now > last {
            let seconds = (now - last).seconds
            tokens = min(rate, tokens + rate * seconds)
        }
        if tokensUpdatedAt.map({ now > $0 }) ?? true { tokensUpdatedAt = now }
    }
}
