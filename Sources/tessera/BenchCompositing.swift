import Compositing
import Foundation
import Media
import Wire

// Audio mixing cost per 20 ms tick. Rates are tracks mixed per second, so the cost of one tick
// with N tracks is N / rate (50 ticks a second must fit in a core's budget).

func benchMix10() -> Measurement { benchMix(tracks: 10) }
func benchMix100() -> Measurement { benchMix(tracks: 100) }
func benchMix1000() -> Measurement { benchMix(tracks: 1000) }
func benchMixMinus10() -> Measurement { benchMixMinus(guests: 10) }
func benchMixMinus100() -> Measurement { benchMixMinus(guests: 100) }
func benchMixMinus1000() -> Measurement { benchMixMinus(guests: 1000) }

/// 20 ms of a tone per guest, each at its own frequency and a tenth of full scale (loud enough
/// together that the limiter works).
private func toneFrames(_ count: Int) -> [AudioFrame] {
    (0..<count).map { guest in
        let frequency = 200 + 7 * Double(guest)
        return AudioFrame(samples: (0..<AudioFrame.samplesPer20ms).map { index in
            Int16(3_276 * sin(2 * Double.pi * frequency * Double(index) / Double(AudioFrame.sampleRate)))
        })
    }
}

/// The room mix: every track pushes 20 ms, the AudioCompositor reads each through its reader,
/// sums, limits and pushes one frame to its output track.
private func benchMix(tracks count: Int) -> Measurement {
    let compositor = AudioCompositor()
    compositor.start()
    let tracks = (0..<count).map { AudioTrack(id: "guest-\($0)") }
    for track in tracks { compositor.addTrack(track) }
    let frames = toneFrames(count)
    guard var output = compositor.outputTrack?.makeReader() else { abort("bench", "the compositor has no output track") }
    var now = Instant(nanoseconds: 1_000_000_000)
    return measure("AudioCompositor tick, \(count) tracks: push, read, sum, limit", unit: " trk/s", operationsPerCall: count) {
        for index in tracks.indices { tracks[index].push(frames[index], now: now) }
        compositor.tick(now: now)
        consume(output.nextFrame())
        now = now + .milliseconds(20)
    }
}

/// Per-guest mixes with everyone talking: the whole mix plus N "everyone but X" mixes, each
/// limited (the host's worst case for a room of N).
private func benchMixMinus(guests count: Int) -> Measurement {
    var mixer = MixMinus<Int>()
    let frames = toneFrames(count).enumerated().map { (guest: $0.offset, frame: $0.element) }
    let now = Instant(nanoseconds: 1_000_000_000)
    return measure("MixMinus tick, \(count) talking: 1 + \(count) limited mixes", unit: " trk/s", operationsPerCall: count) {
        consume(mixer.mix(frames, timestamp: now))
    }
}
