import RTP
import Wire

/// One Opus stream's receive side: a jitter buffer and a decoder, giving one frame of audio per
/// tick whatever the network did. Packets of any Opus duration are decoded ahead into `pending`
/// and played out a tick at a time. Not `Sendable`: the room's thread owns it.
///
/// Packets whose sender says they are silence (RFC 6464 audio level, as browsers send it, or an
/// Opus DTX frame of no bytes) are not decoded: in a room most guests are silent most of the
/// time, and decoding is the largest cost of a guest's audio (about 45 µs a packet).
/// - The first silent packet after sound is decoded: it holds the end of the sound (the codec's
///   delay, a few ms); skipping it cuts the sound off with a click that spreads over every
///   frequency (`tessera load`'s own-voice check heard it at the listener's own tone).
/// - The next silent packets play as silence, and so does a loss among them (concealment would
///   extrapolate the last sound decoded).
/// - At the next packet with sound the decoder is reset, as at a stream's start: after digital
///   silence the sender's encoder is in that state too, so the talkspurt decodes as if nothing had
///   been skipped, where the state of the sound before the silence would be mismatched.
///
/// Sound nobody will hear is not decoded either: a mix holds only the loudest few voices (Top
/// K, `RoomAudioMixer`), which it chooses by the levels senders give, so it tells each receiver
/// up to which level a packet could still make its voice heard (`decodeLevelLimit`); a quieter
/// one plays as silence undecoded, and the decoder starts afresh at the next one decoded, as
/// after silence.
public final class AudioReceiver {
    /// The buffer, for its statistics.
    public private(set) var buffer: AudioJitterBuffer
    /// Packets the decoder refused (they were concealed instead).
    public private(set) var decodeErrors = 0
    /// Packets played as silence without decoding, because their level said so or they were
    /// DTX frames.
    public private(set) var silentPacketsSkipped = 0
    /// Packets with sound played as silence without decoding, because they were quieter than
    /// `decodeLevelLimit`.
    public private(set) var unheardPacketsSkipped = 0
    /// A packet whose sender gives an RFC 6464 level (-dBov) above this, a quieter one, is not
    /// decoded: 127 decodes every packet with sound, -1 none that gives a level. Packets
    /// without a level are always decoded (their level is known only then).
    public var decodeLevelLimit = 127
    /// The RFC 6464 level of the packet playing now, when its sender gave one; nil when it gave
    /// none, or while nothing or a concealment plays (then only the decoded audio says).
    public private(set) var levelPlaying: UInt8?
    /// Whether the last tick's audio holds a concealment (a loss or an underrun guessed by the
    /// decoder): its level is not the sender's.
    public private(set) var concealedLastTick = false
    /// Whether the last tick played nothing decoded: digital silence, whose level needs no
    /// measuring (most receivers of a large room, most ticks).
    public private(set) var silentLastTick = false
    /// The audio taken out of the playout to bring the delay down to the target (pitch periods
    /// and quiet stretches, see `TimeStretch`), in samples per channel.
    public private(set) var shortenedSamples = 0
    /// A packet at this RFC 6464 level (-dBov) or quieter is silence: -96 dBov is under the
    /// quantization noise of 16-bit audio.
    public static let silentLevel: UInt8 = 96
    /// Whether the decoder did not hear what played last: a packet skipped undecoded, or no
    /// stream at all (before the first packet, after a stall, between a DTX sender's updates).
    /// Then a concealment plays silence (there is no sound to extrapolate), a silent packet is
    /// not decoded (no sound to end), and the next sound resets the decoder first.
    private var decoderIsBehind = false
    /// Silent packets played in a row (decoded or not).
    private var silentInARow = 0
    /// The channel count of the output.
    public let channels: Int
    private let decoder: OpusDecoder
    /// Audio decoded (or concealed) and not played yet, interleaved: packets of any length are
    /// cut into ticks here.
    private var pending = PendingAudio()
    private var lastTick: Instant?
    private var playedTimestamp: UInt32?
    /// How much longer than its jitter needs this voice waits, so that it is heard with its
    /// speaker's lips (lip sync sets it when the camera's path is the slower; at most
    /// `maximumLipSyncDelay`). Reached and left a pitch period at a time (`TimeStretch`).
    public var lipSyncDelay: Duration = .zero
    public static let maximumLipSyncDelay: Duration = .milliseconds(150)
    /// The part of `pending` that is the lip-sync delay, in samples per channel.
    public private(set) var lipSyncSamples = 0
    /// Ticks to wait before trying to stretch again, after the audio did not allow it.
    private var stretchPause = 0
    static let stretchRetryTicks = 4

    /// A receiver decoding to `channels` (1 or 2).
    public init(channels: Int = 1, configuration: AudioJitterBuffer.Configuration = .init()) throws(OpusCodecError) {
        decoder = try OpusDecoder(channels: channels)
        self.channels = channels
        buffer = AudioJitterBuffer(configuration: configuration)
        samplesPerTick = Int(Int64(configuration.frameDuration.seconds * Double(AudioFrame.sampleRate)))
    }

    /// Takes one received Opus RTP payload, with its RFC 6464 audio level when the sender put one.
    /// A payload is silence when its level says so, or when it is a DTX frame, which is how a
    /// sender that gives no levels says it.
    public func receive(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, arrival: Instant, level: AudioLevel? = nil) {
        buffer.insert(payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, arrival: arrival,
                      isSilent: Self.isDTXFrame(payload) || level.map { $0.level >= Self.silentLevel } ?? false, level: level?.level)
    }

    /// Whether an Opus payload holds only frames of no bytes: the TOC and at most a byte of
    /// framing. RFC 6716 §3.2.1: a frame of length 0 stands for DTX (or a loss). WebRTC sends
    /// one such packet as its encoder enters DTX, and again after each update in it, and takes
    /// every payload of 2 bytes or less as DTX; so a DTX sender that gives no RFC 6464 levels
    /// still tells the host that what follows is a pause, not a loss to conceal.
    static func isDTXFrame(_ payload: [UInt8]) -> Bool { payload.count <= 2 }

    /// Where the playout is; nil while nothing plays.
    public var playout: AudioPlayout? {
        guard let timestamp = playedTimestamp, let at = lastTick else { return nil }
        return AudioPlayout(timestamp: timestamp, at: at, depth: heldDuration + duration(ofSamples: lipSyncSamples))
    }

    /// The audio for the tick at `now` (20 ms with the default configuration), stamped `now`.
    /// When the delay has stayed above the target for a whole window, the spare part is taken
    /// out of the playout a pitch period (or a quiet stretch) at a time, so it comes down without
    /// a skip that would be heard, while jitter's short peaks keep the depth they need.
    public func tick(now: Instant) -> AudioFrame {
        lastTick = now
        concealedLastTick = false
        let tick = samplesPerTick
        if buffer.cursorTimestamp != nil { judgeSpareDelay() } else { spare = SpareDelay() }
        // Lip sync stretches the audio already here (the tick about to play and the delay). Taking
        // out spare delay looks ahead by up to a cut and a cross-fade: only into audio that is
        // here, never into audio an underrun would have to conceal.
        // (No camera, no lip sync: most of a large room, where the Duration arithmetic shows.)
        let lipSync = (lipSyncDelay == .zero ? 0 : samples(of: min(max(lipSyncDelay, .zero), Self.maximumLipSyncDelay))) - lipSyncSamples
        let lookahead = tick + lipSyncSamples + TimeStretch.longestCut + TimeStretch.window
        let spareCut = spare.budget >= TimeStretch.shortestCut
            && buffer.statistics.currentDepth + duration(ofSamples: pending.count / channels) >= duration(ofSamples: lookahead)
        let wanted = spareCut ? lookahead : tick + lipSyncSamples
        var playing = true
        while pending.count < wanted * channels {
            guard let piece = next(now: now, wanting: wanted - pending.count / channels) else {
                playing = false
                break
            }
            pending.append(piece)
        }
        // Spare delay first (a burst's extra, which everyone hears as latency), then lip sync. A
        // stretch the audio did not allow (no pitch period, not quiet) is tried again a few
        // ticks later, not at every tick: the search for a period is the costly part.
        if stretchPause > 0 || !playing {
            stretchPause = max(0, stretchPause - 1)
        } else if spareCut {
            let cut = pending.withSamples { TimeStretch.shorten(&$0, channels: channels, atMost: spare.budget) }
            spare.budget -= cut
            shortenedSamples += cut
            if cut == 0 { stretchPause = Self.stretchRetryTicks }
        } else if lipSync >= TimeStretch.shortestCut {
            let added = pending.withSamples { TimeStretch.lengthen(&$0, channels: channels, atMost: lipSync) }
            lipSyncSamples += added
            if added == 0 { stretchPause = Self.stretchRetryTicks }
        } else if -lipSync >= TimeStretch.shortestCut {
            let cut = pending.withSamples { TimeStretch.shorten(&$0, channels: channels, atMost: -lipSync) }
            lipSyncSamples -= cut
            if cut == 0 { stretchPause = Self.stretchRetryTicks }
        }
        // An underrun plays silence for what is missing.
        if pending.count < tick * channels { pending.append(.silence(tick * channels - pending.count)) }
        silentLastTick = pending.isSilence
        let samples = pending.removeFirst(tick * channels, zeros: silentSamples)
        // A stall plays out what was pending, the delay with it.
        lipSyncSamples = min(lipSyncSamples, pending.count / channels)
        playedTimestamp = buffer.cursorTimestamp.map { $0 &- UInt32(truncatingIfNeeded: clockUnits(pending.count / channels + tick)) }
        return AudioFrame(channels: channels, samples: samples, timestamp: now)
    }

    /// The least delay over a window of ticks: what jitter never needed in that time.
    private struct SpareDelay {
        static let windowTicks = 25
        var floor: Duration?
        var ticks = 0
        /// Samples per channel that may be taken out of the playout.
        var budget = 0
    }
    private var spare = SpareDelay()

    /// Every `SpareDelay.windowTicks` (half a second at 20 ms), sets the budget to what the
    /// delay held beyond the target all through the window, when that is over 10 ms.
    private func judgeSpareDelay() {
        let depth = heldDuration
        spare.floor = min(spare.floor ?? depth, depth)
        spare.ticks += 1
        guard spare.ticks >= SpareDelay.windowTicks, let floor = spare.floor else { return }
        let beyond = floor - buffer.targetDepth
        spare.budget = beyond > .milliseconds(10) ? Int(beyond.seconds * Double(AudioFrame.sampleRate)) : 0
        spare.floor = nil
        spare.ticks = 0
    }

    /// The buffer's next audio, decoded or concealed; nil when the buffer has nothing playing.
    private func next(now: Instant, wanting: Int) -> PendingAudio.Piece? {
        let output = buffer.pop(now: now, wanting: clockUnits(wanting))
        switch output {
        case .packet, .silentPacket: levelPlaying = buffer.lastPoppedLevel
        case .silence, .conceal, .recoverWithFEC: levelPlaying = nil
        }
        switch output {
        case .silence:
            // Nothing plays: the decoder is not told. (Decoding the next silent packet as a
            // sound's end, and concealing the underrun after it, cost a DTX sender's every
            // 400 ms update a decode and ten concealments: most of a large room's guests.)
            decoderIsBehind = true
            silentInARow = 0
            return nil
        case .silentPacket(let packet, let units):
            silentInARow += 1
            // The end of a sound that was decoded; after one that was not, nothing to end.
            if silentInARow == 1 && !decoderIsBehind { return .samples(decode(packet)) }
            silentPacketsSkipped += 1
            decoderIsBehind = true
            return silence(units)
        case .conceal(let units) where decoderIsBehind:
            return silence(units)
        case .conceal(let units):
            concealedLastTick = true
            return .samples(decoder.concealLoss(samples: samples(fromClock: units)).samples)
        case .packet(let packet):
            silentInARow = 0
            if let level = buffer.lastPoppedLevel, Int(level) > decodeLevelLimit,
               let units = OpusDecoder.sampleCount(of: packet).map({ clockUnits($0) }) {
                unheardPacketsSkipped += 1
                decoderIsBehind = true
                return silence(units)
            }
            resetAfterSilence()
            return .samples(decode(packet))
        case .recoverWithFEC(let next, let units):
            resetAfterSilence()
            do { return .samples(try decoder.decodeFEC(next, samples: samples(fromClock: units)).samples) } catch {
                decodeErrors += 1
                return .samples(decoder.concealLoss(samples: samples(fromClock: units)).samples)
            }
        }
    }

    /// `units` of the clock as silence.
    private func silence(_ units: Int) -> PendingAudio.Piece { .silence(samples(fromClock: units) * channels) }

    /// `count` zero samples, one array kept and handed out again: most receivers of a large room
    /// play silence every tick (hundreds of allocations a tick otherwise); whoever changes it
    /// copies it first. A mono tick of 20 ms, the usual, is one array for every receiver: a
    /// receiver's own was a cache miss a tick for each of hundreds.
    private func silentSamples(_ count: Int) -> [Int16] {
        if count == Self.monoTickOfSilence.count { return Self.monoTickOfSilence }
        if silenceBuffer.count != count { silenceBuffer = [Int16](repeating: 0, count: count) }
        return silenceBuffer
    }
    private var silenceBuffer: [Int16] = []
    private static let monoTickOfSilence = [Int16](repeating: 0, count: AudioFrame.sampleRate / 50)

    private func decode(_ packet: [UInt8]) -> [Int16] {
        do { return try decoder.decode(packet).samples } catch {
            decodeErrors += 1
            return decoder.concealLoss().samples
        }
    }

    /// Before a packet with sound: after skipped silence, the decoder starts afresh.
    private func resetAfterSilence() {
        silentInARow = 0
        guard decoderIsBehind else { return }
        decoder.reset()
        decoderIsBehind = false
    }

    /// The audio held for jitter: in the buffer, and decoded but not played, less the lip-sync delay.
    private var heldDuration: Duration {
        buffer.statistics.currentDepth + duration(ofSamples: pending.count / channels - lipSyncSamples)
    }
    private func samples(of duration: Duration) -> Int { Int(duration.seconds * Double(AudioFrame.sampleRate)) }
    /// A tick's samples per channel (fixed by the buffer's configuration).
    private let samplesPerTick: Int
    /// The buffer's RTP clock units as 48 kHz samples, and back (one and the same for Opus, RFC 7587 §4.1).
    private func samples(fromClock units: Int) -> Int { units * AudioFrame.sampleRate / buffer.configuration.clockRate }
    private func clockUnits(_ samples: Int) -> Int { samples * buffer.configuration.clockRate / AudioFrame.sampleRate }
    private func duration(ofSamples samples: Int) -> Duration { .nanoseconds(Int64(samples) * 1_000_000_000 / Int64(AudioFrame.sampleRate)) }
}

/// Where a microphone is in its playout: the RTP timestamp of the frame the tick at `at` played,
/// and how much audio its jitter buffer holds (lip sync lines the camera up with it).
public struct AudioPlayout: Sendable, Equatable {
    public var timestamp: UInt32
    public var at: Instant
    public var depth: Duration

    public init(timestamp: UInt32, at: Instant, depth: Duration) {
        self.timestamp = timestamp
        self.at = at
        self.depth = depth
    }
}

/// Audio decoded and not played yet, interleaved: samples, then digital silence kept as a count.
/// Most receivers of a large room play silence, and once their playout was shortened (spare
/// delay taken out) their ticks no longer fall on packet boundaries: as samples, every tick would
/// copy a packet's zeros in and a tick's zeros out.
struct PendingAudio {
    /// What the receiver's next step gives: decoded (or concealed) samples, or this many zeros.
    enum Piece {
        case samples([Int16])
        case silence(Int)
    }
    private var samples: [Int16] = []
    /// Zeros after `samples`.
    private var silence = 0

    var count: Int { samples.count + silence }
    /// Whether the next samples taken are all zeros without measuring: nothing decoded is pending.
    var isSilence: Bool { samples.isEmpty }

    mutating func append(_ piece: Piece) {
        switch piece {
        case .silence(let zeros):
            silence += zeros
        case .samples(let piece):
            materializeSilence()
            // Usually one packet makes one tick: take its array as it is, without copying.
            if samples.isEmpty { samples = piece } else { samples += piece }
        }
    }

    /// Takes the first `n` samples (at most `count`); `zeros(n)` gives n zeros when they are all
    /// silence (a kept array, handed out again every tick).
    mutating func removeFirst(_ n: Int, zeros: (Int) -> [Int16]) -> [Int16] {
        if samples.isEmpty {
            silence -= n
            return zeros(n)
        }
        if samples.count >= n {
            if samples.count == n { defer { samples = [] }; return samples }
            defer { samples.removeFirst(n) }
            return Array(samples[..<n])
        }
        // Sound, then the start of the silence: a new array either way (asking the kept one
        // for another length would only make it again at the next tick).
        silence -= n - samples.count
        defer { samples = [] }
        return samples + repeatElement(0, count: n - samples.count)
    }

    /// Runs `body` on every pending sample, the silence written out (a stretch of the playout).
    mutating func withSamples<Result>(_ body: (inout [Int16]) -> Result) -> Result {
        materializeSilence()
        return body(&samples)
    }

    private mutating func materializeSilence() {
        guard silence > 0 else { return }
        samples += repeatElement(0, count: silence)
        silence = 0
    }
}
