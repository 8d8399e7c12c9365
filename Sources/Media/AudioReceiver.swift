import RTP
import Wire

/// One Opus stream's receive side: a jitter buffer and a decoder, giving one frame of audio per
/// tick whatever the network did. Not `Sendable`: the room's thread owns it.
///
/// Packets whose sender says they are silence (RFC 6464 audio level, as browsers send it) are
/// not decoded: in a room most guests are silent most of the time, and decoding is the largest
/// cost of a guest's audio (about 45 µs a packet).
/// - The first silent packet after sound is decoded: it holds the end of the sound (the codec's
///   delay, a few ms); skipping it cuts the sound off with a click that spreads over every
///   frequency (`tessera load`'s own-voice check heard it at the listener's own tone).
/// - The next silent packets play as silence, and so does a loss among them (concealment would
///   extrapolate the last sound decoded).
/// - At the next packet with sound the decoder is reset, as at a stream's start: after digital
///   silence the sender's encoder is in that state too, so the talkspurt decodes as if nothing had
///   been skipped, where the state of the sound before the silence would be mismatched.
public final class AudioReceiver {
    /// The buffer, for its statistics.
    public private(set) var buffer: AudioJitterBuffer
    /// Packets the decoder refused (they were concealed instead).
    public private(set) var decodeErrors = 0
    /// Packets played as silence without decoding, because their level said so.
    public private(set) var silentPacketsSkipped = 0
    /// A packet at this RFC 6464 level (-dBov) or quieter is silence: -96 dBov is under the
    /// quantization noise of 16-bit audio.
    public static let silentLevel: UInt8 = 96
    /// Whether the last frame played was a silent packet not decoded.
    private var lastWasSkipped = false
    /// Silent packets played in a row (decoded or not).
    private var silentInARow = 0
    /// The channel count of the output.
    public let channels: Int
    private let decoder: OpusDecoder

    /// A receiver decoding to `channels` (1 or 2).
    public init(channels: Int = 1, configuration: AudioJitterBuffer.Configuration = .init()) throws(OpusCodecError) {
        decoder = try OpusDecoder(channels: channels)
        self.channels = channels
        buffer = AudioJitterBuffer(configuration: configuration)
    }

    /// Takes one received Opus RTP payload, with its RFC 6464 audio level when the sender put one.
    public func receive(payload: [UInt8], sequenceNumber: UInt16, timestamp: UInt32, arrival: Instant, level: AudioLevel? = nil) {
        buffer.insert(payload: payload, sequenceNumber: sequenceNumber, timestamp: timestamp, arrival: arrival,
                      isSilent: level.map { $0.level >= Self.silentLevel } ?? false)
    }

    /// Where the playout is; nil while nothing plays.
    public var playout: AudioPlayout? {
        guard let timestamp = buffer.playedTimestamp, let at = lastTick else { return nil }
        return AudioPlayout(timestamp: timestamp, at: at, depth: buffer.statistics.currentDepth)
    }
    private var lastTick: Instant?

    /// The audio for the tick at `now` (20 ms for 20 ms packets), stamped `now`.
    public func tick(now: Instant) -> AudioFrame {
        lastTick = now
        switch buffer.pop(now: now) {
        case .silentPacket(let packet):
            silentInARow += 1
            if silentInARow == 1 { return decode(packet, now: now) }
            silentPacketsSkipped += 1
            lastWasSkipped = true
            return AudioFrame.silence(channels: channels, timestamp: now)
        case .conceal where lastWasSkipped:
            return AudioFrame.silence(channels: channels, timestamp: now)
        case .conceal:
            return decoder.concealLoss(timestamp: now)
        case .silence:
            lastWasSkipped = false
            silentInARow = 0
            return AudioFrame.silence(channels: channels, timestamp: now)
        case .packet(let packet):
            resetAfterSilence()
            return decode(packet, now: now)
        case .recoverWithFEC(let next):
            resetAfterSilence()
            do { return try decoder.decodeFEC(next, timestamp: now) } catch {
                decodeErrors += 1
                return decoder.concealLoss(timestamp: now)
            }
        }
    }

    private func decode(_ packet: [UInt8], now: Instant) -> AudioFrame {
        do { return try decoder.decode(packet, timestamp: now) } catch {
            decodeErrors += 1
            return decoder.concealLoss(timestamp: now)
        }
    }

    /// Before a packet with sound: after skipped silence, the decoder starts afresh.
    private func resetAfterSilence() {
        silentInARow = 0
        guard lastWasSkipped else { return }
        decoder.reset()
        lastWasSkipped = false
    }
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
