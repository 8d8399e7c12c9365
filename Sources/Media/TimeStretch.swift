/// Playing faster without being heard, to bring a jitter buffer's delay down: instead of
/// dropping a packet (a click and 20 ms of speech gone), take out one pitch period where the
/// audio repeats itself, or a stretch where it is quiet. This is WSOLA, as WebRTC's NetEq
/// "accelerate" does it: find the lag L (2.5–15 ms, the pitch periods of voices) at which the
/// start of the audio best matches itself L later, cross-fade the two over a 5 ms window, and
/// drop the L samples between.
public enum TimeStretch {
    /// The shortest and the longest cut, in samples per channel at 48 kHz.
    public static let shortestCut = 120, longestCut = 720
    /// The cross-fade, 5 ms.
    public static let window = 240
    /// How alike the two windows must be (normalized cross-correlation) for a cut in sound.
    static let alike = 0.9
    /// Under this RMS (about -50 dBov) the audio is quiet, and where it is quiet through the
    /// longest cut and its window, that cut is taken.
    static let quietRMS = 100.0

    /// Takes one cut from the start of `pcm` (interleaved, `channels` per frame) when it repeats
    /// itself or is quiet there, of at most `atMost` samples per channel; returns the samples per
    /// channel taken out (0: none, the audio did not allow it or is shorter than
    /// `longestCut + window`).
    public static func shorten(_ pcm: inout [Int16], channels: Int, atMost: Int = longestCut) -> Int {
        let frames = pcm.count / channels
        let longest = min(longestCut, atMost)
        guard channels > 0, longest >= shortestCut, frames >= longestCut + window else { return 0 }
        // Correlate the channels' mean.
        var mono = [Double](repeating: 0, count: longestCut + window)
        for frame in mono.indices {
            var sum = 0.0
            for channel in 0..<channels { sum += Double(pcm[frame * channels + channel]) }
            mono[frame] = sum / Double(channels)
        }
        let head = mono[0..<window]
        let headEnergy = head.reduce(0) { $0 + $1 * $1 }
        let cut: Int
        let span = mono[0..<(longest + window)]
        if (span.reduce(0) { $0 + $1 * $1 } / Double(span.count)).squareRoot() < quietRMS {
            // Quiet through the cut and the window after it (a sound starting within it would
            // be pulled earlier and faded in: a click).
            cut = longest
        } else {
            guard headEnergy > 0 else { return 0 }
            var best = (lag: 0, score: alike)
            for lag in shortestCut...longest {
                var cross = 0.0, energy = 0.0
                for index in 0..<window {
                    let later = mono[lag + index]
                    cross += head[index] * later
                    energy += later * later
                }
                guard energy > 0 else { continue }
                let score = cross / (headEnergy * energy).squareRoot()
                if score > best.score { best = (lag, score) }
            }
            guard best.lag > 0 else { return 0 }
            cut = best.lag
        }
        // Fade the start out while the audio `cut` later fades in; what follows that window goes on.
        for frame in 0..<window {
            let rising = Double(frame) / Double(window)
            for channel in 0..<channels {
                let early = Double(pcm[frame * channels + channel]), late = Double(pcm[(frame + cut) * channels + channel])
                pcm[frame * channels + channel] = Int16(clamping: Int((early * (1 - rising) + late * rising).rounded()))
            }
        }
        pcm.removeSubrange((window * channels)..<((window + cut) * channels))
        return cut
    }
}
