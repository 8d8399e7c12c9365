import Foundation
import Media
import Testing
import WireTesting

@Suite struct TimeStretchTests {
    private func sine(_ frequency: Double, count: Int, amplitude: Double = 8000) -> [Int16] {
        (0..<count).map { Int16(amplitude * sin(2 * Double.pi * frequency * Double($0) / 48_000)) }
    }

    /// A voice-like periodic sound loses whole periods, so what is left joins seamlessly.
    @Test func aPeriodicSoundLosesWholePeriods() {
        var pcm = sine(200, count: 1920)  // a 240-sample period
        let cut = TimeStretch.shorten(&pcm, channels: 1)
        #expect(cut > 0 && cut % 240 <= 2 || cut % 240 >= 238, "cut \(cut)")
        #expect(pcm.count == 1920 - cut)
        // Sample by sample, the result is the sine again (within rounding).
        let reference = sine(200, count: pcm.count)
        #expect(zip(pcm, reference).allSatisfy { abs(Int($0) - Int($1)) < 300 })
    }

    @Test func quietAudioLosesTheLongestCut() {
        var pcm = sine(300, count: 1920, amplitude: 20)
        #expect(TimeStretch.shorten(&pcm, channels: 1) == TimeStretch.longestCut)
    }

    /// Silence just before a sound starts is not cut: the sound would start early with a fade.
    @Test func aSoundStartingWithinTheCutIsNotPulledEarlier() {
        var pcm = [Int16](repeating: 0, count: 500) + sine(300, count: 1420)
        let before = pcm
        #expect(TimeStretch.shorten(&pcm, channels: 1) == 0)
        #expect(pcm == before)
    }

    /// Loud noise repeats nowhere: cutting would be heard, so nothing is cut.
    @Test func loudNoiseIsLeftAlone() {
        var generator = SeededGenerator(seed: 3)
        var pcm = (0..<1920).map { _ in Int16.random(in: -8000...8000, using: &generator) }
        let before = pcm
        #expect(TimeStretch.shorten(&pcm, channels: 1) == 0)
        #expect(pcm == before)
    }

    @Test func stereoKeepsItsChannelsApartAndTooLittleAudioIsLeftAlone() {
        let left = sine(200, count: 1920), right = sine(200, count: 1920, amplitude: 2000)
        var pcm = zip(left, right).flatMap { [$0, $1] }
        let cut = TimeStretch.shorten(&pcm, channels: 2)
        #expect(cut > 0 && pcm.count == (1920 - cut) * 2)
        let rightAfter = stride(from: 1, to: pcm.count, by: 2).map { pcm[$0] }
        #expect(rightAfter.allSatisfy { abs($0) <= 2001 })
        var short = sine(200, count: TimeStretch.longestCut + TimeStretch.window - 1)
        #expect(TimeStretch.shorten(&short, channels: 1) == 0)
    }

    /// Slower: a periodic sound gains whole periods and stays the same sine, sample by sample;
    /// quiet gains quiet; noise that repeats nowhere is left alone.
    @Test func lengtheningRepeatsWholePeriodsOrAddsQuiet() {
        var pcm = sine(200, count: 1920)
        let added = TimeStretch.lengthen(&pcm, channels: 1, atMost: 500)
        #expect(added > 0 && added <= 500 && (added % 240 <= 2 || added % 240 >= 238), "whole periods: \(added)")
        #expect(pcm.count == 1920 + added)
        let reference = sine(200, count: pcm.count)
        #expect(zip(pcm, reference).allSatisfy { abs(Int($0) - Int($1)) < 300 })

        var quiet = sine(300, count: 1920, amplitude: 20)
        #expect(TimeStretch.lengthen(&quiet, channels: 1, atMost: 300) == 300 && quiet.count == 2220)

        var generator = SeededGenerator(seed: 5)
        var noise = (0..<1920).map { _ in Int16.random(in: -8000...8000, using: &generator) }
        let before = noise
        #expect(TimeStretch.lengthen(&noise, channels: 1) == 0 && noise == before)
    }
}
