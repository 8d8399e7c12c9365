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
