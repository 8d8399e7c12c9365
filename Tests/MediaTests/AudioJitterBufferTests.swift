import Foundation
import Media
import RTP
import Testing
import Wire
import WireTesting

/// A packet on a simulated network: which one, and when it arrives (ms).
struct Arrival {
    var index: Int
    var at: Int
}

/// A stand-in Opus payload naming its packet: a SILK TOC (config 9, 20 ms wideband) and a first
/// byte with the LBRR flag set or not, then the index.
func payload(_ index: Int, fec: Bool = false) -> [UInt8] {
    [0x48, fec ? 0x40 : 0x00, UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)]
}

func packetIndex(_ output: AudioJitterBuffer.Output) -> Int? {
    guard case .packet(let bytes) = output, bytes.count == 4 else { return nil }
    return Int(bytes[2]) << 8 | Int(bytes[3])
}

/// Runs `arrivals` through a buffer with ticks every 20 ms from `firstTick` for `ticks` ticks.
func play(_ arrivals: [Arrival], buffer: inout AudioJitterBuffer, firstSequence: UInt16 = 1000, fec: Bool = false,
          firstTick: Int = 10, ticks: Int) -> [AudioJitterBuffer.Output] {
    let sorted = arrivals.sorted { $0.at < $1.at }
    var next = 0
    var outputs: [AudioJitterBuffer.Output] = []
    for tick in 0..<ticks {
        let now = firstTick + tick * 20
        while next < sorted.count && sorted[next].at <= now {
            let packet = sorted[next]
            buffer.insert(payload: payload(packet.index, fec: fec), sequenceNumber: firstSequence &+ UInt16(truncatingIfNeeded: packet.index),
                          timestamp: 5000 &+ UInt32(packet.index * 960), arrival: .milliseconds(UInt64(packet.at)))
            next += 1
        }
        outputs.append(buffer.pop(now: .milliseconds(UInt64(now))))
    }
    return outputs
}

@Suite struct AudioJitterBufferTests {
    @Test func anInOrderStreamPlaysEveryPacketOnce() {
        var buffer = AudioJitterBuffer()
        let outputs = play((0..<100).map { Arrival(index: $0, at: 3 + 20 * $0) }, buffer: &buffer, ticks: 100)
        #expect(outputs.compactMap(packetIndex) == Array(0..<100))
        #expect(buffer.statistics.played == 100 && buffer.statistics.concealed == 0 && buffer.statistics.late == 0)
        #expect(buffer.statistics.targetDepth == .milliseconds(20))
    }

    @Test func beforeTheFirstPacketThereIsSilence() {
        var buffer = AudioJitterBuffer()
        #expect(buffer.pop(now: .milliseconds(0)) == .silence)
        #expect(buffer.pop(now: .milliseconds(20)) == .silence)
        #expect(buffer.statistics.silent == 2)
    }

    @Test func reorderingWithinTheDepthIsRepaired() {
        var buffer = AudioJitterBuffer(configuration: .init(minimumDelay: .milliseconds(60)))
        // Each even packet comes 25 ms late, after its odd successor.
        let arrivals = (0..<100).map { Arrival(index: $0, at: 3 + 20 * $0 + ($0 % 2 == 0 ? 25 : 0)) }
        let outputs = play(arrivals, buffer: &buffer, ticks: 105)
        #expect(outputs.compactMap(packetIndex) == Array(0..<100))
        #expect(buffer.statistics.late == 0)
    }

    @Test func aLostPacketIsConcealedInItsSlot() {
        var buffer = AudioJitterBuffer(configuration: .init(minimumDelay: .milliseconds(40)))
        let outputs = play((0..<30).filter { $0 != 10 }.map { Arrival(index: $0, at: 3 + 20 * $0) }, buffer: &buffer, ticks: 31)
        let slot = outputs.firstIndex { packetIndex($0) == 9 }
        #expect(slot.map { outputs[$0 + 1] } == .conceal(samples: 960))
        #expect(slot.map { packetIndex(outputs[$0 + 2]) } == 11)
        #expect(buffer.statistics.concealed == 1 && buffer.statistics.played == 29)
    }

    /// On a calm network a lost packet is first an underrun (its successor is not there yet):
    /// that concealment stands for the loss, so the stream plays on at the same delay.
    @Test func aLossSeenFirstAsAnUnderrunCostsNoDelay() {
        var buffer = AudioJitterBuffer()
        let outputs = play((0..<30).filter { $0 != 10 }.map { Arrival(index: $0, at: 3 + 20 * $0) }, buffer: &buffer, ticks: 30)
        let slot = outputs.firstIndex { packetIndex($0) == 9 }
        #expect(slot.map { outputs[$0 + 1] } == .conceal(samples: 960))
        #expect(slot.map { packetIndex(outputs[$0 + 2]) } == 11)
        #expect(buffer.statistics.concealed == 1 && buffer.statistics.played == 29)
        #expect(outputs.firstIndex { packetIndex($0) == 29 } == outputs.firstIndex { packetIndex($0) == 0 }.map { $0 + 29 })
    }

    @Test func anUnderrunKeepsTheSlotSoALatePacketStillPlays() {
        var buffer = AudioJitterBuffer()
        let arrivals = (0..<30).map { Arrival(index: $0, at: 3 + 20 * $0 + ($0 == 10 ? 15 : 0)) }
        let outputs = play(arrivals, buffer: &buffer, ticks: 31)
        #expect(outputs.compactMap(packetIndex) == Array(0..<30))
        #expect(buffer.statistics.concealed == 1 && buffer.statistics.late == 0)
    }

    @Test func aLostPacketWhoseSuccessorCarriesFECIsRecoveredFromIt() {
        var buffer = AudioJitterBuffer(configuration: .init(minimumDelay: .milliseconds(40)))
        let outputs = play((0..<30).filter { $0 != 10 }.map { Arrival(index: $0, at: 3 + 20 * $0) }, buffer: &buffer, fec: true, ticks: 30)
        let slot = outputs.firstIndex { $0 == .packet(payload(9, fec: true)) }
        #expect(slot.map { outputs[$0 + 1] } == .recoverWithFEC(nextPacket: payload(11, fec: true), samples: 960))
        #expect(slot.map { outputs[$0 + 2] } == .packet(payload(11, fec: true)))
        #expect(buffer.statistics.recoveredWithFEC == 1 && buffer.statistics.concealed == 0)
    }

    @Test func jitterRaisesTheTargetAndTheDelayFollows() {
        var steady = AudioJitterBuffer()
        _ = play((0..<200).map { Arrival(index: $0, at: 3 + 20 * $0) }, buffer: &steady, ticks: 200)
        var jittery = AudioJitterBuffer()
        var generator = SeededGenerator(seed: 42)
        let arrivals = (0..<200).map { Arrival(index: $0, at: 3 + 20 * $0 + Int.random(in: 0...60, using: &generator)) }
        var depths: [Duration] = []
        for tick in 0..<200 {
            let now = 10 + 20 * tick
            for arrival in arrivals where arrival.at <= now && arrival.at > now - 20 {
                jittery.insert(payload: payload(arrival.index), sequenceNumber: UInt16(arrival.index), timestamp: UInt32(arrival.index * 960),
                               arrival: .milliseconds(UInt64(arrival.at)))
            }
            _ = jittery.pop(now: .milliseconds(UInt64(now)))
            depths.append(jittery.statistics.currentDepth)
        }
        #expect(steady.statistics.targetDepth == .milliseconds(20))
        #expect(jittery.statistics.jitter > .milliseconds(10), "jitter \(jittery.statistics.jitter)")
        #expect(jittery.statistics.targetDepth > .milliseconds(40), "target \(jittery.statistics.targetDepth)")
        // Underruns grew the delay: later in the run it holds more than a frame, and losses to
        // lateness stop.
        let lateDepth = depths.suffix(50).reduce(Duration.zero, +) / 50
        #expect(lateDepth >= .milliseconds(20), "mean depth \(lateDepth)")
        #expect(jittery.statistics.played > 180, "\(jittery.statistics)")
    }

    @Test func aBurstBeyondTheMaximumDepthIsBounded() {
        var buffer = AudioJitterBuffer()
        // 10 packets in time, then nothing for a second, then 50 at once.
        var arrivals = (0..<10).map { Arrival(index: $0, at: 3 + 20 * $0) }
        arrivals += (10..<60).map { Arrival(index: $0, at: 1300) }
        arrivals += (60..<400).map { Arrival(index: $0, at: 1300 + 20 * ($0 - 59)) }
        let outputs = play(arrivals, buffer: &buffer, ticks: 80)
        #expect(outputs.contains(.silence) && buffer.statistics.stalls == 1, "a second without packets is a stall")
        // 400 ms of 20 ms packets are kept: 10...39 go at once, and more while it buffers anew.
        #expect(buffer.statistics.dropped >= 30 && buffer.statistics.currentDepth <= .milliseconds(400), "\(buffer.statistics)")
        let played = outputs.compactMap(packetIndex)
        #expect(played.prefix(10) == Array(0..<10)[...] && played.dropFirst(10).allSatisfy { $0 >= 40 })
        // What is beyond the target is the player's to take out (`AudioReceiver` shortens it).
        #expect(buffer.statistics.currentDepth - buffer.statistics.targetDepth > .milliseconds(100), "\(buffer.statistics)")
    }

    /// Packets of 10, 40 and 60 ms (RFC 6716 §3.1's frame sizes, in a SILK TOC) play in order,
    /// and a lost one is concealed for its own length, known from its successor's timestamp.
    @Test(arguments: [(0x40, 480), (0x50, 1920), (0x58, 2880)])
    func packetsOfAnyDurationPlayAndALossIsConcealedForItsLength(toc: Int, samples: Int) {
        var buffer = AudioJitterBuffer(configuration: .init(maximumDepth: .seconds(1)))
        for index in 0..<12 where index != 7 {
            buffer.insert(payload: [UInt8(toc), 0, 0, UInt8(index)], sequenceNumber: UInt16(100 + index),
                          timestamp: UInt32(index * samples), arrival: .milliseconds(UInt64(index * samples / 48)))
        }
        #expect(buffer.statistics.currentDepth == .milliseconds(Int64(11 * samples / 48)))
        #expect(buffer.statistics.targetDepth == .milliseconds(Int64(max(20, samples / 48))), "the target holds a whole packet")
        let outputs = (0..<12).map { _ in buffer.pop(now: .milliseconds(UInt64(12 * samples / 48))) }
        #expect(outputs == (0..<7).map { .packet([UInt8(toc), 0, 0, UInt8($0)]) } + [.conceal(samples: samples)]
                + (8..<12).map { .packet([UInt8(toc), 0, 0, UInt8($0)]) })
    }

    /// The receiver cuts 10 ms and 60 ms Opus packets of a tone into 20 ms ticks: every tick has
    /// its 960 samples, the tone is heard, and a loss is concealed without a gap in time.
    @Test(arguments: [480, 2880])
    func theReceiverPlaysPacketsOfAnyDurationAsTicks(samples: Int) throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 24_000))
        let receiver = try AudioReceiver(channels: 1)
        let toneSamples = (0..<(samples * 80)).map { Int16(8000 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
        var heard: [Int16] = []
        var sent = 0
        for tick in 0..<(samples * 60 / 960) {
            let now = 20 * tick
            while sent * samples / 48 <= now {
                let payload = try encoder.encode(AudioFrame(samples: Array(toneSamples[(sent * samples)..<((sent + 1) * samples)])))
                if sent != 9 {
                    receiver.receive(payload: payload, sequenceNumber: UInt16(sent), timestamp: UInt32(sent * samples),
                                     arrival: .milliseconds(UInt64(sent * samples / 48)))
                }
                sent += 1
            }
            let frame = receiver.tick(now: .milliseconds(UInt64(now + 10)))
            #expect(frame.samples.count == 960)
            if tick >= 6 { heard += frame.samples }
        }
        #expect(tonePower(heard, frequency: 440) > 50 * tonePower(heard, frequency: 1000))
        #expect(receiver.buffer.statistics.played >= sent - 4 && receiver.decodeErrors == 0, "\(receiver.buffer.statistics)")
        let statistics = receiver.buffer.statistics
        #expect(statistics.concealedSamples >= samples || statistics.recoveredWithFEC == 1, "the lost packet, for its length: \(statistics)")
    }

    /// After a burst the receiver holds far more than its target; it brings the delay back by
    /// cutting pitch periods out of the tone, never a packet, and the tone stays clean.
    @Test func aBurstsDelayDrainsByShorteningThePlayoutNotBySkipping() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        let receiver = try AudioReceiver(channels: 1)
        var frames: [AudioFrame] = []
        var payloads: [[UInt8]] = []
        for index in 0..<200 { payloads.append(try encoder.encode(AudioFrame(samples: tone(440, frame: index)))) }
        // 10 packets in time, 200 ms of nothing, 10 at once, then in time again.
        func arrival(_ index: Int) -> Int { index < 10 ? 20 * index : index < 20 ? 400 : 20 * index }
        var next = 0
        for tick in 0..<200 {
            let now = 20 * tick + 10
            while next < payloads.count && arrival(next) <= now {
                receiver.receive(payload: payloads[next], sequenceNumber: UInt16(next), timestamp: UInt32(next * 960),
                                 arrival: .milliseconds(UInt64(arrival(next))))
                next += 1
            }
            frames.append(receiver.tick(now: .milliseconds(UInt64(now))))
        }
        let depth = try #require(receiver.playout?.depth)
        #expect(depth <= receiver.buffer.statistics.targetDepth + .milliseconds(30), "\(depth) \(receiver.buffer.statistics)")
        #expect(receiver.shortenedSamples >= 960 * 5, "the burst's extra delay was taken out: \(receiver.shortenedSamples)")
        #expect(receiver.buffer.statistics.played == 200 && receiver.buffer.statistics.dropped == 0, "\(receiver.buffer.statistics)")
        let heard = frames.dropFirst(30).flatMap(\.samples)
        #expect(tonePower(heard, frequency: 440) > 200 * tonePower(heard, frequency: 1000), "no clicks: the tone stays clean")
    }

    /// Lip sync asks a voice to wait longer: the receiver reaches that delay by playing whole
    /// periods twice, and leaves it by cutting them, the tone clean throughout and no packet lost.
    @Test func aLipSyncDelayIsReachedAndLeftWithoutAGap() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        let receiver = try AudioReceiver(channels: 1)
        var frames: [AudioFrame] = []
        var lags: [Int] = []
        for index in 0..<150 {
            let payload = try encoder.encode(AudioFrame(samples: tone(440, frame: index)))
            receiver.receive(payload: payload, sequenceNumber: UInt16(index), timestamp: UInt32(index * 960),
                             arrival: .milliseconds(UInt64(20 * index + 5)))
            if index == 40 { receiver.lipSyncDelay = .milliseconds(40) }
            if index == 100 { receiver.lipSyncDelay = .zero }
            frames.append(receiver.tick(now: .milliseconds(UInt64(20 * index + 10))))
            // How far the playout is behind what has arrived, in ms.
            lags.append((index * 960 - Int(try #require(receiver.playout).timestamp)) / 48)
        }
        // Within a few ms: the tone's periods (2.3 ms) come in pairs at least (2.5 ms is the shortest cut).
        #expect(abs(lags[95] - lags[35] - 40) <= 5, "40 ms later: \(lags[35]) → \(lags[95])")
        #expect(abs(lags[149] - lags[35]) <= 5, "and back: \(lags[149])")
        #expect(receiver.buffer.statistics.played == 150 && receiver.buffer.statistics.concealed == 0, "\(receiver.buffer.statistics)")
        let heard = frames.dropFirst(10).flatMap(\.samples)
        #expect(tonePower(heard, frequency: 440) > 200 * tonePower(heard, frequency: 1000), "no clicks: the tone stays clean")
    }

    /// A hostile or broken sender (random bytes, sequence numbers and timestamps, clock jumps,
    /// TOCs of every length) never traps the receiver, and every tick is still one tick of audio.
    @Test func aHostileStreamStillGivesOneTickOfAudioPerTick() throws {
        let receiver = try AudioReceiver(channels: 2)
        var generator = SeededGenerator(seed: 11)
        var sequence: UInt16 = 65_000, timestamp: UInt32 = 4_294_960_000
        for tick in 0..<600 {
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let length = Int.random(in: 0...40, using: &generator)
                let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                sequence &+= UInt16.random(in: 0...3, using: &generator) &- 1
                timestamp &+= [0, 120, 480, 960, 2880, 5760, 200_000][Int.random(in: 0...6, using: &generator)]
                receiver.receive(payload: payload, sequenceNumber: sequence, timestamp: timestamp,
                                 arrival: .milliseconds(UInt64(20 * tick + Int.random(in: 0...50, using: &generator))))
            }
            #expect(receiver.tick(now: .milliseconds(UInt64(20 * tick + 10))).samples.count == 1920)
        }
        #expect(receiver.buffer.statistics.currentDepth <= receiver.buffer.configuration.maximumDepth + .milliseconds(120))
    }

    /// DTX (RFC 7587 §3.1.3): after a silence the sender's clock has moved on but its sequence
    /// numbers have not: the packet plays at once, without concealing the gap.
    @Test func aGapInRTPTimeWithoutALostPacketPlaysOnAtOnce() {
        var buffer = AudioJitterBuffer()
        for index in 0..<5 {
            buffer.insert(payload: payload(index), sequenceNumber: UInt16(index), timestamp: UInt32(index * 960), arrival: .milliseconds(UInt64(20 * index)))
        }
        buffer.insert(payload: payload(5), sequenceNumber: 5, timestamp: UInt32(25 * 960), arrival: .milliseconds(90))
        let outputs = (0..<6).map { buffer.pop(now: .milliseconds(UInt64(100 + 20 * $0))) }
        #expect(outputs.compactMap(packetIndex) == Array(0..<6))
        #expect(buffer.statistics.concealed == 0)
    }

    @Test func afterAStallStragglersFromBeforeItAreLate() {
        var buffer = AudioJitterBuffer()
        // Packet 5's slot is passed (6 is there), the stream stalls after 9, and 5 turns up as
        // the stream resumes.
        var arrivals = (0..<10).filter { $0 != 5 }.map { Arrival(index: $0, at: 3 + 20 * $0) }
        arrivals.append(Arrival(index: 5, at: 600))
        arrivals += (10..<20).map { Arrival(index: $0, at: 603 + 20 * ($0 - 10)) }
        let outputs = play(arrivals, buffer: &buffer, ticks: 45)
        #expect(buffer.statistics.stalls == 1 && buffer.statistics.late == 1, "\(buffer.statistics)")
        #expect(outputs.compactMap(packetIndex) == Array(0..<5) + Array(6..<20))
    }

    /// A stream whose delay grew to about 140 ms (a burst came 120 ms late), then silence, a
    /// DTX gap of a second (sequence numbers go on by one, RTP time jumps) and sound again: the
    /// pause keeps the stream's timeline, so the sound plays with the delay the silence had,
    /// not the target's (a fresh start would move every talkspurt's latency by whatever the
    /// jitter estimate says at that moment).
    @Test func aDTXPauseKeepsTheStreamsDelay() {
        var buffer = AudioJitterBuffer()
        var arrivals: [(sequence: Int, index: Int, at: Int)] = (0..<50).map { index in
            (index, index, index >= 5 && index <= 11 ? max(20 * index, 220) : 20 * index)
        }
        arrivals.append((50, 100, 2000))
        arrivals += (101..<110).map { ($0 - 50, $0, 20 * $0) }
        var next = 0, played: [Int: Int] = [:]
        for tick in 0..<120 {
            let now = 10 + 20 * tick
            while next < arrivals.count, arrivals[next].at <= now {
                let packet = arrivals[next]
                buffer.insert(payload: payload(packet.index), sequenceNumber: UInt16(packet.sequence), timestamp: UInt32(packet.index * 960),
                              arrival: .milliseconds(UInt64(packet.at)), isSilent: (40..<50).contains(packet.index))
                next += 1
            }
            switch buffer.pop(now: .milliseconds(UInt64(now))) {
            case .packet(let bytes), .silentPacket(let bytes, _): played[Int(bytes[2]) << 8 | Int(bytes[3])] = now
            default: break
            }
        }
        let before = (played[45] ?? 0) - 20 * 45, after = (played[100] ?? 0) - 2000
        #expect(before >= 120, "the delay before the gap: \(before) ms")
        #expect(abs(after - before) <= 20, "the delay after the gap: \(after) ms, before it: \(before) ms")
        #expect(buffer.statistics.pauses == 1)
        #expect((101..<110).allSatisfy { played[$0] != nil })
    }

    @Test func sequenceNumbersWrapAroundInOrder() {
        var buffer = AudioJitterBuffer(configuration: .init(minimumDelay: .milliseconds(60)))
        // 65530 ... 65535, 0 ... 13, with 65535 and 0 swapped.
        let arrivals = (0..<20).map { Arrival(index: $0, at: 3 + 20 * $0 + ($0 == 5 ? 25 : 0)) }
        let outputs = play(arrivals, buffer: &buffer, firstSequence: 65530, ticks: 25)
        #expect(outputs.compactMap(packetIndex) == Array(0..<20))
        #expect(buffer.statistics.late == 0 && buffer.statistics.dropped == 0)
    }

    @Test func aPacketAfterItsSlotIsDiscardedAsLateAndDuplicatesAreIgnored() {
        var buffer = AudioJitterBuffer()
        var arrivals = (0..<20).filter { $0 != 5 }.map { Arrival(index: $0, at: 3 + 20 * $0) }
        arrivals.append(Arrival(index: 5, at: 300))
        arrivals.append(Arrival(index: 12, at: 245))
        let outputs = play(arrivals, buffer: &buffer, ticks: 20)
        #expect(!outputs.compactMap(packetIndex).contains(5))
        #expect(outputs.compactMap(packetIndex).filter { $0 == 12 }.count == 1)
        #expect(buffer.statistics.late == 1 && buffer.statistics.duplicates == 1)
    }

    @Test func theReceiverTurnsALossyJitteryToneIntoOneFramePerTick() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 24_000, expectedPacketLossPercent: 10))
        // Deep enough that a lost packet's successor is there when its turn comes: FEC recovers it.
        let receiver = try AudioReceiver(channels: 1, configuration: .init(minimumDelay: .milliseconds(60)))
        var generator = SeededGenerator(seed: 9)
        var packets: [(arrival: Int, sequence: UInt16, timestamp: UInt32, payload: [UInt8])] = []
        for index in 0..<100 {
            let payload = try encoder.encode(AudioFrame(samples: tone(440, frame: index)))
            if index % 10 == 7 { continue }  // 10% loss
            packets.append((20 * index + Int.random(in: 0...30, using: &generator), UInt16(index), UInt32(index * 960), payload))
        }
        packets.sort { $0.arrival < $1.arrival }
        var heard: [Int16] = []
        var next = 0
        for tick in 0..<110 {
            let now = 10 + 20 * tick
            while next < packets.count && packets[next].arrival <= now {
                let packet = packets[next]
                receiver.receive(payload: packet.payload, sequenceNumber: packet.sequence, timestamp: packet.timestamp,
                                 arrival: .milliseconds(UInt64(packet.arrival)))
                next += 1
            }
            let frame = receiver.tick(now: .milliseconds(UInt64(now)))
            #expect(frame.samples.count == 960)
            if tick >= 10 && tick < 90 { heard += frame.samples }
        }
        #expect(tonePower(heard, frequency: 440) > 50 * tonePower(heard, frequency: 1000))
        #expect(receiver.buffer.statistics.recoveredWithFEC > 0, "\(receiver.buffer.statistics)")
        #expect(receiver.decodeErrors == 0)
    }

    /// A talkspurt, 20 packets its sender marks silent (RFC 6464 level 127), a lost packet, then
    /// another talkspurt: the silent packets but the first are not decoded, the loss right after
    /// them plays as silence (not as the first talkspurt extrapolated), and the second talkspurt
    /// decodes clean.
    @Test func silentPacketsAreNotDecodedAndALossAfterThemStaysSilent() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 24_000))
        let receiver = try AudioReceiver(channels: 1)
        var frames: [AudioFrame] = []
        for index in 0..<70 {
            let sent = (20..<40).contains(index) ? AudioFrame.silence() : AudioFrame(samples: tone(440, frame: index))
            let payload = try encoder.encode(sent)
            if index != 40 {
                receiver.receive(payload: payload, sequenceNumber: UInt16(index), timestamp: UInt32(index * 960),
                                 arrival: .milliseconds(UInt64(20 * index)), level: AudioLevel(of: sent))
            }
            frames.append(receiver.tick(now: .milliseconds(UInt64(20 * index + 10))))
        }
        #expect(receiver.silentPacketsSkipped == 19, "the first silent packet holds the tone's end: decoded")
        // Packet 0 plays at the first tick with sound.
        let lag = try #require(frames.firstIndex { $0.samples.contains { $0 != 0 } })
        for packet in 21...40 {
            #expect(frames[lag + packet].samples.allSatisfy { $0 == 0 }, "packet \(packet) is not silence")
        }
        let second = frames[(lag + 42)..<min(frames.count, lag + 60)].flatMap(\.samples)
        #expect(second.count >= 960 * 10)
        #expect(tonePower(second, frequency: 440) > 50 * tonePower(second, frequency: 1000))
        #expect(receiver.decodeErrors == 0)
    }

    /// A sender using DTX (RFC 7587 §6.1 usedtx, as a browser does when the host's answer asks
    /// it): after a talkspurt, 10 silent packets, then only every 20th frame (400 ms) with the
    /// frames between left out (sequence numbers go on by one, RTP time jumps). Nothing after
    /// the talkspurt's end is decoded or concealed (each update and each wait between them was a
    /// decode and ten concealments, in most of a large room's guests), every tick of it is
    /// silence the mixer need not measure, playback pauses between updates, and the next
    /// talkspurt plays its tone.
    @Test func aDTXSendersSilenceIsNeitherDecodedNorConcealed() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        let receiver = try AudioReceiver(channels: 1)
        var frames: [(frame: AudioFrame, concealed: Bool, silent: Bool, playing: Bool)] = []
        var sequence: UInt16 = 0
        let sound = Set(0..<20).union(150..<190)
        var updates = 0
        for index in 0..<190 {
            let sent = sound.contains(index) ? AudioFrame(samples: tone(440, frame: index)) : AudioFrame.silence()
            let payload = try encoder.encode(sent)
            let silentRun = index - 19
            if sound.contains(index) || silentRun <= 10 || (silentRun - 10) % 20 == 0 {
                if !sound.contains(index) && silentRun > 10 { updates += 1 }
                receiver.receive(payload: payload, sequenceNumber: sequence, timestamp: UInt32(index * 960),
                                 arrival: .milliseconds(UInt64(20 * index)), level: AudioLevel(of: sent))
                sequence &+= 1
            }
            let frame = receiver.tick(now: .milliseconds(UInt64(20 * index + 10)))
            frames.append((frame, receiver.concealedLastTick, receiver.silentLastTick, receiver.playout != nil))
        }
        #expect(updates == 6)
        #expect(receiver.silentPacketsSkipped == 9 + updates, "the first silent packet holds the tone's end; no other is decoded")
        let lag = try #require(frames.firstIndex { $0.frame.samples.contains { $0 != 0 } })
        for index in (lag + 21)..<(lag + 150) {
            #expect(frames[index].frame.samples.allSatisfy { $0 == 0 }, "tick \(index) is not silence")
            #expect(!frames[index].concealed, "tick \(index) was concealed by the decoder")
            #expect(frames[index].silent, "tick \(index) is not known to be silence")
        }
        // Nothing claims to play between updates (lip sync would hold a camera's pictures for
        // a playout that does not move): a tick for each update, no more.
        #expect(frames[(lag + 40)..<(lag + 150)].filter(\.playing).count <= updates)
        #expect(receiver.buffer.statistics.pauses >= updates)
        let next = frames[(lag + 155)...].flatMap(\.frame.samples)
        #expect(next.count >= 960 * 10)
        #expect(tonePower(next, frequency: 440) > 50 * tonePower(next, frequency: 1000))
    }

    /// A DTX sender that gives no RFC 6464 levels, as WebRTC sends without them: after the
    /// talkspurt and 10 silent frames, a frame of no bytes (the TOC alone) as DTX starts, then
    /// every 20th frame an update followed by such a frame again. The empty frame says the pause:
    /// the wait after it is not concealed (without it, each wait was up to ten concealments of
    /// the update decoded before it), playback pauses, and the next talkspurt plays its tone.
    @Test func aDTXSenderWithoutLevelsPausesAtItsEmptyFrame() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        let receiver = try AudioReceiver(channels: 1)
        var frames: [(frame: AudioFrame, concealed: Bool)] = []
        var sequence: UInt16 = 0
        let sound = Set(0..<20).union(150..<190)
        var updates = 0
        for index in 0..<190 {
            let sent = sound.contains(index) ? AudioFrame(samples: tone(440, frame: index)) : AudioFrame.silence()
            var payload = try encoder.encode(sent)
            let sinceUpdate = (index - 29) % 20
            if !sound.contains(index) && index >= 30 {
                guard sinceUpdate <= 1 else {
                    frames.append((receiver.tick(now: .milliseconds(UInt64(20 * index + 10))), receiver.concealedLastTick))
                    continue
                }
                if sinceUpdate == 1 { payload = [payload[0] & 0xFC] } else { updates += 1 }
            }
            receiver.receive(payload: payload, sequenceNumber: sequence, timestamp: UInt32(index * 960),
                             arrival: .milliseconds(UInt64(20 * index)))
            sequence &+= 1
            frames.append((receiver.tick(now: .milliseconds(UInt64(20 * index + 10))), receiver.concealedLastTick))
        }
        #expect(updates == 6)
        let lag = try #require(frames.firstIndex { $0.frame.samples.contains { $0 != 0 } })
        let concealed = frames[(lag + 31)..<(lag + 150)].filter(\.concealed).count
        #expect(concealed == 0, "\(concealed) ticks of the DTX pauses were concealed")
        #expect(receiver.buffer.statistics.pauses >= updates)
        let next = frames[(lag + 155)...].flatMap(\.frame.samples)
        #expect(next.count >= 960 * 10)
        #expect(tonePower(next, frequency: 440) > 50 * tonePower(next, frequency: 1000))
    }

    /// The end of a talkspurt (in the first silent packet), and the first frames of the next one
    /// after silent packets not decoded, are what a decoder that decoded everything makes.
    @Test func aTalkspurtAfterSkippedSilenceDecodesAsIfNothingWasSkipped() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        let receiver = try AudioReceiver(channels: 1)
        let reference = try OpusDecoder(channels: 1)
        var played: [AudioFrame] = [], decoded: [AudioFrame] = []
        for index in 0..<50 {
            let sent = (20..<30).contains(index) ? AudioFrame.silence() : AudioFrame(samples: tone(550, frame: index))
            let payload = try encoder.encode(sent)
            decoded.append(try reference.decode(payload))
            receiver.receive(payload: payload, sequenceNumber: UInt16(index), timestamp: UInt32(index * 960),
                             arrival: .milliseconds(UInt64(20 * index)), level: AudioLevel(of: sent))
            played.append(receiver.tick(now: .milliseconds(UInt64(20 * index + 10))))
        }
        #expect(receiver.silentPacketsSkipped == 9)
        let lag = try #require(played.firstIndex { $0.samples.contains { $0 != 0 } })
        for packet in [18, 19, 20, 30, 31, 32, 33] where lag + packet < played.count {
            let got = played[lag + packet].samples, want = decoded[packet].samples
            let error = zip(got, want).reduce(0.0) { $0 + (Double($1.0) - Double($1.1)) * (Double($1.0) - Double($1.1)) }
            let energy = want.reduce(0.0) { $0 + Double($1) * Double($1) }
            #expect(error < 0.01 * energy, "packet \(packet): error \(error / max(energy, 1)) of its energy")
        }
    }

    /// The level of a frame, as RFC 6464 §4 defines it.
    @Test func aFramesLevelIsItsRMSInDBov() {
        #expect(AudioLevel(of: .silence()) == AudioLevel(voiceActivity: false, level: 127))
        // A sine of amplitude 8000: RMS 5657, -15.3 dBov.
        #expect(AudioLevel(of: AudioFrame(samples: tone(440, frame: 0, amplitude: 8000))) == AudioLevel(voiceActivity: true, level: 15))
        #expect(AudioLevel(of: AudioFrame(samples: [Int16](repeating: Int16.min, count: 960))).level == 0)
    }
}
