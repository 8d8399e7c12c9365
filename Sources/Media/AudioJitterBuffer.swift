import RTP
import Wire

/// The receive buffer for one Opus stream, sans-IO: RTP payloads go in with their sequence
/// number, RTP timestamp and arrival time; ``pop(now:wanting:)`` says what audio comes next, so
/// that packets that come early, late or out of order still play in order and on time. Packets
/// may hold any Opus duration (2.5 to 120 ms, RFC 6716 §3.1): the buffer keeps a play cursor in
/// RTP time, and `AudioReceiver` cuts what it decodes into the host's 20 ms ticks.
///
/// How it plays:
/// - It waits, silent, until the first packet has been held for the target delay less one tick
///   (the tick's own phase is the last one), then plays packets in sequence order.
/// - A missing packet whose successors have come is lost: the audio from the cursor to the next
///   packet present is recovered from that packet's in-band FEC when it carries some
///   (``Output/recoverWithFEC(nextPacket:samples:)``), else concealed
///   (``Output/conceal(samples:)``), and the cursor passes it. A gap in RTP time after a packet
///   present (DTX) plays on at once.
/// - When nothing at all is buffered (an underrun: the packet is late, or the sender stopped),
///   the audio asked for is concealed *without* moving the cursor, so a late packet still plays
///   and the delay grows: that is how the delay rises with jitter. If the packet waited for
///   turns out lost (its successor comes first), the audio the underrun concealed counts toward
///   the loss. After `stallTimeout` of this it stops (``Output/silence``) and buffers afresh when
///   packets come again (a muted guest); after a packet its sender marked silent it stops at
///   once (a DTX pause, RFC 7587 §6.1: nothing comes until the next update or sound).
/// - The target delay follows the RFC 3550 interarrival jitter J: clamp(2 J + the longer of a
///   tick and a packet, `minimumDelay`...`maximumDelay`). The buffer never drops audio to come
///   back down to it: `AudioReceiver` shortens the decoded audio by pitch periods instead, a
///   speeded-up playout that is not heard, when the depth stayed above the target a while.
/// - At most `maximumDepth` is held; beyond that the oldest packets are dropped. Packets whose
///   audio has already played are discarded as late; duplicates are ignored.
public struct AudioJitterBuffer: Sendable {
    /// Timing and bounds.
    public struct Configuration: Sendable, Equatable {
        /// The audio played per tick, and the tick interval.
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

    /// What comes next.
    public enum Output: Equatable, Sendable {
        /// Decode and play this packet.
        case packet([UInt8])
        /// This packet is here and its sender said it is silence (an RFC 6464 level of
        /// `AudioReceiver.silentLevel` or quieter); it lasts `samples` per channel.
        /// `AudioReceiver` decodes the first of a run and plays the rest as silence.
        case silentPacket([UInt8], samples: Int)
        /// `samples` of audio are lost, but the packet after them is here and carries in-band
        /// FEC: recover them from it (`OpusDecoder.decodeFEC`); it plays normally next.
        case recoverWithFEC(nextPacket: [UInt8], samples: Int)
        /// `samples` of audio are missing (lost, or not come yet): conceal them
        /// (`OpusDecoder.concealLoss`).
        case conceal(samples: Int)
        /// No stream is playing (before the first packet, while buffering, or after a stall).
        case silence
    }

    /// Counters and the current delay, for metrics and receiver reports.
    public struct Statistics: Equatable, Sendable {
        /// Packets played.
        public var played = 0
        /// Losses recovered from the next packet's FEC.
        public var recoveredWithFEC = 0
        /// Losses and underruns concealed.
        public var concealed = 0
        /// The audio concealed, at the clock rate.
        public var concealedSamples = 0
        /// Pops while not playing.
        public var silent = 0
        /// Packets that came after their audio had played.
        public var late = 0
        /// Packets received twice.
        public var duplicates = 0
        /// Packets dropped because more than `maximumDepth` was buffered.
        public var dropped = 0
        /// Times playback stopped after a stall.
        public var stalls = 0
        /// Times playback stopped at an underrun after a silent packet: a DTX sender's pause
        /// (or a packet late in silence), which nothing needs concealed.
        public var pauses = 0
        /// The audio buffered now: the packets held, from the cursor on.
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
        /// The audio it holds, at the clock rate.
        var samples: Int
        var hasFEC: Bool
        var isSilent: Bool
        /// Its RFC 6464 level (-dBov), when its sender gave one.
        var level: UInt8?
    }

    /// The RTP timestamp of the next audio to play: the end of what `pop` gave so far (an
    /// underrun's concealment does not move it). Nil while not playing.
    public var cursorTimestamp: UInt32? { nextToPlay == nil ? nil : cursor }
    /// The longest loss concealed in one piece, and the longest gap taken for a loss rather
    /// than a jump in the sender's clock: Opus's longest packet, 120 ms.
    private var longestLoss: Int { configuration.clockRate * 120 / 1000 }
    /// A tick, and `maximumDepth`, at the clock rate (fixed by the configuration; asked at every packet).
    private let samplesPerTick: Int
    private let maximumDepthSamples: Int

    private var slots: [Int64: Entry] = [:]
    /// The audio `slots` holds, at the clock rate (kept as they change: asked at every packet and tick).
    private var heldSamples = 0
    /// The highest extended sequence number received: the reference for unwrapping.
    private var highestReceived: Int64?
    /// The extended sequence number of the next packet to play; nil when not playing.
    private var nextToPlay: Int64?
    private var cursor: UInt32 = 0
    /// When the first packet came while not playing.
    private var bufferingSince: Instant?
    private var jitterSeconds = 0.0
    private var lastArrival: (arrival: Instant, timestamp: UInt32)?
    /// The longest packet seen lately: the target covers one.
    private var packetSamples = 0
    /// After a stall, the first packet not played: stragglers from before it are late.
    private var resumeFloor: Int64?
    private var underrunSamples = 0
    /// Whether the last packet played was one its sender marked silent.
    private var lastPlayedSilent = false
    /// Where a pause left the play cursor, and the tick it happened at: the stream's timeline
    /// through the gap, so that the next packet plays when its audio is due on it.
    private var pausedTimeline: (cursor: UInt32, at: Instant)?

    /// An empty buffer. The frame duration, clock rate and durations must be positive.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.frameDuration > .zero && configuration.clockRate > 0, "a frame lasts some time")
        self.configuration = configuration
        samplesPerTick = Int(Int64(configuration.frameDuration.seconds * Double(configuration.clockRate)))
        maximumDepthSamples = Int(configuration.maximumDepth.seconds * Double(configuration.clockRate))
        targetDepth = configuration.frameDuration
        refreshTarget()
    }

    /// The delay the buffer aims for now: clamp(2 J + the longer of a tick and a packet,
    /// minimum...maximum). Kept as the jitter and the packets' length change.
    public private(set) var targetDepth: Duration

    private mutating func refreshTarget() {
        let unit = max(configuration.frameDuration, duration(of: packetSamples))
        let wanted = Duration.nanoseconds(Int64(2 * jitterSeconds * 1e9)) + unit
        targetDepth = min(max(wanted, configuration.minimumDelay), configuration.maximumDelay)
        statistics.targetDepth = targetDepth
    }

    /// The RFC 6464 level of the last packet `pop` gave, nil when its sender gave none (or
    /// nothing was popped yet).
    public private(set) var lastPoppedLevel: UInt8?

    /// Takes one received Opus RTP payload; `isSilent` when its sender said it holds silence,
    /// `level` its RFC 6464 level when the sender gave one.
    public mutating func insert(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, arrival: Instant,
                                isSilent: Bool = false, level: UInt8? = nil) {
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
        // A malformed packet still takes a tick's time (its decoding fails and is concealed).
        let samples = OpusDecoder.sampleCount(of: payload).map { $0 * configuration.clockRate / AudioFrame.sampleRate } ?? samplesPerTick
        let longest = max(samples, packetSamples * 15 / 16)
        if longest != packetSamples {
            packetSamples = longest
            refreshTarget()
        }
        slots[extended] = Entry(payload: payload, timestamp: timestamp, samples: samples, hasFEC: OpusDecoder.hasFEC(payload), isSilent: isSilent, level: level)
        heldSamples += samples
        if nextToPlay == nil && bufferingSince == nil { bufferingSince = arrival }
        enforceMaximumDepth()
    }

    /// The next audio, at `now`, for a player that lacks `wanting` samples (at the clock rate)
    /// of this tick: a packet, or the audio to conceal or recover before the next packet; an
    /// underrun conceals what is wanted.
    public mutating func pop(now: Instant, wanting: Int? = nil) -> Output {
        defer { refreshDepth() }
        guard let next = nextToPlay ?? start(now: now) else {
            statistics.silent += 1
            return .silence
        }
        if let entry = slots.removeValue(forKey: next) {
            heldSamples -= entry.samples
            nextToPlay = next + 1
            cursor = entry.timestamp &+ UInt32(entry.samples)
            underrunSamples = 0
            statistics.played += 1
            lastPoppedLevel = entry.level
            lastPlayedSilent = entry.isSilent
            return entry.isSilent ? .silentPacket(entry.payload, samples: entry.samples) : .packet(entry.payload)
        }
        guard let successor = slots.keys.min(), let entry = slots[successor] else {
            // Underrun: the cursor stays, so that a late packet still plays.
            let wanted = max(1, wanting ?? samplesPerTick)
            underrunSamples += wanted
            // After silence it is a pause (DTX sends nothing until the next update or sound):
            // playback stops at once, so that nothing claims to be playing (lip sync would hold
            // the camera's pictures for a playout that does not move), and buffers afresh.
            if lastPlayedSilent || duration(of: underrunSamples) >= configuration.stallTimeout {
                resumeFloor = next
                nextToPlay = nil
                bufferingSince = nil
                underrunSamples = 0
                if lastPlayedSilent { statistics.pauses += 1 } else { statistics.stalls += 1 }
                pausedTimeline = lastPlayedSilent ? (cursor, now) : nil
                statistics.silent += 1
                return .silence
            }
            statistics.concealed += 1
            statistics.concealedSamples += wanted
            return .conceal(samples: wanted)
        }
        // Lost: a later packet is here. Its timestamp says how much audio went missing; what an
        // underrun already concealed while waiting for it is not concealed twice (so a loss on
        // a calm network costs no delay).
        nextToPlay = successor
        let gap = Int(Int32(bitPattern: entry.timestamp &- cursor)) - underrunSamples
        underrunSamples = 0
        cursor = entry.timestamp
        guard gap > 0 && gap <= longestLoss else {
            // Concealed already, no room in RTP time (a sender that restarted its clock), or more
            // than any loss: go on from the packet present.
            return pop(now: now, wanting: wanting)
        }
        if entry.hasFEC {
            statistics.recoveredWithFEC += 1
            return .recoverWithFEC(nextPacket: entry.payload, samples: gap)
        }
        statistics.concealed += 1
        statistics.concealedSamples += gap
        return .conceal(samples: gap)
    }

    /// Starts playing when the first packet has waited the target delay less the tick; after a
    /// pause, when its audio is due on the timeline the pause left (`dueAfterPause`).
    private mutating func start(now: Instant) -> Int64? {
        guard let since = bufferingSince, let first = slots.keys.min(), let entry = slots[first] else { return nil }
        if let due = dueAfterPause(timestamp: entry.timestamp, since: since) {
            // Ticks may not fall on the timeline's grid: the nearest one.
            guard now + configuration.frameDuration / 2 > due else { return nil }
        } else {
            guard now >= since + max(.zero, targetDepth - configuration.frameDuration) else { return nil }
        }
        pausedTimeline = nil
        nextToPlay = first
        cursor = entry.timestamp
        bufferingSince = nil
        underrunSamples = 0
        return first
    }

    /// When audio at `timestamp` is due on the timeline the last pause left: the delay the stream
    /// had goes on through a DTX gap, and a packet late in silence plays as soon as it comes, as
    /// one late in sound does. Nil after no pause, or when the timeline puts it before the cursor
    /// or beyond the greatest delay from `since`, when it came (the sender's clock jumped).
    private func dueAfterPause(timestamp: UInt32, since: Instant) -> Instant? {
        guard let paused = pausedTimeline else { return nil }
        let ahead = Int(Int32(bitPattern: timestamp &- paused.cursor))
        let due = paused.at + duration(of: ahead)
        return ahead >= 0 && due <= since + configuration.maximumDelay ? due : nil
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
        refreshTarget()
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

    /// Drops the oldest packets while more than `maximumDepth` is held (the sum of their
    /// durations: a DTX gap in RTP time holds nothing).
    private mutating func enforceMaximumDepth() {
        guard heldSamples > maximumDepthSamples else { return }
        for key in slots.keys.sorted() where heldSamples > maximumDepthSamples && slots.count > 1 {
            heldSamples -= slots.removeValue(forKey: key)?.samples ?? 0
            statistics.dropped += 1
        }
        // A cursor left before the oldest packet kept goes on from it at the next pop (a gap
        // longer than any loss, or concealed).
    }

    /// The audio held, from the cursor on (late packets are never held).
    private mutating func refreshDepth() {
        statistics.currentDepth = duration(of: heldSamples)
    }

    private func duration(of samples: Int) -> Duration {
        .nanoseconds(Int64(samples) * 1_000_000_000 / Int64(configuration.clockRate))
    }
}
