import Compositing
import Foundation
import Media
import Testing
import Wire

@Suite struct AudioCompositorTests {
    let clock = ManualClock()

    /// Pushes one 20 ms frame from each source into its track, then ticks.
    func step(_ compositor: AudioCompositor, _ feeds: [(AudioTrack, ToneSource)]) -> [(AudioTrack, ToneSource)] {
        var feeds = feeds
        for index in feeds.indices {
            feeds[index].0.push(feeds[index].1.nextFrame(timestamp: clock.now()), now: clock.now())
        }
        compositor.tick(now: clock.now())
        clock.advance(by: .milliseconds(20))
        return feeds
    }

    @Test func theMixHoldsEveryTrackAndARemovedTrackIsGoneFromTheNextTick() throws {
        let compositor = AudioCompositor()
        compositor.start()
        var output = try #require(compositor.outputTrack).makeReader()
        let tones = [440.0, 660.0, 880.0]
        var feeds = tones.map { (AudioTrack(id: "guest-\(Int($0))"), ToneSource(frequency: $0)) }
        for (track, _) in feeds { compositor.addTrack(track) }
        feeds = step(compositor, feeds)
        let mix = try output.next()
        for tone in tones {
            #expect(abs(toneLevel(tone, in: mix.samples) - 0.25) < 0.02, "\(tone) Hz")
        }
        #expect(toneLevel(550, in: mix.samples) < 0.02)
        compositor.removeTrack(feeds[1].0)
        #expect(compositor.tracks.map(\.id) == ["guest-440", "guest-880"])
        feeds = step(compositor, feeds)
        let after = try output.next()
        #expect(toneLevel(660, in: after.samples) < 0.01)
        #expect(toneLevel(440, in: after.samples) > 0.2 && toneLevel(880, in: after.samples) > 0.2)
    }

    @Test func aTrackAddedBeforeStartIsNeverMixedEvenIfAddedAgain() throws {
        let compositor = AudioCompositor()
        var early = (AudioTrack(id: "early"), ToneSource(frequency: 440))
        compositor.addTrack(early.0)
        compositor.start()
        compositor.addTrack(early.0)
        var late = (AudioTrack(id: "late"), ToneSource(frequency: 880))
        compositor.addTrack(late.0)
        #expect(compositor.tracks.map(\.id) == ["late"])
        var output = try #require(compositor.outputTrack).makeReader()
        let feeds = step(compositor, [early, late])
        (early, late) = (feeds[0], feeds[1])
        let mix = try output.next()
        #expect(toneLevel(440, in: mix.samples) < 0.01)
        #expect(toneLevel(880, in: mix.samples) > 0.2)
        // Not after a restart either.
        compositor.stop()
        compositor.start()
        compositor.addTrack(early.0)
        #expect(compositor.tracks.isEmpty)
    }

    @Test func everyStartMakesANewOutputTrackAndTheOldOneGetsNothingMore() throws {
        let compositor = AudioCompositor()
        compositor.autoOutputSilentBuffer = true
        #expect(compositor.outputTrack == nil && !compositor.isRunning)
        compositor.start()
        let first = try #require(compositor.outputTrack)
        var firstReader = first.makeReader()
        compositor.tick(now: clock.now())
        #expect(firstReader.nextFrame() != nil)
        compositor.stop()
        compositor.start()
        let second = try #require(compositor.outputTrack)
        #expect(second !== first && first.readyState == .ended)
        var secondReader = second.makeReader()
        compositor.tick(now: clock.now())
        #expect(secondReader.nextFrame() != nil)
        #expect(firstReader.nextFrame() == nil)
    }

    @Test func stopDropsEveryTrack() {
        let compositor = AudioCompositor()
        compositor.start()
        let guest = AudioTrack(id: "guest")
        compositor.addTrack(guest)
        #expect(compositor.tracks.count == 1)
        compositor.stop()
        #expect(compositor.tracks.isEmpty && !compositor.isRunning)
        compositor.start()
        #expect(compositor.tracks.isEmpty)
    }

    @Test func withAutoOutputSilentBufferTheOutputGoesOnInSilence() throws {
        let compositor = AudioCompositor()
        compositor.start()
        var reader = try #require(compositor.outputTrack).makeReader()
        compositor.tick(now: clock.now())
        #expect(reader.nextFrame() == nil)  // off: nothing sent while nobody sends
        compositor.autoOutputSilentBuffer = true
        for _ in 0..<3 {
            clock.advance(by: .milliseconds(20))
            compositor.tick(now: clock.now())
        }
        for _ in 0..<3 {
            let frame = try reader.next()
            #expect(frame.samples.count == 960 && frame.samples.allSatisfy { $0 == 0 })
        }
        #expect(reader.nextFrame() == nil)
    }

    @Test func twoFullScaleTonesAreLimitedNotWrappedOrClipped() throws {
        let compositor = AudioCompositor()
        compositor.start()
        var reader = try #require(compositor.outputTrack).makeReader()
        var feeds = [(AudioTrack(id: "a"), ToneSource(frequency: 440, amplitude: 1)),
                     (AudioTrack(id: "b"), ToneSource(frequency: 660, amplitude: 1))]
        for (track, _) in feeds { compositor.addTrack(track) }
        var out: [Int16] = []
        var sum: [Int32] = []
        var references = feeds.map(\.1)
        for _ in 0..<25 {
            let a = references[0].nextFrame(), b = references[1].nextFrame()
            sum += zip(a.samples, b.samples).map { Int32($0) + Int32($1) }
            feeds = step(compositor, feeds)
            out += try reader.next().samples
        }
        #expect(sum.contains { $0 > 60_000 })  // the sum really is over full scale
        // No wrap-around: wherever the sum is loud, the output has its sign.
        #expect(zip(sum, out).allSatisfy { abs($0) < 8_000 || ($0 > 0) == ($1 > 0) })
        // No flat tops: never full scale, so no run of ±32767 anywhere.
        #expect(out.allSatisfy { $0 > -32_767 && $0 < 32_767 })
        let peak = out.map { abs(Int($0)) }.max() ?? 0
        #expect(peak > 28_000)
        // The gain follows the envelope, not each sample, so the peaks keep their shape: never
        // three equal samples at the top, from the first peak on.
        var run = 0
        for index in 1..<out.count where abs(Int(out[index])) > peak - 100 {
            run = out[index] == out[index - 1] ? run + 1 : 0
            #expect(run < 2, "a flat top at sample \(index)")
        }
        // Both tones still there, turned down alike.
        let steady = Array(out.suffix(4_800))
        let (low, high) = (toneLevel(440, in: steady), toneLevel(660, in: steady))
        #expect(low > 0.3 && high > 0.3 && abs(low - high) < 0.05)
    }

    @Test func aSuddenBurstOfManyLoudSourcesStaysUnderTheCeilingFromItsFirstSample() {
        // 40 ms of silence, then 40 sources at full scale with random signs: the attack has no
        // time to build up, and still no sample leaves Int16 or reaches full scale.
        var limiter = SoftLimiter()
        var generator = SystemRandomNumberGenerator()
        var mix = [Int32](repeating: 0, count: 1_920)
        mix += (0..<1_920).map { _ in (0..<40).reduce(Int32(0)) { sum, _ in sum + (Bool.random(using: &generator) ? 32_767 : -32_768) } }
        let out = limiter.process(mix)
        #expect(out.prefix(1_920).allSatisfy { $0 == 0 })
        #expect(out.allSatisfy { abs(Int($0)) <= Int((SoftLimiter.ceiling * 32_768).rounded(.up)) })  // 32113
        #expect(zip(mix, out).allSatisfy { $0 == 0 || ($0 > 0) == ($1 > 0) })
    }

    @Test func quietMixesPassTheLimiterUnchanged() {
        var limiter = SoftLimiter()
        let mix: [Int32] = (0..<960).map { Int32(20_000 * sin(Double($0) / 10)) }
        #expect(limiter.process(mix) == mix.map { Int16($0) })
    }

    @Test func aMutedOrEndedTrackIsNotMixed() throws {
        let compositor = AudioCompositor()
        compositor.start()
        var output = try #require(compositor.outputTrack).makeReader()
        var feeds = [(AudioTrack(id: "a"), ToneSource(frequency: 440)), (AudioTrack(id: "b"), ToneSource(frequency: 880))]
        for (track, _) in feeds { compositor.addTrack(track) }
        feeds[0].0.isMuted = true
        feeds = step(compositor, feeds)
        var mix = try output.next()
        #expect(toneLevel(440, in: mix.samples) < 0.01 && toneLevel(880, in: mix.samples) > 0.2)
        feeds[0].0.isMuted = false
        feeds[1].0.end()
        feeds = step(compositor, feeds)
        mix = try output.next()
        #expect(toneLevel(440, in: mix.samples) > 0.2 && toneLevel(880, in: mix.samples) < 0.01)
        #expect(compositor.tracks.map(\.id) == ["a"])
    }

    @Test func severalCompositorsEachHearTheSameTrack() throws {
        let room = AudioCompositor(id: "room"), recorder = AudioCompositor(id: "recorder")
        room.start()
        recorder.start()
        let guest = AudioTrack(id: "guest")
        room.addTrack(guest)
        recorder.addTrack(guest)
        var readers = [try #require(room.outputTrack).makeReader(), try #require(recorder.outputTrack).makeReader()]
        var tone = ToneSource(frequency: 660)
        for _ in 0..<3 {
            guest.push(tone.nextFrame(), now: clock.now())
            room.tick(now: clock.now())
            recorder.tick(now: clock.now())
            for index in readers.indices {
                let frame = try readers[index].next()
                #expect(toneLevel(660, in: frame.samples) > 0.2)
            }
        }
    }

    @Test func aReaderThatFallsBehindLosesTheOldestAudio() throws {
        let track = AudioTrack(id: "guest")
        var reader = track.makeReader()
        for index in 0..<20 {  // 400 ms, nobody reading
            track.push(AudioFrame(samples: [Int16](repeating: Int16(index), count: 960)), now: clock.now())
        }
        #expect(reader.availableSamples == AudioTrack.bufferedSamplesPerChannel)
        let oldest = try reader.next()
        #expect(reader.droppedSamples == 12 * 960)
        #expect(oldest.samples.allSatisfy { $0 == 12 })  // frames 12…19 were kept (160 ms)
        #expect(reader.availableSamples == 7 * 960)
    }

    @Test func theCompositorNeverKeepsATrackAlive() throws {
        let compositor = AudioCompositor()
        compositor.start()
        weak var freed: AudioTrack?
        do {
            let guest = AudioTrack(id: "guest")
            freed = guest
            compositor.addTrack(guest)
            var tone = ToneSource(frequency: 440)
            guest.push(tone.nextFrame(), now: clock.now())
            compositor.tick(now: clock.now())
            #expect(compositor.tracks.count == 1)
        }
        #expect(freed == nil)
        compositor.tick(now: clock.now())
        #expect(compositor.tracks.isEmpty)
        // Nor does the list of tracks refused while stopped.
        let stopped = AudioCompositor()
        weak var refused: AudioTrack?
        do {
            let early = AudioTrack(id: "early")
            refused = early
            stopped.addTrack(early)
        }
        #expect(refused == nil)
    }
}

@Suite struct MixMinusTests {
    @Test func eachGuestHearsEveryoneButItself() {
        var mixer = MixMinus<String>()
        var tones = ["alice": ToneSource(frequency: 440), "bob": ToneSource(frequency: 660), "carol": ToneSource(frequency: 880)]
        let frames = ["alice", "bob", "carol"].map { (guest: $0, frame: tones[$0]!.nextFrame()) }
        let output = mixer.mix(frames, timestamp: Instant(nanoseconds: 0))
        let forBob = output.mix(for: "bob").samples
        #expect(toneLevel(660, in: forBob) < 0.01)
        #expect(toneLevel(440, in: forBob) > 0.2 && toneLevel(880, in: forBob) > 0.2)
        let forAlice = output.mix(for: "alice").samples
        #expect(toneLevel(440, in: forAlice) < 0.01 && toneLevel(660, in: forAlice) > 0.2)
        // A guest who sent nothing hears everyone, from the shared mix.
        let forDave = output.mix(for: "dave").samples
        #expect(forDave == output.everyone.samples)
        #expect([440.0, 660, 880].allSatisfy { toneLevel($0, in: forDave) > 0.2 })
    }

    @Test func theLimiterAppliesAfterSubtraction() {
        // Bob is very loud; what Alice says must reach Bob at its own level, not turned down
        // because the whole mix (with Bob in it) was over full scale.
        var mixer = MixMinus<String>()
        var alice = ToneSource(frequency: 440, amplitude: 0.2), bob = ToneSource(frequency: 660, amplitude: 0.95)
        var output = mixer.mix([("alice", alice.nextFrame()), ("bob", bob.nextFrame())], timestamp: Instant(nanoseconds: 0))
        for _ in 0..<4 {
            output = mixer.mix([("alice", alice.nextFrame()), ("bob", bob.nextFrame())], timestamp: Instant(nanoseconds: 0))
        }
        #expect(abs(toneLevel(440, in: output.mix(for: "bob").samples) - 0.2) < 0.005)
        #expect(toneLevel(440, in: output.everyone.samples) < 0.19)  // the whole mix was limited
    }
}
