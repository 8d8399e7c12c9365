/// Playing faster or slower without being heard. Faster brings a jitter buffer's delay down:
/// instead of dropping a packet (a click and 20 ms of speech gone), take out one pitch period
/// where the audio repeats itself, or a stretch where it is quiet. This is WSOLA, as WebRTC's
/// NetEq "accelerate" does it: find the lag L (2.5–15 ms, the pitch periods of voices) at which
/// the start of the audio best matches itself L later, cross-fade the two over a 5 ms window,
/// and drop the L samples between. Slower (NetEq's "preemptive expand") plays one period twice,
/// to delay a voice for lip sync.
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
        guard let (mono, longest) = prepare(pcm, channels: channels, atMost: atMost) else { return 0 }
        guard let cut = isQuiet(mono, through: longest + window) ? longest : period(of: mono, atMost: longest) else { return 0 }
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

    /// Playing slower without being heard (NetEq's "preemptive expand"), to raise the delay:
    /// repeats one pitch period at the start of `pcm`, or puts quiet into a quiet stretch, of at
    /// most `atMost` samples per channel; returns the samples per channel added (0: none).
    public static func lengthen(_ pcm: inout [Int16], channels: Int, atMost: Int = longestCut) -> Int {
        guard let (mono, longest) = prepare(pcm, channels: channels, atMost: atMost) else { return 0 }
        if isQuiet(mono, through: longest + window) {
            pcm.insert(contentsOf: [Int16](repeating: 0, count: longest * channels), at: 0)
            return longest
        }
        guard let lag = period(of: mono, atMost: longest) else { return 0 }
        // The first `lag` samples play, then the audio fades from going on (at `lag`) to
        // starting over (at 0); from the window's end the start plays again: one period more.
        var repeated = Array(pcm[0..<(lag * channels)])
        repeated.reserveCapacity((lag + window) * channels)
        for frame in 0..<window {
            let rising = Double(frame) / Double(window)
            for channel in 0..<channels {
                let on = Double(pcm[(frame + lag) * channels + channel]), over = Double(pcm[frame * channels + channel])
                repeated.append(Int16(clamping: Int((on * (1 - rising) + over * rising).rounded())))
            }
        }
        pcm.replaceSubrange(0..<(window * channels), with: repeated)
        return lag
    }

    /// The channels' mean over the longest cut and a window, and the longest change allowed;
    /// nil when `pcm` is too short or `atMost` under the shortest cut.
    private static func prepare(_ pcm: [Int16], channels: Int, atMost: Int) -> (mono: [Double], longest: Int)? {
        guard channels > 0 else { return nil }
        let longest = min(longestCut, atMost)
        guard longest >= shortestCut, pcm.count / channels >= longestCut + window else { return nil }
        var mono = [Double](repeating: 0, count: longestCut + window)
        for frame in mono.indices {
            var sum = 0.0
            for channel in 0..<channels { sum += Double(pcm[frame * channels + channel]) }
            mono[frame] = sum / Double(channels)
        }
        return (mono, longest)
    }

    /// Quiet through the first `count` samples: a change there would not be heard (a sound
    /// starting within them would be pulled earlier, or later, and faded in: a click).
    private static func isQuiet(_ mono: [Double], through count: Int) -> Bool {
        (mono[0..<count].reduce(0) { $0 + $1 * $1 } / Double(count)).squareRoot() < quietRMS
    }

    /// The lag (`shortestCut`…`longest`) at which the start of the audio best matches itself
    /// later, when it matches well enough (`alike`): its pitch period, or the largest multiple
    /// of it that fits and matches too. Searched coarsely first (every other lag, every other
    /// sample: a voice's periods are far longer than two samples), then exactly around the best.
    private static func period(of mono: [Double], atMost longest: Int) -> Int? {
        // Plain loops over the buffer: this runs every few ticks for every voice.
        func score(_ lag: Int, step: Int) -> Double {
            var cross = 0.0, energy = 0.0, headEnergy = 0.0
            mono.withUnsafeBufferPointer { samples in
                var index = 0
                while index < window {
                    let head = samples[index], later = samples[lag + index]
                    cross += head * later
                    energy += later * later
                    headEnergy += head * head
                    index += step
                }
            }
            guard energy > 0, headEnergy > 0 else { return -1 }
            return cross / (headEnergy * energy).squareRoot()
        }
        var coarse = (lag: 0, score: -1.0)
        var lag = shortestCut
        while lag <= longest {
            let value = score(lag, step: 2)
            if value > coarse.score { coarse = (lag, value) }
            lag += 2
        }
        guard coarse.lag > 0 else { return nil }
        var best = (lag: 0, score: alike)
        for lag in max(shortestCut, coarse.lag - 1)...min(longest, coarse.lag + 1) {
            let value = score(lag, step: 1)
            if value > best.score { best = (lag, value) }
        }
        guard best.lag > 0 else { return nil }
        // As many whole periods as fit, where the audio still matches itself there: one stretch
        // instead of several (a 400 Hz tone's period is only 2.5 ms).
        for multiple in stride(from: longest / best.lag, to: 1, by: -1) where score(best.lag * multiple, step: 1) >= alike {
            return best.lag * multiple
        }
        return best.lag
    }
}
