import Foundation
import Compositing
import Media
import RTP
import Testing
import Wire
@testable import Conference
import MediaTesting
import WireTesting

/// `RoomAudioMixer` in memory, on a manual timeline: members' receivers are fed real Opus
/// packets of their tones, and what each member is sent is decoded as its client would.
@Suite struct RoomAudioMixerTests {
    /// A member: the receiver the mixer reads, the encoder of its tone, and the decoder of what
    /// it is sent.
    final class Member {
        let name: String
        let receiver: AudioReceiver
        let encoder: OpusEncoder
        let decoder: OpusDecoder
        var heard: [Int16] = []
        /// Whether its packets carry their RFC 6464 level, as browsers send them.
        var sendsLevels = false
        init(_ name: String) throws {
            self.name = name
            receiver = try AudioReceiver(channels: 1)
            encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
            decoder = try OpusDecoder(channels: 1)
        }
    }

    /// Runs ticks `range` at 20 ms each from a fixed origin: speaking members' packets (their
    /// `roomTones`) arrive just before their tick, then the mixer ticks and each member decodes
    /// its packet. `keep` says from which tick on what members hear is kept.
    private func run(_ mixer: RoomAudioMixer<String>, _ members: [String: Member], speaking: Set<String>, ticks range: Range<Int>,
                     keep: Int = 0, check: (Int) -> Void = { _ in }) throws {
        let voices = Dictionary(uniqueKeysWithValues: speaking.compactMap { name in roomTones[name].map { (name, (hz: $0, amplitude: 8000.0)) } })
        try run(mixer, members, voices: voices, ticks: range, keep: keep, check: check)
    }

    private func room(_ names: [String], levels: Bool = false) throws -> (RoomAudioMixer<String>, [String: Member]) {
        let mixer = RoomAudioMixer<String>()
        var members: [String: Member] = [:]
        for name in names {
            let member = try Member(name)
            member.sendsLevels = levels
            members[name] = member
            mixer.add(name, receiver: member.receiver)
        }
        return (mixer, members)
    }

    /// Like `run(speaking:)`, but each speaking member sends its own tone at its own amplitude.
    /// `network`, when given, loses 3 % of the packets (the receivers conceal them).
    private func run(_ mixer: RoomAudioMixer<String>, _ members: [String: Member], voices: [String: (hz: Double, amplitude: Double)],
                     ticks range: Range<Int>, keep: Int = 0, network: UnsafeMutablePointer<SplitMix64>? = nil, check: (Int) -> Void = { _ in }) throws {
        for tick in range {
            let now = Instant(nanoseconds: 1_000_000_000) + .milliseconds(20 * tick)
            for (name, voice) in voices.sorted(by: { $0.key < $1.key }) {
                guard let member = members[name] else { continue }
                let frame = toneFrame(voice.hz, frame: tick, amplitude: voice.amplitude)
                let packet = try member.encoder.encode(frame)
                if let network, Double.random(in: 0..<1, using: &network.pointee) < 0.03 { continue }
                member.receiver.receive(payload: packet, sequenceNumber: UInt16(truncatingIfNeeded: tick),
                                        timestamp: UInt32(truncatingIfNeeded: tick * 960), arrival: now,
                                        level: member.sendsLevels ? AudioLevel(of: frame) : nil)
            }
            let packets = mixer.packets(now: now)
            for (name, member) in members {
                guard let packet = packets[name] else { continue }
                let frame = try member.decoder.decode(packet)
                if tick >= keep { member.heard += frame.samples }
            }
            check(tick)
        }
    }

    /// Five talk at once, each at its own loudness: the mixes hold the three loudest (K = 3), a
    /// listener hears those and not the two quietest, the loudest hears the next two and not
    /// itself, and the room runs K + 1 encoders.
    /// The same whether the voices are chosen by the levels their senders give (RFC 6464), or
    /// by their decoded audio; with levels, the two left out are not decoded.
    @Test(arguments: [false, true]) func aMixHoldsTheThreeLoudestVoices(levels: Bool) throws {
        let (mixer, members) = try room(["v1", "v2", "v3", "v4", "v5", "listener"], levels: levels)
        let voices: [String: (hz: Double, amplitude: Double)] = ["v1": (300, 12_000), "v2": (500, 9_000), "v3": (700, 6_000),
                                                                 "v4": (900, 2_000), "v5": (1_100, 1_500)]
        try run(mixer, members, voices: voices, ticks: 0..<40, keep: 15)
        #expect(Set(mixer.voices) == ["v1", "v2", "v3"])
        #expect(mixer.soundingLastTick.count == 5)
        #expect(mixer.encodersRunning == 4, "the everyone mix and one without each voice")
        let listener = try #require(members["listener"]), v1 = try #require(members["v1"])
        let power = { (heard: [Int16], name: String) in tonePower(heard, frequency: voices[name]?.hz ?? 0) }
        for loud in ["v1", "v2", "v3"] {
            for quiet in ["v4", "v5"] {
                #expect(power(listener.heard, loud) > 30 * power(listener.heard, quiet), "the listener hears \(loud), not \(quiet)")
            }
        }
        #expect(power(v1.heard, "v2") > 30 * power(v1.heard, "v1"), "v1 does not hear itself")
        #expect(power(v1.heard, "v3") > 30 * power(v1.heard, "v4"), "v1 hears the chosen voices only")
        let skipped = { (name: String) in members[name]?.receiver.unheardPacketsSkipped ?? -1 }
        for chosen in ["v1", "v2", "v3"] { #expect(skipped(chosen) == 0, "\(chosen) is heard: decoded") }
        for left in ["v4", "v5"] {
            #expect(skipped(left) >= (levels ? 30 : 0) && skipped(left) <= (levels ? 40 : 0), "\(left) is heard by nobody: decoded only without levels")
        }
    }

    /// Hysteresis: a fourth voice a little louder than the quietest chosen one stays out; one
    /// clearly louder (over the 6 dB margin) takes its place.
    @Test(arguments: [false, true]) func aVoiceTakesAPlaceOnlyWhenClearlyLouder(levels: Bool) throws {
        let (mixer, members) = try room(["a", "b", "c", "d", "listener"], levels: levels)
        var voices: [String: (hz: Double, amplitude: Double)] = ["a": (300, 8_000), "b": (500, 8_000), "c": (700, 6_000)]
        try run(mixer, members, voices: voices, ticks: 0..<20)
        #expect(Set(mixer.voices) == ["a", "b", "c"])
        voices["d"] = (900, 7_000)   // +1.3 dB over c
        try run(mixer, members, voices: voices, ticks: 20..<45)
        #expect(Set(mixer.voices) == ["a", "b", "c"], "a small lead does not move a voice out")
        voices["d"] = (900, 16_000)  // +8.5 dB over c
        try run(mixer, members, voices: voices, ticks: 45..<70)
        #expect(Set(mixer.voices) == ["a", "b", "d"], "the clearly louder voice takes the quietest one's place")
        // Once in, d is decoded and heard (with levels, from the packet after it was chosen).
        let listener = try #require(members["listener"])
        listener.heard = []
        try run(mixer, members, voices: voices, ticks: 70..<80)
        #expect(tonePower(listener.heard, frequency: 900) > 30 * tonePower(listener.heard, frequency: 700), "d is heard, c is not")
        // c falls silent; it keeps nothing, and with three left sounding everyone is in.
        voices["c"] = nil
        try run(mixer, members, voices: voices, ticks: 80..<120)
        #expect(Set(mixer.voices) == ["a", "b", "d"])
    }

    /// A chosen voice's pauses between words keep its place against an equally loud one outside:
    /// the decoder's fade at the end of each word (a few frames 10 to 30 dB down) does not make
    /// it the quietest by the margin (it did, and voices among many equal ones took turns).
    @Test(arguments: [false, true]) func aVoiceFadingAtTheEndOfAWordKeepsItsPlace(levels: Bool) throws {
        let (mixer, members) = try room(["a", "b", "c", "d", "listener"], levels: levels)
        var voices: [String: (hz: Double, amplitude: Double)] = ["a": (300, 8_000), "b": (500, 8_000), "c": (700, 8_000)]
        try run(mixer, members, voices: voices, ticks: 0..<20)
        voices["d"] = (900, 8_000)
        try run(mixer, members, voices: voices, ticks: 20..<40)
        #expect(Set(mixer.voices) == ["a", "b", "c"])
        // Words of 900 ms with 100 ms pauses, each chosen voice pausing at its own time.
        for word in 0..<3 {
            for (index, name) in ["a", "b", "c"].enumerated() {
                let start = 40 + word * 50 + index * 15
                var pausing = voices
                pausing[name]?.amplitude = 0  // its sender sends silence, as the load's tones do
                try run(mixer, members, voices: pausing, ticks: start..<start + 5)
                try run(mixer, members, voices: voices, ticks: start + 5..<start + 15)
                #expect(Set(mixer.voices) == ["a", "b", "c"], "word \(word): \(name) paused and kept its place")
            }
            try run(mixer, members, voices: voices, ticks: 40 + word * 50 + 45..<40 + word * 50 + 50)
        }
    }

    /// With no bound (0), every sounding voice is mixed.
    @Test func maxVoicesZeroMixesEveryone() throws {
        let mixer = RoomAudioMixer<String>(configuration: .init(maxVoices: 0))
        var members: [String: Member] = [:]
        for name in ["v1", "v2", "v3", "v4", "listener"] {
            let member = try Member(name)
            members[name] = member
            mixer.add(name, receiver: member.receiver)
        }
        let voices: [String: (hz: Double, amplitude: Double)] = ["v1": (300, 8_000), "v2": (500, 8_000), "v3": (700, 8_000), "v4": (900, 2_000)]
        try run(mixer, members, voices: voices, ticks: 0..<30, keep: 10)
        #expect(Set(mixer.voices) == ["v1", "v2", "v3", "v4"])
        let listener = try #require(members["listener"])
        #expect(tonePower(listener.heard, frequency: 900) > 0.01 * tonePower(listener.heard, frequency: 300))
    }

    @Test func eachMemberHearsTheOtherTwoTonesAndNotItsOwn() throws {
        let (mixer, members) = try room(["a", "b", "c"])
        try run(mixer, members, speaking: ["a", "b", "c"], ticks: 0..<35, keep: 10)
        for (name, member) in members {
            let own = try #require(roomTones[name])
            let ownPower = tonePower(member.heard, frequency: own)
            for (other, frequency) in roomTones where other != name {
                let power = tonePower(member.heard, frequency: frequency)
                #expect(ownPower * 30 < power, "\(name) hears its own \(own) Hz at \(ownPower), \(other)'s \(frequency) Hz at \(power)")
            }
        }
        #expect(mixer.soundingLastTick == ["a", "b", "c"])
        #expect(mixer.mixesLastTick == 3, "three talkers: three mixes, each without one of them")
    }

    @Test func silentListenersShareOneEncoderAndTheSpeakerHasItsOwn() throws {
        let (mixer, members) = try room(["a", "b", "c"])
        var encoders: [Int] = []
        try run(mixer, members, speaking: ["a"], ticks: 0..<30, keep: 10) { tick in
            if tick >= 5 { encoders.append(mixer.encodersRunning) }
        }
        #expect(encoders.allSatisfy { $0 == 2 }, "encoders per tick: \(encoders)")
        #expect(mixer.mixesLastTick == 2)
        // b and c heard the same bytes (one encode), a heard silence.
        #expect(members["b"]?.heard == members["c"]?.heard)
        let a = try #require(members["a"]), b = try #require(members["b"])
        #expect(tonePower(b.heard, frequency: 440) > 1000 * max(1, tonePower(a.heard, frequency: 440)))
    }

    @Test func notHearingBobChangesOnlyThatMembersMix() throws {
        let (mixer, members) = try room(["a", "b", "c"])
        mixer.setNotHeard(["b"], by: "a")
        try run(mixer, members, speaking: ["a", "b", "c"], ticks: 0..<35, keep: 10)
        let a = try #require(members["a"]), c = try #require(members["c"])
        #expect(tonePower(a.heard, frequency: 660) * 30 < tonePower(a.heard, frequency: 880), "a no longer hears b")
        #expect(tonePower(a.heard, frequency: 880) > 30 * tonePower(a.heard, frequency: 440), "a still hears c")
        #expect(tonePower(c.heard, frequency: 660) > 30 * tonePower(c.heard, frequency: 880), "c still hears b")
        #expect(tonePower(c.heard, frequency: 440) > 30 * tonePower(c.heard, frequency: 880), "c still hears a")
    }

    @Test func aMutedMemberIsInNoMix() throws {
        let (mixer, members) = try room(["a", "b", "c"])
        mixer.setMuted("c", true)
        try run(mixer, members, speaking: ["a", "b", "c"], ticks: 0..<35, keep: 10)
        for name in ["a", "b"] {
            let member = try #require(members[name])
            let other = name == "a" ? 660.0 : 440.0
            #expect(tonePower(member.heard, frequency: 880) * 30 < tonePower(member.heard, frequency: other), "\(name) hears muted c")
        }
        #expect(!mixer.soundingLastTick.contains("c"))
    }

    @Test func levelsTellTheSpeakerFromTheSilent() throws {
        let (mixer, members) = try room(["a", "b"])
        try run(mixer, members, speaking: ["a"], ticks: 0..<15)
        let a = try #require(mixer.levelsLastTick["a"]), b = try #require(mixer.levelsLastTick["b"])
        #expect(a > -20 && a < 0, "a 8000-amplitude tone is about -15 dBFS: \(a)")
        #expect(b < a - 40)
        var detector = ActiveSpeakerDetector<String>()
        detector.update(participant: "a", level: a, now: .milliseconds(0))
        detector.update(participant: "b", level: b, now: .milliseconds(0))
        #expect(detector.evaluate(now: .milliseconds(0)) == "a")
    }

    @Test func aRemovedMemberLeavesEveryMixAtTheNextTick() throws {
        let (mixer, members) = try room(["a", "b", "c"])
        try run(mixer, members, speaking: ["a", "b", "c"], ticks: 0..<20)
        mixer.remove("c")
        var packets: [String: [UInt8]] = [:]
        let now = Instant(nanoseconds: 1_000_000_000) + .milliseconds(20 * 20)
        for name in ["a", "b"] {
            guard let member = members[name], let frequency = roomTones[name] else { continue }
            let packet = try member.encoder.encode(toneFrame(frequency, frame: 20))
            member.receiver.receive(payload: packet, sequenceNumber: 20, timestamp: 20 * 960, arrival: now)
        }
        packets = mixer.packets(now: now)
        #expect(Set(packets.keys) == ["a", "b"], "the leaver is sent nothing")
        #expect(mixer.soundingLastTick == ["a", "b"], "the leaver's voice is in no mix")
        // And over the following ticks, what a and b hear has no 880 Hz.
        let remaining = members.filter { $0.key != "c" }
        for member in remaining.values { member.heard = [] }
        try run(mixer, remaining, speaking: ["a", "b"], ticks: 21..<45, keep: 26)
        for (name, member) in remaining {
            let other = name == "a" ? 660.0 : 440.0
            #expect(tonePower(member.heard, frequency: 880) * 30 < tonePower(member.heard, frequency: other),
                    "\(name) still hears the leaver")
        }
        // c's encoders (the mix without c, and the mixes with c in them) are dropped after 2 s.
        try run(mixer, remaining, speaking: ["a", "b"], ticks: 45..<160)
        #expect(mixer.encodersRunning == 2, "after 2 s only the mixes without a and without b are left")
    }

    @Test func theAudioSenderNumbersPacketsAndMarksTheFirst() throws {
        var sender = AudioRTPSender(ssrc: SSRC(rawValue: 42), payloadType: PayloadType(rawValue: 111), sequenceNumber: 65535,
                                    timestamp: UInt32.max - 100)
        let first = try RTPPacket.parse(try sender.packet([1, 2, 3]).serialized())
        let second = try RTPPacket.parse(try sender.packet([4]).serialized())
        #expect(first.marker && !second.marker)
        #expect(first.ssrc.rawValue == 42 && first.payloadType.rawValue == 111)
        #expect(second.sequenceNumber == 0, "wraps")
        #expect(second.timestamp == first.timestamp &+ 960)
        #expect(Array(second.payload) == [4])
    }

    /// A listener that reports loss gets its mix with in-band FEC (each packet carries the frame
    /// before it, SILK LBRR); one that reports none gets no FEC, which would only cost bits. The
    /// tone rises and falls five times a second like syllables: SILK adds LBRR only to frames
    /// its voice activity detector calls speech, and a steady tone stops being that within a second.
    @Test func aListenerReportingLossGetsInBandFECAndOneReportingNoneDoesNot() throws {
        func shareWithFEC(lossPercent: Int) throws -> Double {
            let (mixer, members) = try room(["a", "b"])
            mixer.setReportedLoss("b", percent: lossPercent)
            var sent: [[UInt8]] = []
            for tick in 0..<60 {
                let now = Instant(nanoseconds: 1_000_000_000) + .milliseconds(20 * tick)
                guard let a = members["a"], let frequency = roomTones["a"] else { continue }
                let syllable = 0.15 + 0.85 * abs(sin(Double.pi * Double(tick) / 10))
                let frame = AudioFrame(channels: 1, samples: toneFrame(frequency, frame: tick).samples.map { Int16(Double($0) * syllable) })
                a.receiver.receive(payload: try a.encoder.encode(frame), sequenceNumber: UInt16(tick),
                                   timestamp: UInt32(tick * 960), arrival: now)
                if let packet = mixer.packets(now: now)["b"] { sent.append(packet) }
            }
            let judged = sent.suffix(30)
            return Double(judged.filter(OpusDecoder.hasFEC).count) / Double(max(1, judged.count))
        }
        let withLoss = try shareWithFEC(lossPercent: 20), without = try shareWithFEC(lossPercent: 0)
        #expect(withLoss > 0.6, "with 20 % loss reported, \(withLoss) of the packets carry FEC")
        #expect(without == 0, "with none reported, \(without) do")
    }
}

extension RoomAudioMixerTests {
    /// Fifty voices of one loudness, each pausing 100 ms every second at its own phase (as
    /// `tessera load --speakers 50` sends them), 3 % of their packets lost: the first three to
    /// sound keep their places all through, whether compared by their senders' levels or by their
    /// decoded audio (a concealed frame of a tone can peak 5 dB above the tone).
    @Test(arguments: [false, true]) func fiftyEqualVoicesDoNotFlicker(levels: Bool) throws {
        let names = (0..<50).map { "s\($0)" }
        let (mixer, members) = try room(names + ["listener"], levels: levels)
        var chosen: [Set<String>] = []
        var network = SplitMix64(seed: 50)
        for tick in 0..<150 {
            var voices: [String: (hz: Double, amplitude: Double)] = [:]
            for index in 0..<50 where tick >= index / 2 {
                voices[names[index]] = (400 + 150 * Double(index), (tick + 5 * index) % 50 >= 5 ? 8000 : 0)
            }
            try withUnsafeMutablePointer(to: &network) { try run(mixer, members, voices: voices, ticks: tick..<(tick + 1), network: $0) }
            if chosen.last != Set(mixer.voices) { chosen.append(Set(mixer.voices)) }
        }
        #expect(chosen.last?.count == 3)
        #expect(chosen.count <= 3, "the voices changed \(chosen.count - 1) times after the first: \(chosen.map { $0.sorted() })")
    }
}

/// The mixes' complexity under the host's load.
@Suite struct AudioEncoderLoadRuleTests {
    private func at(_ seconds: Int) -> Instant { Instant(nanoseconds: 1_000_000_000) + .seconds(seconds) }

    @Test func aLoadedLoopStepsDownAtOnceAndACalmOneBackSlowly() {
        var rule = AudioEncoderLoadRule(configured: 5)
        #expect(rule.update(busy: 0.9, now: at(1)) == 3)
        #expect(rule.update(busy: 0.95, now: at(2)) == 1)
        #expect(rule.update(busy: 0.85, now: at(3)) == 0)
        #expect(rule.update(busy: 0.9, now: at(4)) == 0, "no lower than 0")
        #expect(rule.update(busy: 0.6, now: at(5)) == 0, "between the bounds: held")
        for second in 6..<11 { #expect(rule.update(busy: 0.3, now: at(second)) == 0, "calm for less than 5 s") }
        #expect(rule.update(busy: 0.3, now: at(11)) == 1)
        #expect(rule.update(busy: 0.7, now: at(12)) == 1, "a busier second restarts the calm")
        for second in 13..<18 { rule.update(busy: 0.2, now: at(second)) }
        #expect(rule.update(busy: 0.2, now: at(18)) == 2)
        for second in 19..<60 { rule.update(busy: 0.1, now: at(second)) }
        #expect(rule.complexity == 5, "no higher than configured")
    }

    /// The host's load and the room's encoder step each bound it; the lower holds, and reaches
    /// every running encoder at its next frame.
    @Test func theMixerAppliesTheLowerBoundToEveryEncoder() throws {
        let mixer = RoomAudioMixer<String>()
        let speaker = try AudioReceiver(channels: 1), encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        mixer.add("speaker", receiver: speaker)
        mixer.add("listener", receiver: nil)
        var tick = 0
        func run(_ ticks: Int) throws {
            for _ in 0..<ticks {
                let now = Instant(nanoseconds: 1_000_000_000) + .milliseconds(20 * tick)
                speaker.receive(payload: try encoder.encode(toneFrame(440, frame: tick, amplitude: 8000)), sequenceNumber: UInt16(tick),
                                timestamp: UInt32(tick * 960), arrival: now)
                mixer.tick(now: now)
                tick += 1
            }
        }
        try run(10)
        #expect(mixer.runningEncoderComplexities == [5, 5])
        mixer.loadComplexity = 1
        try run(1)
        #expect(mixer.runningEncoderComplexities == [1, 1])
        mixer.setComplexity(3)
        #expect(mixer.complexity == 1, "the load's bound is the lower")
        mixer.loadComplexity = 42
        try run(1)
        #expect(mixer.complexity == 3 && mixer.runningEncoderComplexities == [3, 3], "now the step's")
    }
}

extension RoomAudioMixer {
    /// Ticks, and gives each listening member's packet of that tick.
    func packets(now: Instant) -> [Member: [UInt8]] {
        tick(now: now)
        var packets: [Member: [UInt8]] = [:]
        forEachPacket { packets[$0] = $1 }
        return packets
    }
}
