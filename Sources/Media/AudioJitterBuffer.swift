import RTP
import Wire

/// The receive buffer for one Opus stream, sans-IO: RTP payloads go in with their sequence
/// number, RTP timestamp and arrival time; on every 20 ms audio tick ``pop(now:)`` says what to
/// play, so that packets that come early, late or out of order still play in order and on time.
///
/// How it plays:
/// - It waits, silent, until the first packet has been held for the target delay less one frame
///   (the tick's own phase is the last frame), then plays one packet per tick in sequence order.
/// - A missing packet whose successors have come is lost: ``Output/recoverWithFEC(nextPacket:)``
///   when the next packet carries in-band FEC, else ``Output/conceal``; the slot is passed.
/// - When nothing at all is buffered (an underrun: the packet is late, or the sender stopped),
///   the tick is concealed *without* passing the slot, so a late packet still plays and the delay
///   grows by a frame: that is how the delay rises with jitter. After `stallTimeout` of this it
///   stops (``Output/silence``) and buffers afresh when packets come again (DTX, a muted guest).
/// - The target delay follows the RFC 3550 interarrival jitter J: clamp(2 J + one frame,
///   `minimumDelay`...`maximumDelay`). When more than a frame beyond it is buffered (after a
///   burst, or underruns that jitter no longer explains), one packet is skipped, at most every
///   200 ms, to bring the delay back down.
/// - At most `maximumDepth` is held; beyond that the oldest packets are dropped. Packets whose
///   slot has already played are discarded as late; duplicates are ignored.
///
/// It assumes one packet per frame duration (20 ms: what WebRTC peers send, `ptime` 20), so that
/// sequence numbers count frames; DTX gaps keep consecutive sequence numbers and play as
/// underruns (concealment is then Opus's comfort noise).
public struct AudioJitterBuffer: Sendable {
    /// Timing and bounds.
    public struct Configuration: Sendable, Equatable {
        /// The audio in one packet and the tick interval.
        public var frameDuration: Duration
        /// The RTP clock rate (48 000 for Opus, RFC 7587).
        public var clockRate: Int
        /// The least target delay.
        public var minimumDelay: Duration
        /// The greatest target delay.
        public var maximumDelay: Duration
        /// The most audio held; older packets are dropped beyond it.
        public var maximumDepth: Duration
        /// How long an underrun lasts before the stream counts as stopped.
        public var stallTimeout: Duration

        /// A configuration; the defaults suit 20 ms Opus.
        public init(frameDuration: Duration = .milliseconds(20), clockRate: Int = 48_000, minimumDelay: Duration = .milliseconds(20),
                    maximumDelay: Duration = .milliseconds(200), maximumDepth: Duration = .milliseconds(400),
                    stallTimeout: Duration = .milliseconds(200)) {
            self.frameDuration = frameDuration
            self.clockRate = clockRate
            self.minimumDelay = minimumDelay
            self.maximumDelay = maximumDelay
            self.maximumDepth = maximumDepth
            self.stallTimeout = stallTimeout
        }
    }

    /// What to play on one tick.
    public enum Output: Equatable, Sendable {
        /// Decode and play this packet.
        case packet([UInt8])
        /// This tick's packet is here and its sender said it is silence (an RFC 6464 level of
        /// `AudioReceiver.silentLevel` or quieter): `AudioReceiver` decodes the first of a run
        /// and plays the rest as silence.
        case silentPacket([UInt8])
        /// This tick's packet is lost, but the next one is here and carries in-band FEC: decode
        /// the lost frame from it (`OpusDecoder.decodeFEC`); it plays normally on the next tick.
        case recoverWithFEC(nextPacket: [UInt8])
        /// This tick's packet is missing: conceal (`OpusDecoder.concealLoss`).
        case conceal
        /// No stream is playing (before the first packet, while buffering, or after a stall).
        case silence
    }

    /// Counters and the current delay, for metrics and receiver reports.
    public struct Statistics: Equatable, Sendable {
        /// Packets played.
        public var played = 0
        /// Lost packets recovered from the next packet's FEC.
        public var recoveredWithFEC = 0
        /// Ticks concealed (lost packets and underruns).
        public var concealed = 0
        /// Ticks of silence (not playing).
        public var silent = 0
        /// Packets that came after their slot had played.
        public var late = 0
        /// Packets received twice.
        public var duplicates = 0
        /// Packets dropped because more than `maximumDepth` was buffered.
        public var dropped = 0
        /// Packets skipped to bring the delay down to the target.
        public var skippedForLatency = 0
        /// Times playback stopped after a stall.
        public var stalls = 0
        /// The audio buffered now, from the next slot to the newest packet.
        public var currentDepth: Duration = .zero
        /// The delay the buffer aims for.
        public var targetDepth: Duration = .zero
        /// The RFC 3550 interarrival jitter.
        public var jitter: Duration = .zero
    }

    /// The settings.
    public let configuration: Configuration
    /// Counters so far.
    public private(set) var statistics = Statistics()

    private struct Entry: Sendable {
        var payload: [UInt8]
        var timestamp: UInt32
        var hasFEC: Bool
        var isSilent: Bool
    }

    /// The RTP timestamp of the frame the last `pop` played (a packet, or a lost one it
    /// concealed); nil while not playing. Lip sync lines the camera up with it.
    public private(set) var playedTimestamp: UInt32?
    private var frameTicks: UInt32 {
        UInt32(clamping: Int64(configuration.frameDuration.seconds * Double(configuration.clockRate)))
    }

    private var slots: [Int64: Entry] = [:]
    /// The highest extended sequence number received: the reference for unwrapping.
    private var highestReceived: Int64?
    /// The extended sequence number of the next slot to play; nil when not playing.
    private var nextToPlay: Int64?
    /// When the first packet came while not playing.
    private var bufferingSince: Instant?
    private var jitterSeconds = 0.0
    private var lastArrival: (arrival: Instant, timestamp: UInt32)?
    /// After a stall, the first slot not played: stragglers from before it are late.
    private var resumeFloor: Int64?
    private var underrunTicks = 0
    private var ticksSinceSkip = 0

    /// An empty buffer. The frame duration, clock rate and durations must be positive.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.frameDuration > .zero && configuration.clockRate > 0, "a frame lasts some time")
        self.configuration = configuration
        statistics.targetDepth = targetDepth
    }

    /// The delay the buffer aims for now: clamp(2 J + one frame, minimum...maximum).
    public var targetDepth: Duration {
        let wanted = Duration.nanoseconds(Int64(2 * jitterSeconds * 1e9)) + configuration.frameDuration
        return min(max(wanted, configuration.minimumDelay), configuration.maximumDelay)
    }

    private var maximumPackets: Int64 {
        max(1, Int64(configuration.maximumDepth / configuration.frameDuration))
    }

    /// Takes one received Opus RTP payload; `isSilent` when its sender said it holds silence.
    public mutating func insert(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, arrival: Instant,
                                isSilent: Bool = false) {
        let extended = unwrap(sequenceNumber)
        updateJitter(timestamp: timestamp, arrival: arrival)
        defer { refreshDepth() }
        if let floor = nextToPlay ?? resumeFloor, extended < floor {
            statistics.late += 1
            return
        }
        guard slots[extended] == nil else {
            statistics.duplicates += 1
            return
        }
        slots[extended] = Entry(payload: payload, timestamp: timestamp, hasFEC: OpusDecoder.hasFEC(payload), isSilent: isSilent)
        if nextToPlay == nil && bufferingSince == nil { bufferingSince = arrival }
        enforceMaximumDepth()
    }

    /// What to play for the tick at `now` (call once every frame duration).
    public mutating func pop(now: Instant) -> Output {
        defer { refreshDepth() }
        guard let next = nextToPlay ?? start(now: now) else {
            statistics.silent += 1
            playedTimestamp = nil
            return .silence
        }
        ticksSinceSkip += 1
        if let entry = slots.removeValue(forKey: next) {
            nextToPlay = next + 1
            underrunTicks = 0
            statistics.played += 1
            playedTimestamp = entry.timestamp
            trimTowardTarget()
            return entry.isSilent ? .silentPacket(entry.payload) : .packet(entry.payload)
        }
        if slots.isEmpty {
            // Underrun: keep the slot, so that a late packet still plays.
            underrunTicks += 1
            if configuration.frameDuration * underrunTicks >= configuration.stallTimeout {
                resumeFloor = next
                nextToPlay = nil
                bufferingSince = nil
                underrunTicks = 0
                statistics.stalls += 1
                statistics.silent += 1
                playedTimestamp = nil
                return .silence
            }
            statistics.concealed += 1
            return .conceal
        }
        // Lost: later packets are here.
        nextToPlay = next + 1
        underrunTicks = 0
        playedTimestamp = playedTimestamp.map { $0 &+ frameTicks }
        if let successor = slots[next + 1], successor.hasFEC {
            statistics.recoveredWithFEC += 1
            return .recoverWithFEC(nextPacket: successor.payload)
        }
        statistics.concealed += 1
        return .conceal
    }

    /// Starts playing when the first packet has waited the target delay less the tick's frame.
    private mutating func start(now: Instant) -> Int64? {
        guard let since = bufferingSince, let first = slots.keys.min() else { return nil }
        let wait = max(.zero, targetDepth - configuration.frameDuration)
        guard now >= since + wait else { return nil }
        nextToPlay = first
        bufferingSince = nil
        underrunTicks = 0
        ticksSinceSkip = 0
        return first
    }

    /// RFC 3550 §6.4.1: D = (Rj − Ri) − (Sj − Si); J += (|D| − J) / 16, in consecutive arrivals.
    private mutating func updateJitter(timestamp: UInt32, arrival: Instant) {
        defer { lastArrival = (arrival, timestamp) }
        guard let last = lastArrival else { return }
        let sent = Double(Int32(bitPattern: timestamp &- last.timestamp)) / Double(configuration.clockRate)
        let received = (arrival - last.arrival).seconds
        // A timestamp jump of more than 10 s is a new stream, not jitter.
        guard abs(sent) < 10 else { return }
        // A difference beyond 10 s (a clock jump) counts as 10 s, so that J stays finite.
        jitterSeconds += (min(abs(received - sent), 10) - jitterSeconds) / 16
        statistics.jitter = .nanoseconds(Int64(jitterSeconds * 1e9))
        statistics.targetDepth = targetDepth
    }

    /// The extended sequence number: the one nearest the highest received, so that 65535 → 0
    /// continues upward and reordering across the wrap stays in order.
    private mutating func unwrap(_ sequenceNumber: UInt16) -> Int64 {
        guard let highest = highestReceived else {
            // Start high enough that packets before the first still unwrap to positive numbers.
            let extended = Int64(sequenceNumber) + (1 << 16)
            highestReceived = extended
            return extended
        }
        let delta = Int64(Int16(bitPattern: sequenceNumber &- UInt16(truncatingIfNeeded: highest)))
        let extended = highest + delta
        highestReceived = max(highest, extended)
        return extended
    }

    /// Drops the oldest packets while more than `maximumDepth` is held.
    private mutating func enforceMaximumDepth() {
        guard let newest = slots.keys.max() else { return }
        let oldestAllowed = newest - maximumPackets + 1
        if let next = nextToPlay, next < oldestAllowed { nextToPlay = oldestAllowed }
        for key in slots.keys where key < oldestAllowed {
            slots[key] = nil
            statistics.dropped += 1
        }
    }

    /// Skips one packet when the buffer holds more than a frame beyond the target, at most once
    /// every ten ticks, so that a burst's extra delay drains away.
    private mutating func trimTowardTarget() {
        guard ticksSinceSkip >= 10, let next = nextToPlay, let newest = slots.keys.max() else { return }
        let depth = configuration.frameDuration * Int(newest - next + 1)
        guard depth > targetDepth + configuration.frameDuration else { return }
        if slots.removeValue(forKey: next) != nil { statistics.skippedForLatency += 1 }
        nextToPlay = next + 1
        ticksSinceSkip = 0
    }

    private mutating func refreshDepth() {
        guard let newest = slots.keys.max() else {
            statistics.currentDepth = .zero
            return
        }
        let from = nextToPlay ?? slots.keys.min() ?? newest
        statistics.currentDepth = configuration.frameDuration * Int(max(0, newest - from + 1))
    }
}
