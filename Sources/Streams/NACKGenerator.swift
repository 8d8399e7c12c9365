import RTP
import Wire

/// Decides which lost RTP packets to ask for again with generic NACK (RFC 4585 §6.2.1), and when.
///
/// A gap in the extended sequence numbers records each missing number. A number is first asked
/// for after a short reorder wait: `reorderPacketThreshold` packets arrived since the gap showed
/// (the packet that revealed it counts) or `reorderDelay` passed, whichever is first. It is asked
/// again at most once per round-trip time, at most `maxRequestsPerPacket` times. A number is given
/// up when its requests are used up and one more round trip passed, when it falls
/// `maxPacketAge` numbers behind the highest, or after `maxTimeAge`; for video a give-up means the
/// decoder will miss a reference, so `keyFrameNeeded` is raised (RFC 4585 §6.3.1: ask by PLI).
///
/// A packet that arrives, original or retransmitted, clears its number. Memory is bounded by
/// `maxMissingPackets` entries, kept in one preallocated array in sequence order: per packet the
/// work is a binary search, or an append per newly missing number.
public struct NACKGenerator: Sendable {
    /// Tuning of the NACK timing and bounds.
    public struct Configuration: Equatable, Sendable {
        /// Later packets (including the one that revealed the gap) after which a gap is not
        /// reordering any more.
        public var reorderPacketThreshold: Int = 3
        /// Time after which a gap is not reordering any more.
        public var reorderDelay: Duration = .milliseconds(15)
        /// Round-trip time used before one is measured.
        public var defaultRoundTripTime: Duration = .milliseconds(100)
        /// Requests per missing packet before giving up (the retransmission budget).
        public var maxRequestsPerPacket: Int = 10
        /// A missing number this far behind the highest received is given up.
        public var maxPacketAge: Int64 = 1000
        /// A missing number missing this long is given up.
        public var maxTimeAge: Duration = .seconds(1)
        /// Bound on the numbers tracked; older ones are given up first.
        public var maxMissingPackets: Int = 1000
        /// Whether a give-up raises `keyFrameNeeded` (video; audio just conceals the loss).
        public var requestsKeyFrameOnGiveUp: Bool = true
        /// The longest the learned reorder wait may grow: beyond it a late packet is asked for
        /// anyway (repair that comes late beats a frozen picture).
        public var maximumReorderDelay: Duration = .milliseconds(120)

        /// The defaults: 3 packets or 15 ms reorder wait, 100 ms RTT until measured, 10 requests,
        /// 1000 packets or 1 s window, keyframe on give-up.
        public init() {}
    }

    /// One missing sequence number.
    struct MissingPacket: Sendable {
        var sequence: Int64
        var detectedAt: Instant
        var arrivalsAtDetection: UInt64
        var lastRequestedAt: Instant
        var requests: UInt8
        var isLive: Bool
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// The round-trip time between NACK and retransmission; update it from RTCP.
    public var roundTripTime: Duration
    private var entries: [MissingPacket] = []
    private var head = 0
    /// Live entries.
    public private(set) var missingCount = 0
    private var highest: Int64?
    private var arrivals: UInt64 = 0
    /// Set when a missing packet was given up on video: a keyframe is needed. Cleared by
    /// `takeKeyFrameRequest()` or `keyFrameReceived(extendedSequenceNumber:)`.
    public private(set) var keyFrameNeeded = false
    /// Sequence numbers given up so far, for statistics.
    public private(set) var packetsGivenUp: Int64 = 0
    /// NACK requests made so far (one per sequence number per request).
    public private(set) var requestsSent: Int64 = 0
    /// How long after their gap showed late originals arrived: 5 ms buckets, decaying so that
    /// the path's recent behaviour counts.
    private var reorderHistogram = [Double](repeating: 0, count: 48)
    /// The 95th percentile of `reorderHistogram`: the learned wait before a first request.
    public private(set) var learnedReorderDelay: Duration = .zero
    static let reorderBucket: Duration = .milliseconds(5)

    /// A generator with this configuration.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        roundTripTime = configuration.defaultRoundTripTime
        entries.reserveCapacity(configuration.maxMissingPackets * 2)
    }

    private var resendInterval: Duration { max(roundTripTime, .milliseconds(5)) }

    /// Forgets everything, as after a stream restart.
    public mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        head = 0
        missingCount = 0
        highest = nil
        keyFrameNeeded = false
    }

    /// Records the arrival of the packet with this extended sequence number (from
    /// `RTPReceiveStatistics.record`), original or retransmitted.
    public mutating func packetArrived(extendedSequenceNumber sequence: Int64, now: Instant, isRetransmission: Bool = false) {
        arrivals &+= 1
        guard let last = highest else {
            highest = sequence
            return
        }
        if sequence <= last {
            if let detectedAt = markReceived(sequence), !isRetransmission { learnReordering(now - detectedAt) }
            return
        }
        // Every number between the old highest and this one is missing.
        let gap = sequence - last - 1
        let limit = Int64(max(1, configuration.maxMissingPackets))
        if gap > limit {
            // More than the list can hold: the oldest of the gap are given up at once.
            giveUp(count: gap - limit)
        }
        var missing = max(last + 1, sequence - limit)
        while missing < sequence {
            append(MissingPacket(
                sequence: missing, detectedAt: now, arrivalsAtDetection: arrivals &- 1, lastRequestedAt: now,
                requests: 0, isLive: true))
            missing += 1
        }
        highest = sequence
        // Numbers too far behind the highest are given up (RFC 4585 §6.2.1 leaves the window to us).
        while head < entries.count, entries[head].sequence < sequence - configuration.maxPacketAge {
            dropHead(givingUp: entries[head].isLive)
        }
    }

    /// A keyframe arrived at this sequence number: nothing before it is needed any more.
    public mutating func keyFrameReceived(extendedSequenceNumber sequence: Int64) {
        while head < entries.count, entries[head].sequence < sequence { dropHead(givingUp: false) }
        keyFrameNeeded = false
    }

    /// Whether a keyframe is needed; clears the flag.
    public mutating func takeKeyFrameRequest() -> Bool {
        defer { keyFrameNeeded = false }
        return keyFrameNeeded
    }

    /// The sequence numbers to put in a NACK now, in ascending order (across the wrap); each is
    /// counted as requested at `now`. Gives up on numbers past their budget or window.
    public mutating func pollLostSequenceNumbers(now: Instant) -> [UInt16] {
        var due: [UInt16] = []
        let interval = resendInterval
        var index = head
        while index < entries.count {
            defer { index += 1 }
            guard entries[index].isLive else { continue }
            let entry = entries[index]
            if now - entry.detectedAt >= configuration.maxTimeAge {
                kill(at: index, givingUp: true)
                continue
            }
            if entry.requests == 0 {
                let laterPackets = arrivals &- entry.arrivalsAtDetection
                let waited = now - entry.detectedAt
                if learnedReorderDelay > configuration.reorderDelay {
                    guard waited >= learnedReorderDelay else { continue }
                } else {
                    guard laterPackets >= UInt64(max(0, configuration.reorderPacketThreshold))
                        || waited >= configuration.reorderDelay
                    else { continue }
                }
            } else {
                guard now - entry.lastRequestedAt >= interval else { continue }
                if Int(entry.requests) >= configuration.maxRequestsPerPacket {
                    // The last retransmission had a round trip to arrive and did not.
                    kill(at: index, givingUp: true)
                    continue
                }
            }
            entries[index].requests &+= 1
            entries[index].lastRequestedAt = now
            due.append(UInt16(truncatingIfNeeded: entry.sequence))
        }
        requestsSent += Int64(due.count)
        compactIfNeeded()
        return due
    }

    /// When `pollLostSequenceNumbers` next has something to do, or nil when nothing is missing.
    public var nextTimeout: Instant? {
        var earliest: Instant?
        let interval = resendInterval
        for index in head..<entries.count where entries[index].isLive {
            let entry = entries[index]
            let next =
                entry.requests == 0
                ? entry.detectedAt + max(configuration.reorderDelay, learnedReorderDelay)
                : entry.lastRequestedAt + interval
            let due = min(next, entry.detectedAt + configuration.maxTimeAge)
            if earliest.map({ due < $0 }) ?? true { earliest = due }
        }
        return earliest
    }

    /// The live missing numbers, ascending, for inspection.
    public var missingSequenceNumbers: [Int64] {
        entries[head...].filter(\.isLive).map(\.sequence)
    }

    // MARK: - Entry list

    private mutating func append(_ entry: MissingPacket) {
        if entries.count - head >= configuration.maxMissingPackets { dropHead(givingUp: entries[head].isLive) }
        compactIfNeeded()
        entries.append(entry)
        missingCount += 1
    }

    /// A late original arrived `delay` after its gap showed: the histogram decays a little and
    /// counts it, and the wait becomes its 95th percentile.
    private mutating func learnReordering(_ delay: Duration) {
        let bucketNanoseconds = Self.reorderBucket.nanosecondsClamped
        let bucket = min(reorderHistogram.count - 1, Int(max(0, delay.nanosecondsClamped) / bucketNanoseconds))
        var total = 0.0
        for index in reorderHistogram.indices {
            reorderHistogram[index] *= 0.995
            total += reorderHistogram[index]
        }
        reorderHistogram[bucket] += 1
        total += 1
        var seen = 0.0
        var percentile = reorderHistogram.count
        for index in reorderHistogram.indices {
            seen += reorderHistogram[index]
            if seen >= 0.95 * total {
                percentile = index + 1
                break
            }
        }
        learnedReorderDelay = min(configuration.maximumReorderDelay, .nanoseconds(Int64(percentile) * bucketNanoseconds))
    }

    /// Clears a missing number that arrived; returns when its gap showed (nil when it was not
    /// missing).
    @discardableResult
    private mutating func markReceived(_ sequence: Int64) -> Instant? {
        // Binary search: entries are in ascending sequence order.
        var low = head
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        guard low < entries.count, entries[low].sequence == sequence, entries[low].isLive else { return nil }
        kill(at: low, givingUp: false)
        return entries[low].detectedAt
    }

    private mutating func kill(at index: Int, givingUp: Bool) {
        entries[index].isLive = false
        missingCount -= 1
        if givingUp { noteGiveUp(1) }
        while head < entries.count, !entries[head].isLive { head += 1 }
    }

    private mutating func dropHead(givingUp: Bool) {
        if entries[head].isLive {
            missingCount -= 1
            if givingUp { noteGiveUp(1) }
        }
        head += 1
        while head < entries.count, !entries[head].isLive { head += 1 }
    }

    private mutating func giveUp(count: Int64) { noteGiveUp(count) }

    private mutating func noteGiveUp(_ count: Int64) {
        packetsGivenUp += count
        if configuration.requestsKeyFrameOnGiveUp { keyFrameNeeded = true }
    }

    /// Moves the live tail to the front once the dead head is large, without reallocating.
    private mutating func compactIfNeeded() {
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 256 && head * 2 >= entries.count {
            entries.removeSubrange(0..<head)
            head = 0
        }
    }
}
