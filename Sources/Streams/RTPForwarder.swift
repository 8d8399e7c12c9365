import RTP
import Wire

/// Puts one sender's VP8 packets, as they arrive, on a stream of the host's (the forwarding of
/// an SFU; mediasoup's `SeqManager` and `RtpStreamSend` do the same): payload untouched; SSRC
/// and payload type the receiver's; sequence numbers and timestamps shifted so the receiver sees
/// one continuous stream, across a sender that changes its SSRC (a rejoin) and across pauses.
///
/// It starts at a key frame: until one begins, packets are held back (a decoder could do
/// nothing with them). Not at a key frame's first packet that comes late (a repair, or
/// reordered) after later packets were held back: those are gone, and the receiver would wait
/// at the hole they leave, asking for packets nobody forwarded (aiortc for 128 packets). Within a source the shift stays fixed, so a gap the sender left is a gap
/// the receiver sees (and may NACK), and a late repair fills it. At a new source the stream goes
/// on one sequence number after its highest and at a timestamp as far after its last as the
/// wall clock moved (RFC 3550 §5.1: the timestamp follows the sampling instant).
public struct RTPForwarder: Sendable {
    /// The host's stream: its SSRC and the receiver's payload type for VP8.
    public let ssrc: SSRC
    public let payloadType: PayloadType

    /// The source forwarded now, and the extended sequence number of the key frame it began at.
    private var source: (ssrc: SSRC, unwrapper: SequenceUnwrapper, start: Int64)?
    private var sequenceShift: UInt16 = 0
    private var timestampShift: UInt32 = 0
    /// The highest sequence number sent, its timestamp and when.
    private var last: (sequenceNumber: UInt16, timestamp: UInt32, at: Instant)
    private var highestExtended: Int64 = .min
    /// While waiting: the source's packets held back, the highest of them (extended).
    private var heldBack: (ssrc: SSRC, unwrapper: SequenceUnwrapper, highest: Int64)?
    /// Whether it waits for a key frame before forwarding (at the start, and after `restart`).
    public private(set) var waitingForKeyFrame = true
    /// Packets forwarded, and held back waiting for a key frame.
    public private(set) var packetsForwarded = 0
    public private(set) var packetsHeldBack = 0

    /// A stream that begins at `firstSequenceNumber` and `firstTimestamp` (random, RFC 3550 §5.1).
    public init(ssrc: SSRC, payloadType: PayloadType, firstSequenceNumber: UInt16, firstTimestamp: UInt32, now: Instant) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        last = (firstSequenceNumber &- 1, firstTimestamp, now)
    }

    /// Waits for the next key frame before forwarding more: a new subscription to the stream, or
    /// forwarding resumed after a pause. Numbering goes on from where it stopped.
    public mutating func restart() {
        waitingForKeyFrame = true
        source = nil
        heldBack = nil
    }

    /// The packet as the receiver gets it (header extensions removed: the receiver negotiated its
    /// own ids; the caller adds what it sends), or nil while waiting for a key frame and for
    /// packets older than the key frame it began at.
    public mutating func forward(_ packet: RTPPacket, now: Instant) -> RTPPacket? {
        if source?.ssrc != packet.ssrc { waitingForKeyFrame = true }
        if waitingForKeyFrame {
            var waiting = heldBack.flatMap { $0.ssrc == packet.ssrc ? $0 : nil } ?? (packet.ssrc, SequenceUnwrapper(), .min)
            let extended = waiting.unwrapper.unwrap(packet.sequenceNumber)
            guard VP8PayloadDescriptor.beginsKeyFrame(packet.payload), extended > waiting.highest else {
                waiting.highest = max(waiting.highest, extended)
                heldBack = waiting
                packetsHeldBack += 1
                return nil
            }
            heldBack = nil
            let start = extended
            source = (packet.ssrc, waiting.unwrapper, start)
            highestExtended = start - 1
            let elapsed = max(.zero, now - last.at)
            let ticks = max(1, Int64(elapsed.seconds * 90_000))
            sequenceShift = last.sequenceNumber &+ 1 &- packet.sequenceNumber
            timestampShift = last.timestamp &+ UInt32(truncatingIfNeeded: ticks) &- packet.timestamp
            waitingForKeyFrame = false
        }
        guard var current = source else { return nil }
        let extended = current.unwrapper.unwrap(packet.sequenceNumber)
        source = current
        guard extended >= current.start else { return nil }
        var out = packet
        out.ssrc = ssrc
        out.payloadType = payloadType
        out.sequenceNumber = packet.sequenceNumber &+ sequenceShift
        out.timestamp = packet.timestamp &+ timestampShift
        out.extensions = []
        out.otherProfileExtension = nil
        out.csrcs = []
        if extended > highestExtended {
            highestExtended = extended
            last = (out.sequenceNumber, out.timestamp, now)
        }
        packetsForwarded += 1
        return out
    }
}
