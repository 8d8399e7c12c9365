import Foundation
import RTP
import Wire

/// PCM audio at 48 kHz, signed 16-bit, interleaved when stereo: what Opus decodes to and encodes
/// from. The host works in 20 ms frames (960 samples per channel).
public struct AudioFrame: Sendable, Equatable {
    public static let sampleRate = 48_000
    /// Samples per channel in 20 ms, the host's audio tick.
    public static let samplesPer20ms = 960

    public var channels: Int
    /// Interleaved samples: `channels` × samples per channel.
    public var samples: [Int16]
    /// When the first sample was captured, on the host's clock.
    public var timestamp: Instant

    public init(channels: Int = 1, samples: [Int16], timestamp: Instant = Instant(nanoseconds: 0)) {
        precondition(channels == 1 || channels == 2, "mono or stereo")
        self.channels = channels
        self.samples = samples
        self.timestamp = timestamp
    }

    /// 20 ms of silence.
    public static func silence(channels: Int = 1, timestamp: Instant = Instant(nanoseconds: 0)) -> AudioFrame {
        AudioFrame(channels: channels, samples: [Int16](repeating: 0, count: samplesPer20ms * channels), timestamp: timestamp)
    }

    public var samplesPerChannel: Int { samples.count / channels }
    public var duration: Duration { .microseconds(Int64(samplesPerChannel) * 1_000_000 / Int64(Self.sampleRate)) }
}

extension AudioLevel {
    /// The level of a frame as RFC 6464 §4 defines it, the RMS of its samples in -dBov (127 for
    /// digital silence), with the V bit set when it is louder than `AudioReceiver.silentLevel`.
    public init(of frame: AudioFrame) {
        let meanSquare = frame.samples.isEmpty ? 0
            : frame.samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(frame.samples.count)
        let dBov = meanSquare > 0 ? -10 * log10(meanSquare / (32768.0 * 32768.0)) : 127
        let level = UInt8(min(127, max(0, dBov.rounded())))
        self.init(voiceActivity: level < AudioReceiver.silentLevel, level: level)
    }
}
