import Media
import Wire

/// Every guest's mix for one 20 ms tick: "everyone but X" for each X, made cheaply by summing all
/// senders once and subtracting each sender's own frame from the sum (N + 1 mixes for the cost of
/// about 2N additions per sample), then limiting each result.
///
/// The limiter applies after the subtraction, never to the sum before it: a guest must not hear
/// the others turned down because of its own loud voice. Guests who sent nothing this tick hear
/// the whole mix, so they share one output (`everyone`) and can share one encoder. Each sender
/// has its own limiter state, started from the shared one when it begins sending so that its mix
/// does not jump. Confined to its room's loop.
public struct MixMinus<Guest: Hashable> {
    /// 1 (mono) or 2 (stereo) in every mix.
    public var channels: Int { bus.channels }

    private var bus: MixBus
    private var everyoneLimiter = SoftLimiter()
    private var limiters: [Guest: SoftLimiter] = [:]

    /// A mixer of `channels`-channel frames of `samplesPerChannel` samples.
    public init(channels: Int = 1, samplesPerChannel: Int = AudioFrame.samplesPer20ms) {
        bus = MixBus(channels: channels, samplesPerChannel: samplesPerChannel)
    }

    /// Mixes one tick. `frames` holds what each sending guest contributed this tick (a guest
    /// listed twice counts once, its last frame); the answer holds the whole mix and, for each
    /// sender, the mix without it.
    public mutating func mix(_ frames: [(guest: Guest, frame: AudioFrame)], timestamp: Instant) -> MixMinusOutput<Guest> {
        var senders: [Guest: Int] = [:]
        for (index, entry) in frames.enumerated() { senders[entry.guest] = index }
        bus.clear()
        for index in senders.values { bus.add(frames[index].frame) }
        var output = MixMinusOutput<Guest>(everyone: bus.mix(without: [], limiter: &everyoneLimiter, timestamp: timestamp))
        var nextLimiters: [Guest: SoftLimiter] = [:]
        nextLimiters.reserveCapacity(senders.count)
        for (guest, index) in senders {
            var limiter = limiters[guest] ?? everyoneLimiter
            output.withoutGuest[guest] = bus.mix(without: [frames[index].frame], limiter: &limiter, timestamp: timestamp)
            nextLimiters[guest] = limiter
        }
        limiters = nextLimiters
        return output
    }
}

/// One tick of `MixMinus`: the whole mix, and for each guest who sent audio, the mix without it.
public struct MixMinusOutput<Guest: Hashable> {
    /// Every sender mixed: what guests who sent nothing hear (and what viewers and recorders get).
    public var everyone: AudioFrame
    /// For each guest who sent audio this tick, everyone but that guest.
    public var withoutGuest: [Guest: AudioFrame] = [:]

    /// What `guest` hears: everyone but itself.
    public func mix(for guest: Guest) -> AudioFrame {
        withoutGuest[guest] ?? everyone
    }
}

/// Adds (`sign` 1) or takes away (`sign` -1) `frame` in `mix` (interleaved, `channels`
/// channels), converting mono and stereo; a frame shorter than the mix adds silence for the
/// rest, a longer one is cut.
func accumulate(_ frame: AudioFrame, into mix: UnsafeMutableBufferPointer<Int32>, channels: Int, sign: Int32) {
    let count = min(mix.count / channels, frame.samplesPerChannel)
    let frameChannels = frame.channels
    frame.samples.withUnsafeBufferPointer { source in
        if frameChannels == channels {
            for index in 0..<count * channels { mix[index] &+= sign &* Int32(source[index]) }
            return
        }
        for sample in 0..<count {
            let target = sample * channels, origin = sample * frameChannels
            switch (frameChannels, channels) {
            case (1, 1): mix[target] &+= sign &* Int32(source[origin])
            case (2, 2):
                mix[target] &+= sign &* Int32(source[origin])
                mix[target + 1] &+= sign &* Int32(source[origin + 1])
            case (1, 2):
                mix[target] &+= sign &* Int32(source[origin])
                mix[target + 1] &+= sign &* Int32(source[origin])
            default: mix[target] &+= sign &* ((Int32(source[origin]) + Int32(source[origin + 1])) / 2)
            }
        }
    }
}
