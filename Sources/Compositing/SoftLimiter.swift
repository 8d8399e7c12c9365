#if canImport(Glibc)
import Glibc
#endif

/// Brings a mix (a sum of Int16 sources, held in Int32 so that it never wraps) back into Int16
/// range without hard clipping: a peak envelope (instant attack, 50 ms hold, 150 ms release)
/// drives a gain whose soft knee starts at `threshold` and approaches `ceiling` without reaching
/// it.
///
/// Below the threshold the mix passes unchanged. Above it, each sample is multiplied by
/// `knee(envelope) / envelope`, where `knee` rises smoothly and saturates (tanh) at the ceiling;
/// since no sample exceeds the envelope, none leaves the ceiling, and no look-ahead is needed.
/// Because the gain follows the envelope rather than each sample, and the hold keeps it steady
/// between the peaks of a periodic sound (voice, music, tones down to 20 Hz), a loud tone is
/// turned down, not flattened: its peaks keep their shape. There is no look-ahead delay; the
/// envelope steps per 16-sample block of the tick in hand (see `process`). One limiter per output (each guest's mix has its
/// own), since the envelope carries over from tick to tick.
public struct SoftLimiter: Sendable {
    /// Where gain reduction starts, as a fraction of Int16 full scale (about -2.5 dBFS).
    public static let threshold: Float = 0.75
    /// What the output approaches and never reaches, as a fraction of full scale (about -0.2 dBFS).
    public static let ceiling: Float = 0.98
    /// How long the envelope stays at a peak before it starts to fall.
    public static let hold: Duration = .milliseconds(50)
    /// The envelope then falls by 1/e in this long.
    public static let release: Duration = .milliseconds(150)

    /// The current peak envelope, as a fraction of full scale.
    public private(set) var envelope: Float = 0
    private let releasePerSample: Float
    private var holdRemaining = 0
    private static let holdSamples = 48_000 / 20

    /// A limiter at rest (no gain reduction).
    public init() {
        releasePerSample = expf(-1 / (0.150 * 48_000))
    }

    /// Samples per channel that share one envelope step and one gain.
    static let blockLength = 16

    /// Limits `mix` (interleaved, `channels` channels, linked: one gain for all channels) into
    /// `output`, which must be as long.
    ///
    /// Works in blocks of 16 samples (a third of a millisecond): each block's envelope is at
    /// least its loudest sample, so the gain is safe for every sample in it, and the block's
    /// multiply runs without branches. The mix is in hand a whole tick at a time, so looking 16
    /// samples ahead adds no delay.
    public mutating func process(_ mix: UnsafeBufferPointer<Int32>, channels: Int, into output: UnsafeMutableBufferPointer<Int16>) {
        precondition(output.count >= mix.count, "output as long as the mix")
        let scale: Float = 1 / 32_768
        let (threshold, ceiling) = (Self.threshold, Self.ceiling)
        let kneeWidth = ceiling - threshold
        let blockSamples = Self.blockLength * channels
        let releasePerBlock = powf(releasePerSample, Float(Self.blockLength))
        var envelope = envelope
        var (gain, gainEnvelope, blocksSinceGain) = (Float(1), -Float.infinity, 0)  // computed at the first block
        var start = 0
        while start < mix.count {
            let end = min(start + blockSamples, mix.count)
            var loudest: UInt32 = 0
            for index in start..<end { loudest = max(loudest, mix[index].magnitude) }
            let peak = Float(loudest) * scale
            if peak >= envelope {
                envelope = peak
                holdRemaining = Self.holdSamples
            } else if holdRemaining > 0 {
                holdRemaining -= Self.blockLength
            } else {
                envelope = max(peak, envelope * releasePerBlock)
            }
            // knee(e) / e never rises with e, so a gain computed for a higher envelope than the
            // current one only turns down a little more: recompute it when the envelope rises
            // (an attack), otherwise every other block (tanhf is costly).
            if envelope > gainEnvelope || blocksSinceGain >= 2 {
                gainEnvelope = envelope
                blocksSinceGain = 0
                gain = envelope > threshold ? (threshold + kneeWidth * tanhf((envelope - threshold) / kneeWidth)) / envelope : 1
            }
            blocksSinceGain += 1
            if gain == 1 {
                // Below the knee, so within Int16: a plain copy.
                for index in start..<end { output[index] = Int16(truncatingIfNeeded: mix[index]) }
            } else {
                for index in start..<end {
                    let value = Float(mix[index]) * gain
                    output[index] = Int16(clamping: Int32(value + (value < 0 ? -0.5 : 0.5)))  // rounded; within the ceiling
                }
            }
            start = end
        }
        self.envelope = envelope
    }

    /// `mix` limited into a new array of Int16 samples.
    public mutating func process(_ mix: [Int32], channels: Int = 1) -> [Int16] {
        var output = [Int16](repeating: 0, count: mix.count)
        mix.withUnsafeBufferPointer { mix in
            output.withUnsafeMutableBufferPointer { process(mix, channels: channels, into: $0) }
        }
        return output
    }
}
