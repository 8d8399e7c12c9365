import Media
import Wire

/// One tick's sum of frames, and mixes made from it by taking frames back out: the one
/// "everyone but …" of the project. `MixMinus` takes each sender out in turn; the host's
/// per-guest mixer (`RoomAudioMixer`) takes out each listener's own voice and those it does not
/// hear. The sum is Int32, so nothing clips before the limiter, which each mix applies after the
/// subtraction: a guest must not hear the others turned down because of its own loud voice.
public struct MixBus: Sendable {
    /// 1 (mono) or 2 (stereo).
    public let channels: Int
    private var sum: [Int32]
    private var mix: [Int32]

    public init(channels: Int = 1, samplesPerChannel: Int = AudioFrame.samplesPer20ms) {
        precondition(channels == 1 || channels == 2, "mono or stereo")
        self.channels = channels
        sum = [Int32](repeating: 0, count: samplesPerChannel * channels)
        mix = sum
    }

    /// Starts a new tick: the sum is silence.
    public mutating func clear() {
        sum.withUnsafeMutableBufferPointer { sum in
            for index in sum.indices { sum[index] = 0 }
        }
    }

    /// Adds a frame to this tick's sum (mono and stereo converted).
    public mutating func add(_ frame: AudioFrame) {
        let channels = channels
        sum.withUnsafeMutableBufferPointer { accumulate(frame, into: $0, channels: channels, sign: 1) }
    }

    /// Lets `add` add into this tick's sum in place (a track reader adds its next frame without
    /// a copy); returns what `add` returns: whether it added anything.
    public mutating func addInPlace(_ add: (UnsafeMutableBufferPointer<Int32>, _ channels: Int) -> Bool) -> Bool {
        let channels = channels
        return sum.withUnsafeMutableBufferPointer { add($0, channels) }
    }

    /// The sum less `frames`, brought back to Int16 by `limiter`.
    public mutating func mix(without frames: [AudioFrame], limiter: inout SoftLimiter, timestamp: Instant) -> AudioFrame {
        let channels = channels
        sum.withUnsafeBufferPointer { sum in
            mix.withUnsafeMutableBufferPointer { mix in
                for index in mix.indices { mix[index] = sum[index] }
                for frame in frames { accumulate(frame, into: mix, channels: channels, sign: -1) }
            }
        }
        var samples = [Int16](repeating: 0, count: mix.count)
        mix.withUnsafeBufferPointer { mix in
            samples.withUnsafeMutableBufferPointer { limiter.process(mix, channels: channels, into: $0) }
        }
        return AudioFrame(channels: channels, samples: samples, timestamp: timestamp)
    }
}
