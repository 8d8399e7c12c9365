private import COpus
import Foundation
import Wire

/// Why an Opus encoder or decoder could not do what was asked: libopus's error and its words.
public enum OpusCodecError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A setting is out of range (which one, and why).
    case invalidConfiguration(String)
    /// libopus refused to create the codec.
    case initializationFailed(String)
    /// The frame handed to the encoder is not 20 ms of audio with the encoder's channel count.
    case wrongFrameLength(samples: Int, expected: Int)
    /// libopus refused to encode.
    case encodeFailed(String)
    /// The packet is not Opus libopus can decode (empty, corrupt, too long).
    case corruptPacket(String)

    /// What went wrong, in words for a log.
    public var description: String {
        switch self {
        case .invalidConfiguration(let why): "Opus: invalid configuration: \(why)"
        case .initializationFailed(let why): "Opus: libopus could not start the codec: \(why)"
        case .wrongFrameLength(let samples, let expected):
            "Opus: the encoder takes frames of 2.5, 5, 10, 20, 40 or 60 ms (20 ms is \(expected) interleaved samples), not \(samples) samples"
        case .encodeFailed(let why): "Opus: encoding failed: \(why)"
        case .corruptPacket(let why): "Opus: the packet could not be decoded: \(why)"
        }
    }
}

func opusErrorText(_ code: Int32) -> String { String(cString: opus_strerror(code)) }

/// A libopus encoder at 48 kHz, one packet per frame (RFC 7587); the host encodes 20 ms frames.
/// Not `Sendable`: one thread owns each encoder.
public final class OpusEncoder {
    /// What libopus tunes for.
    public enum Application: Sendable, Equatable {
        /// Speech: SILK at low rates, in-band FEC possible (OPUS_APPLICATION_VOIP).
        case voip
        /// Music and mixed content: favours fidelity (OPUS_APPLICATION_AUDIO).
        case audio
    }

    /// The encoder's settings.
    public struct Configuration: Sendable, Equatable {
        /// 1 (mono) or 2 (stereo).
        public var channels: Int
        /// What the audio is.
        public var application: Application
        /// Target bit rate, bits per second (6 000...510 000).
        public var bitrate: Int
        /// 0 (cheapest) ... 10 (best): about 0.18 ms and 0.39 ms a frame at 5 and 10 here.
        public var complexity: Int
        /// Whether each packet carries a low-rate copy of the previous frame (SILK LBRR), which
        /// ``OpusDecoder/decodeFEC(_:timestamp:)`` recovers a lost packet from.
        public var inbandFEC: Bool
        /// The loss the receivers report, 0...100 %: libopus only spends bits on FEC when this
        /// is above zero, and more as it rises.
        public var expectedPacketLossPercent: Int
        /// Discontinuous transmission: in silence, a packet of 1–2 bytes every 400 ms at most
        /// (and none in between for the caller to send).
        public var dtx: Bool

        /// A configuration; the defaults suit a conference mix of speech.
        public init(channels: Int = 1, application: Application = .voip, bitrate: Int = 32_000, complexity: Int = 10,
                    inbandFEC: Bool = true, expectedPacketLossPercent: Int = 10, dtx: Bool = false) {
            self.channels = channels
            self.application = application
            self.bitrate = bitrate
            self.complexity = complexity
            self.inbandFEC = inbandFEC
            self.expectedPacketLossPercent = expectedPacketLossPercent
            self.dtx = dtx
        }
    }

    /// The settings in force.
    public private(set) var configuration: Configuration

    private let encoder: OpaquePointer
    private var output = [UInt8](repeating: 0, count: 1500)

    /// Starts an encoder.
    public init(_ configuration: Configuration) throws(OpusCodecError) {
        guard configuration.channels == 1 || configuration.channels == 2 else {
            throw .invalidConfiguration("\(configuration.channels) channels; Opus here is mono or stereo")
        }
        var error: Int32 = 0
        let application = configuration.application == .voip ? OPUS_APPLICATION_VOIP : OPUS_APPLICATION_AUDIO
        guard let encoder = opus_encoder_create(Int32(AudioFrame.sampleRate), Int32(configuration.channels), application, &error),
              error == OPUS_OK else {
            throw .initializationFailed(opusErrorText(error))
        }
        self.encoder = encoder
        self.configuration = configuration
        // Fully initialized here: if a setting is refused, deinit destroys the encoder.
        try apply(configuration)
    }

    deinit { opus_encoder_destroy(encoder) }

    /// How far what a decoder plays lags the sound encoded, in samples at 48 kHz: libopus's
    /// look-ahead (2.5 ms) and delay compensation (4 ms) in its VOIP and audio applications.
    public static let voiceLookahead = 312

    /// This encoder's look-ahead in samples at 48 kHz (`OPUS_GET_LOOKAHEAD`).
    public var lookahead: Int {
        var samples: Int32 = 0
        return tessera_opus_get_lookahead(encoder, &samples) == OPUS_OK ? Int(samples) : Self.voiceLookahead
    }

    /// Changes the bit rate, complexity, FEC, expected loss or DTX while running (the channel
    /// count and application are fixed at creation).
    public func reconfigure(_ next: Configuration) throws(OpusCodecError) {
        guard next.channels == configuration.channels, next.application == configuration.application else {
            throw .invalidConfiguration("channels and application are fixed when the encoder is made")
        }
        try apply(next)
    }

    /// Changes the target bit rate (bits per second).
    public func setBitrate(_ bitrate: Int) throws(OpusCodecError) {
        var next = configuration
        next.bitrate = bitrate
        try apply(next)
    }

    /// Changes the loss libopus plans FEC for (from receiver reports' fraction lost).
    public func setExpectedPacketLoss(percent: Int) throws(OpusCodecError) {
        var next = configuration
        next.expectedPacketLossPercent = percent
        try apply(next)
    }

    private func apply(_ next: Configuration) throws(OpusCodecError) {
        guard (6_000...510_000).contains(next.bitrate) else { throw .invalidConfiguration("bit rate \(next.bitrate) is outside 6000...510000") }
        guard (0...10).contains(next.complexity) else { throw .invalidConfiguration("complexity \(next.complexity) is outside 0...10") }
        guard (0...100).contains(next.expectedPacketLossPercent) else {
            throw .invalidConfiguration("expected loss \(next.expectedPacketLossPercent)% is outside 0...100")
        }
        let requests: [(String, Int32)] = [
            ("bit rate", tessera_opus_set_bitrate(encoder, Int32(next.bitrate))),
            ("complexity", tessera_opus_set_complexity(encoder, Int32(next.complexity))),
            ("in-band FEC", tessera_opus_set_inband_fec(encoder, next.inbandFEC ? 1 : 0)),
            ("packet loss", tessera_opus_set_packet_loss_perc(encoder, Int32(next.expectedPacketLossPercent))),
            ("DTX", tessera_opus_set_dtx(encoder, next.dtx ? 1 : 0)),
            ("signal", tessera_opus_set_signal(encoder, next.application == .voip ? OPUS_SIGNAL_VOICE : OPUS_AUTO)),
        ]
        for (name, status) in requests where status != OPUS_OK {
            throw .invalidConfiguration("\(name): \(opusErrorText(status))")
        }
        configuration = next
    }

    /// The frame lengths Opus codes, in samples per channel at 48 kHz: 2.5 to 60 ms.
    private static let frameLengths: Set<Int> = [120, 240, 480, 960, 1920, 2880]

    /// Encodes one frame (interleaved) into one Opus packet: 20 ms, the host's tick, or any other
    /// length Opus codes (2.5, 5, 10, 40 or 60 ms, RFC 6716 §2.1.4). With DTX on, a packet of 2
    /// bytes or fewer is silence the caller need not send (RFC 7587 §3.1.3).
    public func encode(_ frame: AudioFrame) throws(OpusCodecError) -> [UInt8] {
        let perChannel = frame.samples.count / max(1, configuration.channels)
        guard frame.channels == configuration.channels, perChannel * configuration.channels == frame.samples.count,
              Self.frameLengths.contains(perChannel) else {
            throw .wrongFrameLength(samples: frame.samples.count, expected: AudioFrame.samplesPer20ms * configuration.channels)
        }
        let encoder = encoder
        let length = frame.samples.withUnsafeBufferPointer { pcm in
            output.withUnsafeMutableBufferPointer { out -> Int32 in
                guard let samples = pcm.baseAddress, let bytes = out.baseAddress else { return OPUS_BAD_ARG }
                return opus_encode(encoder, samples, Int32(perChannel), bytes, Int32(out.count))
            }
        }
        guard length > 0 else { throw .encodeFailed(opusErrorText(length)) }
        return Array(output[0..<Int(length)])
    }
}

/// A libopus decoder at 48 kHz with packet loss concealment and in-band FEC recovery.
/// Not `Sendable`: one thread owns each decoder.
public final class OpusDecoder {
    /// 1 (mono) or 2 (stereo): what the decoder outputs, whatever the packets carry.
    public let channels: Int
    /// The longest packet Opus allows: 120 ms.
    private static let maxSamplesPerChannel = 5760

    private let decoder: OpaquePointer
    private var pcm: [Int16]
    /// Samples per channel of the last frame decoded or concealed: what loss is concealed as.
    private var lastFrameSamples = AudioFrame.samplesPer20ms

    /// Starts a decoder.
    public init(channels: Int = 1) throws(OpusCodecError) {
        guard channels == 1 || channels == 2 else { throw .invalidConfiguration("\(channels) channels; Opus here is mono or stereo") }
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(Int32(AudioFrame.sampleRate), Int32(channels), &error), error == OPUS_OK else {
            throw .initializationFailed(opusErrorText(error))
        }
        self.decoder = decoder
        self.channels = channels
        pcm = [Int16](repeating: 0, count: Self.maxSamplesPerChannel * channels)
    }

    private init(taking decoder: OpaquePointer, channels: Int) {
        self.decoder = decoder
        self.channels = channels
        pcm = [Int16](repeating: 0, count: Self.maxSamplesPerChannel * channels)
    }

    deinit { opus_decoder_destroy(decoder) }

    /// An independent decoder in this one's state, so that two streams that shared their past
    /// can each go on from it. libopus keeps a decoder's state in one block that a shallow copy
    /// duplicates (opus.h), allocated with malloc as `opus_decoder_create` does.
    public func copy() throws(OpusCodecError) -> OpusDecoder {
        let size = Int(opus_decoder_get_size(Int32(channels)))
        guard size > 0, let block = malloc(size) else { throw .initializationFailed("no memory for a decoder of \(size) bytes") }
        memcpy(block, UnsafeRawPointer(decoder), size)
        let copy = OpusDecoder(taking: OpaquePointer(block), channels: channels)
        copy.lastFrameSamples = lastFrameSamples
        return copy
    }

    /// Whether `packet` carries in-band FEC for the packet before it (SILK or hybrid mode with
    /// the LBRR flag set); false for CELT-only and malformed packets.
    public static func hasFEC(_ packet: [UInt8]) -> Bool {
        guard !packet.isEmpty else { return false }
        return packet.withUnsafeBufferPointer { tessera_opus_packet_has_lbrr($0.baseAddress, Int32($0.count)) } == 1
    }

    /// Decodes one packet into the audio it carries (usually 20 ms).
    public func decode(_ packet: [UInt8], timestamp: Instant = Instant(nanoseconds: 0)) throws(OpusCodecError) -> AudioFrame {
        guard !packet.isEmpty else { throw .corruptPacket("an empty packet (use concealLoss() for a missing one)") }
        guard packet.count <= 1275 * 48 + 100 else { throw .corruptPacket("\(packet.count) bytes is longer than any Opus packet") }
        return try run(packet, samples: Self.maxSamplesPerChannel, fec: false, timestamp: timestamp)
    }

    /// Audio for a lost packet, extrapolated from what came before (libopus PLC): `samples` per
    /// channel (rounded up to Opus's 2.5 ms grid, at most 120 ms), by default as long as the last
    /// frame. After a DTX packet this is comfort noise.
    public func concealLoss(samples: Int? = nil, timestamp: Instant = Instant(nanoseconds: 0)) -> AudioFrame {
        let count = samples.map(Self.onOpusGrid) ?? lastFrameSamples
        return (try? run(nil, samples: count, fec: false, timestamp: timestamp))
            ?? AudioFrame(channels: channels, samples: [Int16](repeating: 0, count: count * channels), timestamp: timestamp)
    }

    /// The lost audio before `nextPacket` (`samples` per channel, by default the last frame's
    /// length), its last frame recovered from the FEC `nextPacket` carries and any earlier part
    /// concealed, as libopus does when asked for more than one frame (decode `nextPacket` itself
    /// normally afterwards). When it carries none (see ``hasFEC(_:)``), libopus conceals it all.
    public func decodeFEC(_ nextPacket: [UInt8], samples: Int? = nil, timestamp: Instant = Instant(nanoseconds: 0)) throws(OpusCodecError) -> AudioFrame {
        guard !nextPacket.isEmpty else { throw .corruptPacket("an empty packet carries no FEC") }
        guard nextPacket.count <= 1275 * 48 + 100 else { throw .corruptPacket("\(nextPacket.count) bytes is longer than any Opus packet") }
        return try run(nextPacket, samples: samples.map(Self.onOpusGrid) ?? lastFrameSamples, fec: true, timestamp: timestamp)
    }

    /// The audio an Opus packet holds, in samples per channel at 48 kHz (RFC 6716 §3.1: its TOC
    /// byte's frame size times its frame count); nil for a malformed packet.
    public static func sampleCount(of packet: [UInt8]) -> Int? {
        guard !packet.isEmpty else { return nil }
        let count = packet.withUnsafeBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return OPUS_BAD_ARG }
            return opus_packet_get_nb_samples(base, Int32(bytes.count), Int32(AudioFrame.sampleRate))
        }
        return count > 0 ? Int(count) : nil
    }

    /// libopus conceals in whole 2.5 ms steps, at most 120 ms at a time.
    private static func onOpusGrid(_ samples: Int) -> Int {
        let step = AudioFrame.sampleRate / 400
        return min(maxSamplesPerChannel, max(step, (samples + step - 1) / step * step))
    }

    /// Forgets the stream's state (a new sender, or a long gap).
    public func reset() {
        _ = tessera_opus_reset_decoder(decoder)
    }

    private func run(_ packet: [UInt8]?, samples: Int, fec: Bool, timestamp: Instant) throws(OpusCodecError) -> AudioFrame {
        let decoder = decoder
        let count: Int32 = pcm.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let out = buffer.baseAddress else { return OPUS_BAD_ARG }
            if let packet {
                return packet.withUnsafeBufferPointer { data in
                    opus_decode(decoder, data.baseAddress, Int32(data.count), out, Int32(samples), fec ? 1 : 0)
                }
            } else {
                return opus_decode(decoder, nil, 0, out, Int32(samples), 0)
            }
        }
        guard count > 0 else { throw .corruptPacket(count == 0 ? "no audio in the packet" : opusErrorText(count)) }
        let length = Int(count)
        if !fec { lastFrameSamples = length }
        return AudioFrame(channels: channels, samples: Array(pcm[0..<(length * channels)]), timestamp: timestamp)
    }
}
