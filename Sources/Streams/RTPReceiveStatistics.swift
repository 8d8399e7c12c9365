import RTP
import Wire

/// What one arriving RTP packet was, for the sequence of its stream (RFC 3550 Appendix A.1).
public enum RTPArrival: Equatable, Sendable {
    /// A packet not seen before, in order or filling an earlier gap, at this extended sequence number.
    case accepted(extendedSequenceNumber: Int64)
    /// The stream restarted (a confirmed large jump, RFC 3550 A.1 `bad_seq`): statistics began
    /// again from this packet; reset what depends on the old sequence (jitter buffer, NACK list).
    case restarted(extendedSequenceNumber: Int64)
    /// A packet already received (within the last 1024 sequence numbers); drop it.
    case duplicate
    /// The source is still on probation (RFC 3550 A.1 `MIN_SEQUENTIAL`); not yet counted.
    case probation
    /// A large jump or a very old packet, held as a possible restart (RFC 3550 A.1); drop it.
    case discontinuity

    /// The extended sequence number when the packet is new to the stream.
    public var extendedSequenceNumber: Int64? {
        switch self {
        case .accepted(let value), .restarted(let value): value
        case .duplicate, .probation, .discontinuity: nil
        }
    }
}

/// Reception statistics of one received RTP stream (RFC 3550 §6.4.1, Appendix A.1, A.3, A.8):
/// extended highest sequence number, packets received, cumulative and fractional loss,
/// interarrival jitter, and the last SR, from which a `ReceptionReport` block is made.
///
/// Packets that come back by retransmission (`isRetransmission`) do not count as received, so the
/// report shows the loss the network caused, as libwebrtc's does; they still mark the sequence
/// number as seen so a late original is recognised as a duplicate. Duplicates within the last 1024
/// sequence numbers are detected with a bitmap and not counted either, so cumulative loss does not
/// go negative through duplication (RFC 3550 §6.4.1 allows it to). Per packet: no allocation.
public struct RTPReceiveStatistics: Sendable {
    /// RFC 3550 A.1: jumps at least this far ahead are held as a possible restart.
    public static let maxDropout: Int64 = 3000
    /// RFC 3550 A.1: packets at most this far behind the highest are late, not a restart.
    public static let maxMisorder: Int64 = 100

    /// The source described.
    public let ssrc: SSRC
    /// The media clock rate (90000 video, 48000 Opus), for jitter in timestamp units.
    public let clockRate: UInt32
    /// In-sequence packets needed before the source is valid (RFC 3550 A.1 `MIN_SEQUENTIAL`).
    public let minimumSequential: Int

    private var unwrapper = SequenceUnwrapper()
    private var started = false
    private var probationLeft: Int
    private var probationStart: Int64 = 0
    /// A.1 `bad_seq`: the sequence number after a held jump; a packet with it confirms a restart.
    private var badSequence: UInt16?
    private var base: Int64 = 0
    private var highest: Int64 = 0
    private var seen = SeenSequenceWindow()
    /// Original (non-retransmitted, non-duplicate) packets counted since the (re)start.
    public private(set) var packetsReceived: Int64 = 0
    /// Payload bytes of the packets counted in `packetsReceived`.
    public private(set) var payloadBytesReceived: Int64 = 0
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    /// A.8 jitter estimate in timestamp units, unrounded.
    private var jitterEstimate: Double = 0
    private var lastArrival: Instant?
    private var lastTimestamp: UInt32 = 0
    private var lastSenderReportNTP: NTPTimestamp?
    private var lastSenderReportArrival: Instant?

    /// Statistics for `ssrc` at `clockRate`, with RFC 3550's probation of 2 packets by default
    /// (0 or 1 accepts the first packet at once).
    public init(ssrc: SSRC, clockRate: UInt32, minimumSequential: Int = 2) {
        self.ssrc = ssrc
        self.clockRate = max(1, clockRate)
        self.minimumSequential = max(1, minimumSequential)
        probationLeft = self.minimumSequential
    }

    /// Whether the source has passed probation.
    public var isValid: Bool { started && probationLeft == 0 }

    /// Extended highest sequence number received (A.3 `cycles + max_seq`), once valid.
    public var extendedHighestSequenceNumber: Int64? { isValid ? highest : nil }

    /// Packets expected from the first to the highest (A.3 `expected`).
    public var packetsExpected: Int64 { isValid ? highest - base + 1 : 0 }

    /// Packets lost since the (re)start: expected minus received (A.3), never negative here.
    public var cumulativeLost: Int64 { max(0, packetsExpected - packetsReceived) }

    /// Interarrival jitter in timestamp units (A.8).
    public var jitter: UInt32 { UInt32(clamping: Int64(jitterEstimate)) }

    /// Interarrival jitter as a duration.
    public var jitterDuration: Duration { .nanoseconds(Int64(jitterEstimate * 1e9 / Double(clockRate))) }

    /// Records one RTP packet's arrival and says what it was.
    public mutating func record(
        sequenceNumber: UInt16, timestamp: UInt32, payloadSize: Int = 0, arrival: Instant,
        isRetransmission: Bool = false
    ) -> RTPArrival {
        guard started else {
            start(at: sequenceNumber)
            return probationStep(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadSize: payloadSize,
                                 arrival: arrival)
        }
        if probationLeft > 0 {
            return probationStep(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadSize: payloadSize,
                                 arrival: arrival)
        }
        let extended = unwrapper.peek(sequenceNumber)
        let delta = extended - highest
        if delta > 0 && delta < Self.maxDropout {
            // In order, with a permissible gap (A.1).
            _ = unwrapper.unwrap(sequenceNumber)
            seen.advance(to: extended, from: highest)
            highest = extended
            badSequence = nil
        } else if delta <= 0 && delta >= -Self.maxMisorder {
            // Late or duplicate (A.1).
            if extended < base - Self.maxMisorder { return .discontinuity }
            if seen.contains(extended, highest: highest) { return .duplicate }
            if extended < base { base = extended }
        } else {
            // A very large jump (A.1): a restart if the next packet follows it, else stray.
            if let badSequence, sequenceNumber == badSequence {
                restart(at: sequenceNumber)
                count(sequenceNumber: sequenceNumber, extended: highest, timestamp: timestamp,
                      payloadSize: payloadSize, arrival: arrival, isRetransmission: false)
                return .restarted(extendedSequenceNumber: highest)
            }
            badSequence = sequenceNumber &+ 1
            return .discontinuity
        }
        seen.insert(extended, highest: highest)
        count(sequenceNumber: sequenceNumber, extended: extended, timestamp: timestamp, payloadSize: payloadSize,
              arrival: arrival, isRetransmission: isRetransmission)
        return .accepted(extendedSequenceNumber: extended)
    }

    private mutating func start(at sequenceNumber: UInt16) {
        started = true
        probationLeft = minimumSequential
        unwrapper = SequenceUnwrapper()
        probationStart = unwrapper.unwrap(sequenceNumber)
        highest = probationStart
    }

    /// A.1 probation: `minimumSequential` packets in sequence make the source valid; the packets
    /// of the probation then count as received.
    private mutating func probationStep(
        sequenceNumber: UInt16, timestamp: UInt32, payloadSize: Int, arrival: Instant
    ) -> RTPArrival {
        let extended = unwrapper.peek(sequenceNumber)
        if extended == highest + 1 {
            _ = unwrapper.unwrap(sequenceNumber)
            highest = extended
        } else if extended != probationStart || highest != probationStart {
            // Out of sequence during probation: begin it again from this packet.
            unwrapper = SequenceUnwrapper()
            probationStart = unwrapper.unwrap(sequenceNumber)
            highest = probationStart
            probationLeft = minimumSequential
        }
        probationLeft = max(0, minimumSequential - Int(highest - probationStart + 1))
        guard probationLeft == 0 else { return .probation }
        base = probationStart
        seen = SeenSequenceWindow()
        var sequence = probationStart
        while sequence <= highest {
            seen.insert(sequence, highest: highest)
            sequence += 1
        }
        packetsReceived = highest - base
        payloadBytesReceived = 0
        count(sequenceNumber: sequenceNumber, extended: highest, timestamp: timestamp, payloadSize: payloadSize,
              arrival: arrival, isRetransmission: false)
        return .accepted(extendedSequenceNumber: highest)
    }

    /// A.1 `init_seq` after a confirmed restart: the new packet is the first of a valid source.
    private mutating func restart(at sequenceNumber: UInt16) {
        unwrapper = SequenceUnwrapper()
        highest = unwrapper.unwrap(sequenceNumber)
        base = highest
        probationStart = highest
        badSequence = nil
        seen = SeenSequenceWindow()
        seen.insert(highest, highest: highest)
        packetsReceived = 0
        payloadBytesReceived = 0
        expectedPrior = 0
        receivedPrior = 0
        jitterEstimate = 0
        lastArrival = nil
    }

    private mutating func count(
        sequenceNumber: UInt16, extended: Int64, timestamp: UInt32, payloadSize: Int, arrival: Instant,
        isRetransmission: Bool
    ) {
        guard !isRetransmission else { return }
        packetsReceived += 1
        payloadBytesReceived += Int64(max(0, payloadSize))
        // A.8: D(i,j) = (Rj - Ri) - (Sj - Si) in timestamp units; J += (|D| - J) / 16.
        if let lastArrival {
            let arrivalNanoseconds = Double((arrival - lastArrival).nanosecondsClamped)
            let arrivalUnits = arrivalNanoseconds * Double(clockRate) / 1e9
            let timestampUnits = Double(Int32(bitPattern: timestamp &- lastTimestamp))
            let difference = abs(arrivalUnits - timestampUnits)
            jitterEstimate += (difference - jitterEstimate) / 16
        }
        lastArrival = arrival
        lastTimestamp = timestamp
    }

    /// Records an SR from this source: its NTP time becomes the next report's LSR, and the arrival
    /// time the start of its DLSR (RFC 3550 §6.4.1).
    public mutating func receivedSenderReport(ntpTimestamp: UInt64, arrival: Instant) {
        lastSenderReportNTP = NTPTimestamp(rawValue: ntpTimestamp)
        lastSenderReportArrival = arrival
    }

    /// The report block about this source at `now` (RFC 3550 §6.4.1, A.3), and starts the next
    /// fraction-lost interval. Nil until the source is valid.
    public mutating func makeReceptionReport(now: Instant) -> ReceptionReport? {
        guard isValid else { return nil }
        let expected = packetsExpected
        // A.3: fraction lost over the interval since the previous report, in 1/256.
        let expectedInterval = expected - expectedPrior
        let receivedInterval = packetsReceived - receivedPrior
        expectedPrior = expected
        receivedPrior = packetsReceived
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 =
            expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(clamping: (lostInterval << 8) / expectedInterval)
        var lastSenderReport: UInt32 = 0
        var delay: UInt32 = 0
        if let ntp = lastSenderReportNTP, let arrival = lastSenderReportArrival {
            lastSenderReport = ntp.compact
            delay = compactNTP(of: now - arrival)
        }
        return ReceptionReport(
            ssrc: ssrc, fractionLost: fraction, cumulativeLost: Int32(clamping: cumulativeLost),
            extendedHighestSequenceNumber: UInt32(truncatingIfNeeded: highest), jitter: jitter,
            lastSenderReport: lastSenderReport, delaySinceLastSenderReport: delay)
    }
}

/// Which of the last 1024 extended sequence numbers were received: a fixed bitmap ring, so
/// duplicate detection costs no allocation per packet.
struct SeenSequenceWindow: Sendable {
    static let size: Int64 = 1024
    private var words = [UInt64](repeating: 0, count: Int(size / 64))

    @inline(__always)
    private static func slot(_ sequence: Int64) -> (word: Int, bit: UInt64) {
        let index = Int(UInt64(bitPattern: sequence) % UInt64(size))
        return (index >> 6, 1 << UInt64(index & 63))
    }

    /// Clears the bits of numbers after `old` up to `new`, which the ring now reuses.
    mutating func advance(to new: Int64, from old: Int64) {
        let steps = min(new - old, Self.size)
        guard steps > 0 else { return }
        if steps == Self.size {
            for index in words.indices { words[index] = 0 }
            return
        }
        var sequence = old + 1
        while sequence <= old + steps {
            let (word, bit) = Self.slot(sequence)
            words[word] &= ~bit
            sequence += 1
        }
    }

    func contains(_ sequence: Int64, highest: Int64) -> Bool {
        guard sequence <= highest, highest - sequence < Self.size else { return false }
        let (word, bit) = Self.slot(sequence)
        return words[word] & bit != 0
    }

    mutating func insert(_ sequence: Int64, highest: Int64) {
        guard sequence <= highest, highest - sequence < Self.size else { return }
        let (word, bit) = Self.slot(sequence)
        words[word] |= bit
    }
}
