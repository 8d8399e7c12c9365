import Foundation
import Media
import Testing
import Wire
import WireTesting

/// 20 ms of a sine at `frequency`, continuing from frame `index`.
func tone(_ frequency: Double, frame index: Int, amplitude: Double = 8000) -> [Int16] {
    (0..<AudioFrame.samplesPer20ms).map { offset in
        let t = Double(index * AudioFrame.samplesPer20ms + offset) / 48_000
        return Int16(amplitude * sin(2 * Double.pi * frequency * t))
    }
}

/// One channel of interleaved stereo.
func channel(_ samples: [Int16], _ index: Int) -> [Int16] {
    stride(from: index, to: samples.count, by: 2).map { samples[$0] }
}

func energy(_ samples: [Int16]) -> Double { samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count)) }

@Suite struct OpusCodecTests {
    @Test func aToneComesBackWithItsFrequencyDominant() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        let decoder = try OpusDecoder(channels: 1)
        var decoded: [Int16] = []
        for index in 0..<25 {
            let packet = try encoder.encode(AudioFrame(samples: tone(440, frame: index)))
            #expect(packet.count > 2 && packet.count < 200)
            let frame = try decoder.decode(packet)
            #expect(frame.samples.count == 960)
            if index >= 5 { decoded += frame.samples }
        }
        let at440 = tonePower(decoded, frequency: 440)
        for other in [220.0, 660, 1000, 3000] {
            #expect(at440 > 100 * tonePower(decoded, frequency: other), "440 Hz vs \(other) Hz")
        }
    }

    /// Lip sync counts on this look-ahead in every encoder, the host's and browsers'.
    @Test func theVoiceAndAudioApplicationsLookAheadBy312Samples() throws {
        for application in [OpusEncoder.Application.voip, .audio] {
            var configuration = OpusEncoder.Configuration(channels: 1, bitrate: 32_000)
            configuration.application = application
            #expect(try OpusEncoder(configuration).lookahead == OpusEncoder.voiceLookahead)
        }
    }

    @Test func stereoKeepsEachChannelsTone() throws {
        // At 64 kbit/s libopus 1.3 narrows the stereo image (measured: each tone only 6x the
        // other in the wrong channel); at 128 kbit/s the channels stay apart (over 10^5).
        let encoder = try OpusEncoder(.init(channels: 2, application: .audio, bitrate: 128_000))
        let decoder = try OpusDecoder(channels: 2)
        var left: [Int16] = [], right: [Int16] = []
        for index in 0..<25 {
            let (l, r) = (tone(440, frame: index), tone(1000, frame: index))
            let interleaved = zip(l, r).flatMap { [$0, $1] }
            let frame = try decoder.decode(try encoder.encode(AudioFrame(channels: 2, samples: interleaved)))
            #expect(frame.channels == 2 && frame.samples.count == 1920)
            if index >= 5 {
                left += channel(frame.samples, 0)
                right += channel(frame.samples, 1)
            }
        }
        let leftRatio = tonePower(left, frequency: 440) / tonePower(left, frequency: 1000)
        let rightRatio = tonePower(right, frequency: 1000) / tonePower(right, frequency: 440)
        #expect(leftRatio > 30 && rightRatio > 30, "left 440/1000 \(leftRatio), right 1000/440 \(rightRatio)")
    }

    @Test func concealmentGivesAFrameOfTheRightLengthThatIsNotSilent() throws {
        let encoder = try OpusEncoder(.init(channels: 1))
        let decoder = try OpusDecoder(channels: 1)
        for index in 0..<10 { _ = try decoder.decode(try encoder.encode(AudioFrame(samples: tone(440, frame: index)))) }
        let concealed = decoder.concealLoss(timestamp: .milliseconds(200))
        #expect(concealed.samples.count == 960 && concealed.timestamp == .milliseconds(200))
        #expect(energy(concealed.samples) > 1000)
        #expect(try OpusDecoder(channels: 2).concealLoss().samples.count == 1920)
    }

    /// The lost packet is the first of a new tone: concealment can only continue the old one,
    /// while the next packet's FEC carries the new one. Measured over the lost frame and the
    /// next: error energy 1.06e6 with FEC, 2.74e7 with concealment, for a signal of 2.91e7.
    @Test func fecRecoversALostFrameBetterThanConcealment() throws {
        let encoder = try OpusEncoder(.init(channels: 1, application: .voip, bitrate: 24_000, inbandFEC: true, expectedPacketLossPercent: 20))
        let packets = try (0..<30).map { index in
            try encoder.encode(AudioFrame(samples: tone(index < 20 ? 440 : 660, frame: index)))
        }
        #expect(packets[10...].allSatisfy(OpusDecoder.hasFEC), "packets carry LBRR")
        let reference = try OpusDecoder(), recovered = try OpusDecoder(), concealed = try OpusDecoder()
        for packet in packets[..<20] {
            for decoder in [reference, recovered, concealed] { _ = try decoder.decode(packet) }
        }
        // Packet 20 is lost for two of them; the reference decodes frames 20 and 21.
        let truth = try reference.decode(packets[20]).samples + reference.decode(packets[21]).samples
        let fec = try recovered.decodeFEC(packets[21]).samples + recovered.decode(packets[21]).samples
        let plc = concealed.concealLoss().samples + (try concealed.decode(packets[21])).samples
        #expect(fec.count == 1920 && plc.count == 1920)
        func error(_ samples: [Int16]) -> Double { energy(zip(samples, truth).map { Int16(clamping: Int($0) - Int($1)) }) }
        let lost = Array(truth[..<960])
        let fecFrame = Array(fec[..<960]), plcFrame = Array(plc[..<960])
        #expect(energy(fecFrame) > 0.1 * energy(lost), "FEC is not silent")
        #expect(tonePower(fecFrame, frequency: 660) > tonePower(fecFrame, frequency: 440), "FEC carries the new tone")
        #expect(tonePower(plcFrame, frequency: 440) > tonePower(plcFrame, frequency: 660), "concealment continues the old tone")
        #expect(error(fec) < 0.5 * error(plc), "error energy: FEC \(error(fec)), concealment \(error(plc)), signal \(energy(truth))")
    }

    @Test func dtxSendsTinyPacketsInSilence() throws {
        let encoder = try OpusEncoder(.init(channels: 1, dtx: true))
        let sizes = try (0..<40).map { _ in try encoder.encode(.silence()).count }
        // libopus 1.3 sends 1-byte packets in silence and a comfort-noise update every 400 ms.
        #expect(sizes.suffix(20).filter { $0 <= 2 }.count >= 17, "\(sizes)")
    }

    @Test func theEncoderRefusesFramesOfTheWrongLength() throws {
        let encoder = try OpusEncoder(.init(channels: 1))
        #expect(throws: OpusCodecError.wrongFrameLength(samples: 500, expected: 960)) {
            try encoder.encode(AudioFrame(samples: [Int16](repeating: 0, count: 500)))
        }
        // Any length Opus codes is taken: 10 ms here.
        #expect(OpusDecoder.sampleCount(of: try encoder.encode(AudioFrame(samples: [Int16](repeating: 0, count: 480)))) == 480)
        #expect(throws: OpusCodecError.wrongFrameLength(samples: 1920, expected: 960)) {
            try encoder.encode(.silence(channels: 2))
        }
        #expect(throws: OpusCodecError.self) { try OpusEncoder(.init(channels: 3)) }
        // Refused after libopus made the encoder: it is freed once (deinit), not twice.
        #expect(throws: OpusCodecError.invalidConfiguration("bit rate 1 is outside 6000...510000")) {
            try OpusEncoder(.init(bitrate: 1))
        }
        #expect(throws: OpusCodecError.self) { try encoder.setBitrate(1) }
    }

    @Test func corruptPacketsGiveTypedErrorsNeverTraps() throws {
        let encoder = try OpusEncoder(.init(channels: 1))
        let packets = try (0..<5).map { try encoder.encode(AudioFrame(samples: tone(440, frame: $0))) }
        let decoder = try OpusDecoder(channels: 1)
        #expect(throws: OpusCodecError.self) { try decoder.decode([]) }
        #expect(throws: OpusCodecError.self) { try decoder.decode([0x03]) }  // code 3 without its count byte
        #expect(throws: OpusCodecError.self) { try decoder.decodeFEC([]) }
        var mutator = Mutator(seed: 0x4F50_5553)
        var frames = 0, errors = 0
        for index in 0..<2000 {
            do {
                let frame = try decoder.decode(mutator.mutate(packets[index % packets.count]))
                #expect(frame.samples.count % 120 == 0 && frame.samples.count <= 5760)
                frames += 1
            } catch {
                errors += 1
            }
        }
        #expect(frames > 0 && errors > 0, "frames \(frames), errors \(errors)")
        #expect(try decoder.decode(packets[0]).samples.count == 960)
    }
}
