import Compositing
import Foundation
import Media
import Wire

/// A room's audio, sans-IO: on every 20 ms `tick(now:)` it pulls one frame from each member's
/// `AudioReceiver` and makes, for every listening member, one Opus packet of everyone but itself.
///
/// Encode once, send many (docs/architecture.md): a mix is named by its *key*, the set of
/// members whose audio it holds. Only members sounding (mean-square energy above
/// `Configuration.speakingThreshold`; one that sounded within `voiceHold` keeps its place in the
/// keys, adding nothing) go into any mix, so a listener's key is the sounding set less itself: every silent listener has the same key (the "everyone" mix), and each sounding
/// member has its own. So a tick encodes at most (sounding + 1) mixes however many listen, and a
/// room where one talks costs two encoders. Each key keeps its Opus encoder and limiter across
/// ticks, so that a steady mix is one continuous Opus stream; a key unused for
/// `Configuration.encoderIdleTimeout` is dropped (its encoder freed).
///
/// A listener whose key changes (someone starts or stops talking) is moved to another encoder's
/// stream: its decoder takes the switch as it takes any packet, at the cost of a frame of
/// mismatched prediction, which is far cheaper than one encoder per listener (measured: `tessera bench opus-encode-5`).
///
/// Top K: a mix holds at most `Configuration.maxVoices` voices, the loudest sounding ones, so a
/// room where everyone makes sound still encodes at most K + 1 distinct mixes (everyone's, and
/// one without each voice for that voice itself), plus those of listeners who chose not to hear
/// someone. The choice has hysteresis: a voice keeps its place through pauses between words
/// (`voiceHold`), and one outside takes the place of the quietest inside only when it is
/// `voiceSwitchMarginDb` louder (levels smoothed over about 100 ms as they rise and 400 ms as
/// they fall, since single decoded frames of a tone peak up to 5 dB above it and the decoder's
/// fade at the end of each word dips 10 to 30 dB; not moved by concealed losses nor by
/// pauses), so voices do not flicker in and out. The levels are those senders give (RFC 6464)
/// where they do, so a voice left out is not even decoded (`AudioReceiver.decodeLevelLimit`).
/// A voice left out is in no mix, its own listener's included: nobody hears themselves, and
/// `notHeard` holds as before.
///
/// Mixing is `MixBus`'s, the one `MixMinus` uses too: the sounding frames summed once in Int32,
/// then for each key the frames it leaves out taken back out, and the mix brought back to Int16
/// with the key's own `SoftLimiter`. Not `Sendable`:
/// confined to the room's loop thread, like the receivers it reads.
public final class RoomAudioMixer<Member: Hashable> {
    /// Encoding and sharing settings.
    public struct Configuration: Sendable {
        /// The mixes' Opus settings: mono, 32 kbit/s, complexity 5 (`tessera bench opus-encode-5`: 0.18 ms a
        /// frame, half of complexity 10, since encoders are what grows with the room).
        public var encoder: OpusEncoder.Configuration
        /// Mean square (of Int16 samples) above which a member counts as sounding this tick:
        /// 100² is an RMS of about -50 dBFS, above Opus's decoded silence and comfort noise.
        public var speakingThreshold: Double
        /// How long a mix's encoder is kept after its last use: long enough that a pause between
        /// words does not restart the stream, short enough that a room's encoders follow who talks.
        public var encoderIdleTimeout: Duration
        /// A deliberate fault for tests of checkers: a listener's mix holds its own voice too.
        public var returnsOwnVoice: Bool
        /// The most voices a mix holds (the loudest); 0 for no bound.
        public var maxVoices: Int
        /// How much louder (dB, held level) a voice outside the mixes must be than the quietest
        /// inside to take its place.
        public var voiceSwitchMarginDb: Double
        /// How long a chosen voice keeps its place while it is silent (a pause between words).
        public var voiceHold: Duration

        /// The defaults above.
        public init(encoder: OpusEncoder.Configuration = .init(channels: 1, application: .voip, bitrate: 32_000, complexity: 5,
                                                                expectedPacketLossPercent: 0),
                    speakingThreshold: Double = 100 * 100, encoderIdleTimeout: Duration = .seconds(2), returnsOwnVoice: Bool = false,
                    maxVoices: Int = 3, voiceSwitchMarginDb: Double = 6, voiceHold: Duration = .milliseconds(500)) {
            self.encoder = encoder
            self.speakingThreshold = speakingThreshold
            self.encoderIdleTimeout = encoderIdleTimeout
            self.returnsOwnVoice = returnsOwnVoice
            self.maxVoices = maxVoices
            self.voiceSwitchMarginDb = voiceSwitchMarginDb
            self.voiceHold = voiceHold
        }
    }

    /// One mix stream: the encoder and limiter that every listener with this key shares.
    private final class MixChannel {
        let encoder: OpusEncoder
        var limiter: SoftLimiter
        var lastUsed: Instant
        init(encoder: OpusEncoder, limiter: SoftLimiter, lastUsed: Instant) {
            self.encoder = encoder
            self.limiter = limiter
            self.lastUsed = lastUsed
        }
    }

    /// A member. A class kept in join order beside the dictionary: a tick walks every member of
    /// a room of hundreds, and looks none up by name.
    private final class Entry {
        let member: Member
        /// Where the member's audio comes from; nil for a member who only listens.
        let receiver: AudioReceiver?
        /// Whether the member is sent a mix (its audio m-line receives).
        let listens: Bool
        /// Members this one chose not to hear (`PATCH … {"hear": {"bob": false}}`).
        var notHeard: Set<Member> = []
        /// Muted by the host: its voice is in no mix (its receiver still plays on time).
        var muted = false
        /// The loss it reports about its mix, in percent.
        var lossPercent = 0
        /// Its level in the last tick (dBov); nil without a frame.
        var level: Double?
        /// Its frame of the last tick, kept while it sounds.
        var frame: AudioFrame?
        /// Whether its voice is in the mixes this tick.
        var isVoice = false
        /// Its packet of the last tick, an index into `mixPackets`; nil for none.
        var mix: Int?

        init(member: Member, receiver: AudioReceiver?, listens: Bool) {
            self.member = member
            self.receiver = receiver
            self.listens = listens
        }
    }

    /// The settings.
    public let configuration: Configuration
    /// The mixes' Opus complexity now: the configuration's, lowered by the host's load
    /// (`loadComplexity`) or the room's encoder step (`setComplexity`), whichever is lower; each
    /// encoder takes it at its next frame.
    public private(set) var complexity: Int
    /// The most the host's load allows (`AudioEncoderLoadRule`, set every second by the host).
    public var loadComplexity: Int {
        didSet { updateComplexity() }
    }
    /// The most the room's composite encoder step allows (`CompositeEncoderSpeed`).
    private var stepComplexity: Int

    /// Sets the most the room's encoder step allows (0...10), from the mixes' next frames on.
    public func setComplexity(_ complexity: Int) {
        stepComplexity = complexity
        updateComplexity()
    }

    private func updateComplexity() {
        complexity = min(10, max(0, min(configuration.encoder.complexity, loadComplexity, stepComplexity)))
    }

    /// Members in the order they were added (so that ticks are deterministic).
    private var entries: [Entry] = []
    /// The last tick's packets, one per distinct mix (the one of every voice first).
    private var mixPackets: [[UInt8]] = []
    private var members: [Member: Entry] = [:]
    private var channels: [Set<Member>: MixChannel] = [:]
    /// This tick's sum of the sounding frames, from which each mix takes its frames back out.
    private var bus = MixBus(channels: 1)

    /// The complexity each running encoder has (tests).
    var runningEncoderComplexities: [Int] { channels.values.map(\.encoder.configuration.complexity) }
    /// Encoders held now: one per distinct mix in use in the last `encoderIdleTimeout` (metrics).
    public var encodersRunning: Int { channels.count }
    /// Distinct mixes encoded in the last tick.
    public private(set) var mixesLastTick = 0
    /// Calls `body` with each member's level in the last tick, in dBov (0 the loudest, -127
    /// silence; RFC 6464's scale), for the active speaker detector, in join order. Members
    /// without a frame are left out.
    public func forEachLevel(_ body: (Member, Double) -> Void) {
        for entry in entries {
            if let level = entry.level { body(entry.member, level) }
        }
    }
    /// The same by member.
    public var levelsLastTick: [Member: Double] {
        var levels: [Member: Double] = [:]
        forEachLevel { member, level in levels[member] = level }
        return levels
    }
    /// Members counted as sounding in the last tick.
    public private(set) var soundingLastTick: Set<Member> = []
    /// The voices chosen for the mixes (at most `maxVoices`), in the order they were chosen; one
    /// silent for less than `voiceHold` keeps its place.
    public private(set) var voices: [Member] = []
    /// Each chosen or sounding member's level (dBov) smoothed over its sounding ticks, and when it
    /// last sounded.
    private var heldLevels: [Member: (level: Double, sounded: Instant)] = [:]
    /// The weight of a tick's level in the smoothed level when louder than it (a time constant
    /// of five ticks) and when quieter (twenty ticks, 0.4 s: a voice that really gets quieter
    /// loses its lead within a second).
    private static var levelAttack: Double { 0.2 }
    private static var levelRelease: Double { 0.05 }
    /// Whether each tick also makes the whole room's mix (everyone sounding), for recordings.
    public var producesRoomMix = false
    /// The whole room's mix of the last tick, when `producesRoomMix`.
    public private(set) var roomMixLastTick: AudioFrame?
    private var roomLimiter = SoftLimiter()
    /// Mixes that could not be encoded (an encoder refused to start or to encode); their
    /// listeners got no packet that tick.
    public private(set) var encodeFailures = 0

    /// An empty room.
    public init(configuration: Configuration = Configuration()) {
        precondition(configuration.encoder.channels == 1, "the room mixes mono")
        self.configuration = configuration
        complexity = configuration.encoder.complexity
        loadComplexity = configuration.encoder.complexity
        stepComplexity = configuration.encoder.complexity
    }

    /// The members, in the order they joined.
    public var memberList: [Member] { entries.map(\.member) }

    /// Adds (or replaces) a member: `receiver` is its audio (nil if it sends none), `listens`
    /// whether it is sent a mix.
    public func add(_ member: Member, receiver: AudioReceiver?, listens: Bool = true) {
        let entry = Entry(member: member, receiver: receiver, listens: listens)
        if members.updateValue(entry, forKey: member) == nil {
            entries.append(entry)
        } else if let index = entries.firstIndex(where: { $0.member == member }) {
            entries[index] = entry
        }
    }

    /// Sets whom `member` does not hear: only its own mix changes.
    public func setNotHeard(_ excluded: Set<Member>, by member: Member) {
        members[member]?.notHeard = excluded
    }

    /// The loss `member` reports about its mix (RFC 3550 fraction lost, as a percent): the
    /// encoder of its mix plans in-band FEC (SILK LBRR) for the worst loss among its listeners,
    /// and spends nothing on it while none reports loss.
    public func setReportedLoss(_ member: Member, percent: Int) {
        members[member]?.lossPercent = min(100, max(0, percent))
    }

    /// Mutes or unmutes a member's voice in every mix.
    public func setMuted(_ member: Member, _ muted: Bool) {
        guard let entry = members[member] else { return }
        entry.muted = muted
        entry.receiver?.decodeLevelLimit = muted ? -1 : 127
    }

    /// Removes a member: from the next tick its voice is in no mix and it is sent nothing.
    public func remove(_ member: Member) {
        guard members.removeValue(forKey: member) != nil else { return }
        entries.removeAll { $0.member == member }
        voices.removeAll { $0 == member }
        heldLevels[member] = nil
    }

    /// Mixes and encodes the tick at `now` (call every 20 ms): each listening member's Opus
    /// packet of everyone sounding but itself (`forEachPacket`). Members who listen to the same
    /// mix get the same bytes from one encode.
    public func tick(now: Instant) {
        // One frame from every receiver, every tick, so that each jitter buffer plays on time
        // whether or not anyone hears it.
        var sounding: [Entry] = []
        var concealed: Set<Member> = []
        for entry in entries {
            entry.level = nil
            entry.frame = nil
            guard let receiver = entry.receiver else { continue }
            let frame = receiver.tick(now: now)
            if entry.muted { continue }
            // The receiver decodes mono; a frame of another length is treated as silence.
            guard frame.channels == 1, frame.samples.count == AudioFrame.samplesPer20ms else { continue }
            // The level its sender gives (RFC 6464), the same whether or not the packet was
            // decoded; else the decoded audio's.
            let level = receiver.levelPlaying.map { -Double($0) }
                ?? Self.level(ofMeanSquare: receiver.silentLastTick ? 0 : Self.meanSquare(frame.samples))
            entry.level = level
            if level > speakingLevel {
                sounding.append(entry)
                entry.frame = frame
                if receiver.concealedLastTick { concealed.insert(entry.member) }
            }
        }
        soundingLastTick = Set(sounding.map(\.member))
        // The voices in the mixes; a key names the voices a mix holds.
        let mixed = chooseVoices(from: sounding.map(\.member), concealed: concealed, now: now)
        for entry in entries { entry.isVoice = false }
        for member in mixed { members[member]?.isVoice = true }
        limitDecoding()
        bus.clear()
        for entry in sounding where entry.isVoice {
            if let frame = entry.frame { bus.add(frame) }
        }
        roomMixLastTick = producesRoomMix ? bus.mix(without: [], limiter: &roomLimiter, timestamp: now) : nil

        // Each listener is given an index into this tick's packets: most hear every voice (the
        // key `mixed` itself, packet 0), marked in place with no set or list made for them.
        mixPackets.removeAll(keepingCapacity: true)
        let everyVoice = 0
        var anyHearsAll = false
        var lossHearingAll = 0
        var keys: [(entry: Entry, key: Set<Member>)] = []
        var lossByKey: [Set<Member>: Int] = [:]
        for entry in entries {
            entry.mix = nil
            guard entry.listens else { continue }
            // Every voice mixed but the listener and those it chose not to hear.
            let hearsItself = entry.isVoice && !configuration.returnsOwnVoice
            if !hearsItself && (entry.notHeard.isEmpty || entry.notHeard.isDisjoint(with: mixed)) {
                entry.mix = everyVoice
                anyHearsAll = true
                lossHearingAll = max(lossHearingAll, entry.lossPercent)
                continue
            }
            var left = entry.notHeard.intersection(mixed)
            if hearsItself { left.insert(entry.member) }
            let key = mixed.subtracting(left)
            keys.append((entry, key))
            lossByKey[key] = max(lossByKey[key] ?? 0, entry.lossPercent)
        }
        var encoded: [Set<Member>: Int] = [:]
        var failed: Set<Set<Member>> = []
        if anyHearsAll {
            if let packet = encode(key: mixed, without: [], lossPercent: lossHearingAll, now: now) {
                encoded[mixed] = mixPackets.count
                mixPackets.append(packet)
            } else {
                failed.insert(mixed)
                for entry in entries where entry.mix == everyVoice { entry.mix = nil }
            }
        }
        for (entry, key) in keys {
            if let index = encoded[key] {
                entry.mix = index
                continue
            }
            let left = mixed.subtracting(key)
            guard !failed.contains(key),
                  let packet = encode(key: key, without: left.compactMap { members[$0]?.frame }, lossPercent: lossByKey[key] ?? 0, now: now)
            else {
                failed.insert(key)
                continue
            }
            encoded[key] = mixPackets.count
            entry.mix = mixPackets.count
            mixPackets.append(packet)
        }
        mixesLastTick = encoded.count
        encodeFailures += failed.count
        dropIdleChannels(now: now)
    }

    /// Calls `body` with each listening member and its packet of the last tick, in the order
    /// members were added (none for a member whose mix could not be encoded).
    public func forEachPacket(_ body: (Member, [UInt8]) -> Void) {
        for entry in entries {
            if let mix = entry.mix { body(entry.member, mixPackets[mix]) }
        }
    }

    /// The voices the mixes hold this tick: every sounding one while they are at most
    /// `maxVoices`, else the chosen ones (see the type's comment); and a chosen one silent for
    /// less than `voiceHold`, which adds nothing to the sum but keeps the mixes' keys as they
    /// were, so that a pause between words does not move listeners to other encoders.
    private func chooseVoices(from sounding: [Member], concealed: Set<Member>, now: Instant) -> Set<Member> {
        for member in sounding {
            let level = members[member]?.level ?? -127
            // A concealed loss sounds, but its level is the decoder's guess (a tone's can peak
            // 5 dB above it): it keeps the voice's level as it was.
            // Rising levels count fast, falling ones slowly: the decoder's fade at the end of a
            // word (a few frames 10 to 30 dB down) would otherwise make a voice the quietest by
            // the margin at each pause, and among many equal voices they would take turns.
            let smoothed = heldLevels[member].map { held in
                if concealed.contains(member) { return held.level }
                return held.level + (level - held.level) * (level > held.level ? Self.levelAttack : Self.levelRelease)
            } ?? level
            heldLevels[member] = (smoothed, now)
        }
        let hold = configuration.voiceHold
        // A voice silent past its hold, or gone, loses its place (and its held level).
        voices.removeAll { member in heldLevels[member].map { now - $0.sounded >= hold } ?? true }
        heldLevels = heldLevels.filter { now == $0.value.sounded || voices.contains($0.key) }
        let limit = configuration.maxVoices
        let level = { (member: Member) in self.heldLevels[member]?.level ?? -127 }
        var others = sounding.filter { !voices.contains($0) }.sorted { level($0) > level($1) }
        if limit <= 0 {
            voices += others
            return Set(voices)
        }
        while voices.count < limit, !others.isEmpty { voices.append(others.removeFirst()) }
        // The loudest outside takes the quietest's place only when clearly louder; then the next.
        for candidate in others {
            guard let quietest = voices.indices.min(by: { level(voices[$0]) < level(voices[$1]) }),
                  level(candidate) > level(voices[quietest]) + configuration.voiceSwitchMarginDb else { break }
            voices[quietest] = candidate
        }
        return Set(voices)
    }

    /// Tells each receiver up to which RFC 6464 level its next packets could be heard: every
    /// level for a chosen voice; for another, a level loud enough to take a free place, or to
    /// take the quietest chosen voice's place by the margin. A packet quieter than that is in no
    /// mix, so it is not decoded (a voice chosen on its level is decoded from its next packet:
    /// it comes in 20 ms late, not heard half-decoded).
    private func limitDecoding() {
        let limit = configuration.maxVoices
        let speaking = Int(-speakingLevel)  // a level (-dBov) at or below this sounds
        let takesAPlace: Int
        if limit <= 0 || voices.count < limit {
            takesAPlace = speaking
        } else {
            let quietest = voices.map { heldLevels[$0]?.level ?? -127 }.min() ?? -127
            // A dB to spare: the quietest voice's smoothed level moves between ticks.
            takesAPlace = min(speaking, Int((-(quietest + configuration.voiceSwitchMarginDb)).rounded(.down)) + 1)
        }
        for entry in entries {
            entry.receiver?.decodeLevelLimit = entry.muted ? -1 : limit <= 0 || entry.isVoice ? 127 : takesAPlace
        }
    }

    /// The mix of `key` (this tick's sum, less the frames `left` out), limited and encoded with
    /// the key's encoder; nil if the encoder failed.
    private func encode(key: Set<Member>, without left: [AudioFrame], lossPercent: Int, now: Instant) -> [UInt8]? {
        guard let channel = channel(for: key, now: now) else { return nil }
        channel.lastUsed = now
        if channel.encoder.configuration.expectedPacketLossPercent != lossPercent {
            try? channel.encoder.setExpectedPacketLoss(percent: lossPercent)  // in 0...100: cannot fail
        }
        if channel.encoder.configuration.complexity != complexity {
            var next = channel.encoder.configuration
            next.complexity = complexity
            try? channel.encoder.reconfigure(next)  // in 0...10: cannot fail
        }
        let mixed = bus.mix(without: left, limiter: &channel.limiter, timestamp: now)
        do {
            return try channel.encoder.encode(mixed)
        } catch {
            return nil
        }
    }

    /// After an encoder failed to start, no other is tried before this.
    private var encoderRetryAt: Instant?
    private var startFailures: [any Error] = []

    /// Opus encoders that failed to start since the last call, with their reasons.
    public func takeStartFailures() -> [any Error] {
        defer { startFailures.removeAll() }
        return startFailures
    }

    /// The key's channel, started when missing. A new channel's limiter starts from the
    /// "everyone" channel's (the loudest mix), so that a listener moved onto it does not hear the
    /// gain jump.

    private func channel(for key: Set<Member>, now: Instant) -> MixChannel? {
        if let channel = channels[key] { return channel }
        if let retryAt = encoderRetryAt, now < retryAt { return nil }
        let encoder: OpusEncoder
        var settings = configuration.encoder
        settings.complexity = complexity
        do { encoder = try OpusEncoder(settings) } catch {
            // Reported to the shell (counted, logged once); tried again a second later, not on
            // every tick.
            startFailures.append(error)
            encoderRetryAt = now + .seconds(1)
            return nil
        }
        encoderRetryAt = nil
        let loudest = channels.max { $0.key.count < $1.key.count }?.value.limiter ?? SoftLimiter()
        let channel = MixChannel(encoder: encoder, limiter: loudest, lastUsed: now)
        channels[key] = channel
        return channel
    }

    private func dropIdleChannels(now: Instant) {
        let timeout = configuration.encoderIdleTimeout
        channels = channels.filter { now - $0.value.lastUsed < timeout }
    }

    /// `Configuration.speakingThreshold` in dBov.
    private var speakingLevel: Double { Self.level(ofMeanSquare: configuration.speakingThreshold) }

    /// A mean square of Int16 samples in dBov, RFC 6464's scale (-127 for silence).
    private static func level(ofMeanSquare meanSquare: Double) -> Double {
        max(-127, 10 * log10(max(meanSquare, 1e-3) / (32768.0 * 32768.0)))
    }

    private static func meanSquare(_ samples: [Int16]) -> Double {
        var total: Int64 = 0
        for sample in samples { total += Int64(sample) * Int64(sample) }
        return Double(total) / Double(max(1, samples.count))
    }
}
