import RTP
import Wire

/// Puts a receiver's mix packets back in sequence order before they are decoded, as a player's
/// jitter buffer does: a packet waits while one before it is missing, at most `wait`; then the
/// gap is passed over. A packet behind what was already passed on is late and dropped. Decoding
/// Opus out of order would measure garbage (each packet predicts from the one before).
struct MixReorder {
    /// Longer than the jitter `tessera load --jitter` puts on a packet (100 ms in the network table).
    static let wait: Duration = .milliseconds(150)
    private var waiting: [Int64: (packet: RTPPacket, arrival: Instant)] = [:]
    private var next: Int64?
    private var unwrapper = SequenceUnwrapper()
    private(set) var late = 0

    /// Takes an arrived packet; returns those now due, in order.
    mutating func insert(_ packet: RTPPacket, now: Instant) -> [RTPPacket] {
        let sequence = unwrapper.unwrap(packet.sequenceNumber)
        if let next, sequence < next {
            late += 1
            return []
        }
        if next == nil { next = sequence }
        waiting[sequence] = (packet, now)
        return release(now: now)
    }

    /// The packets due at `now`: the run from the next expected one, or, once the oldest waiting
    /// packet has waited `wait`, the run from it.
    mutating func release(now: Instant) -> [RTPPacket] {
        var out: [RTPPacket] = []
        while let first = next {
            if let entry = waiting.removeValue(forKey: first) {
                out.append(entry.packet)
                next = first + 1
                continue
            }
            guard let oldest = waiting.min(by: { $0.key < $1.key }), now - oldest.value.arrival >= Self.wait else { break }
            next = oldest.key  // pass over the gap
        }
        return out
    }
}
