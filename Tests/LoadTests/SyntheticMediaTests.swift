import Compositing
import Foundation
import Media
import Testing
import WireTesting
@testable import Load

@Suite struct ToneMeterTests {
    static func tone(_ frequencies: [Double], frame: Int, amplitude: Double = 6000) -> [Int16] {
        (0..<AudioFrame.samplesPer20ms).map { offset in
            let n = Double(frame * AudioFrame.samplesPer20ms + offset)
            return Int16(frequencies.reduce(0) { $0 + amplitude * sin(2 * Double.pi * $1 * n / 48_000) })
        }
    }

    @Test func aPureToneIsAllOfTheFrameAndItsNeighboursNone() {
        let frequencies = (0..<4).map { SyntheticSignal.toneFrequency(index: $0) }
        let meter = ToneMeter(frequencies: frequencies)
        let (level, fractions) = meter.measure(Self.tone([frequencies[1]], frame: 3))
        #expect(abs(fractions[1] - 1) < 0.05)
        #expect(fractions[0] < 0.005 && fractions[2] < 0.005 && fractions[3] < 0.005)
        #expect(level > -20 && level < -10)
    }

    @Test func threeEqualTonesShareTheFrame() {
        let frequencies = (0..<3).map { SyntheticSignal.toneFrequency(index: $0) }
        let (_, fractions) = ToneMeter(frequencies: frequencies).measure(Self.tone(frequencies, frame: 7, amplitude: 3000))
        for fraction in fractions { #expect(abs(fraction - 1.0 / 3) < 0.05) }
    }

    @Test func silenceHoldsNoTone() {
        let (level, fractions) = ToneMeter(frequencies: [400, 550]).measure([Int16](repeating: 0, count: 960))
        #expect(level < -100)
        #expect(fractions == [0, 0])
    }

    /// What a speaker checks in its mix: the other two tones through Opus (as the host encodes
    /// them) must not look like its own tone between them.
    @Test func aMixOfTwoOtherTonesThroughOpusHoldsNotTheThird() throws {
        let frequencies = (0..<3).map { SyntheticSignal.toneFrequency(index: $0) }
        let meter = ToneMeter(frequencies: frequencies)
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        let decoder = try OpusDecoder(channels: 1)
        var worst = 0.0
        for frame in 0..<150 {
            // The two others, each with its own 100 ms gap a second, out of step.
            var others: [Double] = []
            if (frame % 50) >= 5 { others.append(frequencies[0]) }
            if ((frame + 20) % 50) >= 5 { others.append(frequencies[2]) }
            let decoded = try decoder.decode(encoder.encode(AudioFrame(samples: Self.tone(others, frame: frame, amplitude: 5000))))
            guard frame >= 10 else { continue }
            let (level, fractions) = meter.measure(decoded.samples)
            guard level > LoadParticipant.judgedLevel else { continue }
            worst = max(worst, fractions[1])
        }
        #expect(worst < LoadParticipant.ownTonePresence / 2, "worst own-tone fraction \(worst)")
    }

    /// Fifty speakers' tones are fifty frequencies; through Opus, a mix of three (the Top K
    /// default), two of them the tone's neighbours and one far off, is heard as the load's checks
    /// hear it: each of the three in at least `heardShare` of the frames, the tone between them
    /// in at most `ownToneShare`.
    @Test func fiftySpeakersTonesAreToldApartThroughOpus() throws {
        let speakers = SyntheticSignal.mostSpeakers
        let frequencies = (0..<speakers).map { SyntheticSignal.toneFrequency(index: $0) }
        #expect(Set(frequencies).count == speakers)
        let meter = ToneMeter(frequencies: frequencies)
        for listener in 1..<(speakers - 1) {
            let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
            let decoder = try OpusDecoder(channels: 1)
            let mixed = [listener - 1, listener + 1, (listener + speakers / 2) % speakers]
            var judged = 0, withOwn = 0
            var heard = mixed.map { _ in 0 }
            for frame in 0..<60 {
                let samples = Self.tone(mixed.map { frequencies[$0] }, frame: frame, amplitude: 4000)
                let (level, fractions) = meter.measure(try decoder.decode(encoder.encode(AudioFrame(samples: samples))).samples)
                guard frame >= 10, level > LoadParticipant.judgedLevel else { continue }
                judged += 1
                if fractions[listener] > LoadParticipant.ownTonePresence { withOwn += 1 }
                for (slot, speaker) in mixed.enumerated() where fractions[speaker] > LoadParticipant.tonePresence { heard[slot] += 1 }
            }
            #expect(judged >= 45)
            #expect(Double(withOwn) <= LoadChecks.ownToneShare * Double(judged), "speaker \(listener) hears its own tone in \(withOwn) of \(judged) frames of \(mixed)")
            for (slot, speaker) in mixed.enumerated() {
                #expect(Double(heard[slot]) >= LoadChecks.heardShare * Double(judged), "speaker \(listener) hears \(speaker) in \(heard[slot]) of \(judged) frames")
            }
        }
    }
}

@Suite struct FrameCodeTests {
    static let format = LoadOptions.VideoFormat(width: 640, height: 360, framesPerSecond: 30)

    @Test func everyIndexReadsBackFromTheFullPictureAndASmallTile() {
        for index in 0..<SyntheticSignal.pictureLoopLength {
            var picture = I420Frame(width: 640, height: 360, color: SyntheticSignal.colour(index: index))
            FrameCode.draw(index, on: &picture)
            #expect(FrameCode.read { u, v in picture.pixel(x: Int(u * 640), y: Int(v * 360)).y } == index)
            // A 5x5 grid's tile of a 720p composite.
            let small = picture.scaled(width: 256, height: 144)
            #expect(FrameCode.read { u, v in small.pixel(x: Int(u * 256), y: Int(v * 144)).y } == index)
        }
    }

    @Test func aPictureWithoutACodeOrWithAFlippedBitReadsAsNothing() {
        let plain = I420Frame(width: 640, height: 360, color: SyntheticSignal.colour(index: 3))
        #expect(FrameCode.read { u, v in plain.pixel(x: Int(u * 640), y: Int(v * 360)).y } == nil)
        var coded = plain
        FrameCode.draw(5, on: &coded)
        let flipped = FrameCode.blockCentre(2)
        let read = FrameCode.read { u, v in
            let luma = coded.pixel(x: Int(u * 640), y: Int(v * 360)).y
            return u == flipped.x ? (luma > 128 ? 16 : 235) : luma
        }
        #expect(read == nil)
    }

    @Test func aPictureLoopDecodesToItsColourAndItsCodesInOrder() throws {
        let colour = SyntheticSignal.colour(index: 9)
        let loop = try PictureLoop(colour: colour, format: Self.format)
        #expect(loop.frames.count == SyntheticSignal.pictureLoopLength)
        #expect(loop.frames[0].isKeyFrame)
        #expect(loop.frames.dropFirst().allSatisfy { !$0.isKeyFrame })
        let decoder = try VP8Decoder()
        for (index, frame) in loop.frames.enumerated() {
            let picture = try #require(try decoder.decode(frame.data))
            let (u, v) = SyntheticSignal.colourPoint
            #expect(picture.pixel(x: Int(u * 640), y: Int(v * 360)).isClose(to: colour, tolerance: 12))
            #expect(FrameCode.read { u, v in picture.pixel(x: Int(u * 640), y: Int(v * 360)).y } == index)
        }
    }

    @Test func thePaletteKeepsThirtyTwoCamerasApart() {
        let colours = (0..<32).map { SyntheticSignal.colour(index: $0) }
        for a in 0..<32 {
            for b in (a + 1)..<32 {
                let (p, q) = (colours[a], colours[b])
                let apart = abs(Int(p.y) - Int(q.y)) > 40 || abs(Int(p.u) - Int(q.u)) > 20 || abs(Int(p.v) - Int(q.v)) > 20
                #expect(apart, "\(a) \(p) and \(b) \(q) would pass for each other")
            }
        }
    }
}

@Suite struct TilePlacementTests {
    @Test func fillCropsAWidePictureIntoATallTileAroundItsCentre() {
        // 640x360 into a 320x360 tile: scale 1, the middle half of the picture shows.
        let placement = TilePlacement(tile: PixelRect(x: 100, y: 0, width: 320, height: 360), source: (640, 360), contentMode: .fill)
        #expect(placement.point(0.5, 0.5).map { [$0.x, $0.y] } == [260, 180])
        #expect(placement.point(0.30, 0.5).map { [$0.x, $0.y] } == [132, 180])
        #expect(placement.point(0.2, 0.5) == nil)  // cropped away
    }

    @Test func fitLetterboxesAndMapsIntoTheShownPicture() {
        // 640x360 into 640x720: scaled 1, bars above and below of 180 each.
        let placement = TilePlacement(tile: PixelRect(x: 0, y: 0, width: 640, height: 720), source: (640, 360), contentMode: .fit)
        #expect(placement.point(0.5, 0).map { [$0.x, $0.y] } == [320, 180])
        #expect(placement.point(0.5, 0.999).map { $0.y } == 539)
    }
}

@Suite struct ToneOnsetTests {
    static let frequencies = (0..<4).map { SyntheticSignal.toneFrequency(index: $0) }

    /// Two frames in which `frequencies[1]` starts at `onset` (counted in the second frame)
    /// while the others sound throughout.
    static func frames(onset: Int) -> [Int16] {
        (0..<(2 * AudioFrame.samplesPer20ms)).map { n in
            var value = 0.0
            for (index, frequency) in frequencies.enumerated() where index != 1 || n >= onset + AudioFrame.samplesPer20ms {
                value += 4000 * sin(2 * Double.pi * frequency * Double(n) / 48_000)
            }
            return Int16(value)
        }
    }

    @Test(arguments: [-300, -20, 0, 17, 480, 700])
    func findsTheOnsetToTheSampleAmongOtherTones(onset: Int) throws {
        let samples = Self.frames(onset: onset)
        let found = try #require(ToneOnset.locate(frequency: Self.frequencies[1], previous: Array(samples[..<960]),
                                                  current: Array(samples[960...])))
        // Within a millisecond: what is left of the tone's image at twice its frequency ripples the envelope.
        #expect(abs(found - onset) <= 48, "found \(found) for \(onset)")
    }

    @Test func findsItThroughOpusLessTheCodecsDelay() throws {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        let decoder = try OpusDecoder(channels: 1)
        var decoded: [Int16] = []
        // The tone starts at sample 1300 of the whole: frame 1, sample 340.
        let whole = (0..<(4 * 960)).map { n in n < 1300 ? Int16(0) : Int16(6000 * sin(2 * Double.pi * Self.frequencies[2] * Double(n) / 48_000)) }
        for frame in 0..<4 { decoded += try decoder.decode(encoder.encode(AudioFrame(samples: Array(whole[(frame * 960)..<((frame + 1) * 960)])))).samples }
        let found = try #require(ToneOnset.locate(frequency: Self.frequencies[2], previous: Array(decoded[960..<1920]),
                                                  current: Array(decoded[1920..<2880])))
        // Opus delays what it decodes by its look-ahead (312 samples at 48 kHz).
        #expect(abs(found - (340 - 960 + 312)) <= 24, "found \(found)")
    }

    @Test func aFrameWithoutTheToneHasNoOnset() {
        let samples = Self.frames(onset: 2000)
        #expect(ToneOnset.locate(frequency: Self.frequencies[1], previous: Array(samples[..<960]), current: Array(samples[960...])) == nil)
        #expect(ToneOnset.locate(frequency: 400, previous: [], current: []) == nil)
    }
}

/// Lip sync read from a file as a player shows it: a speaker's tone loop and camera loop written
/// with the pictures a known time after their sound; the measure finds that time at each onset.
@Suite struct RecordingLipSyncTests {
    static let format = LoadOptions.VideoFormat(width: 320, height: 180, framesPerSecond: 30)

    /// Writes 3 s: the tone loop, and camera frame i (captured at i/30 s) `lipsLate` later than
    /// the sound of its instant; returns the file and what the sender sent.
    static func write(lipsLate: Double, to path: String) throws -> (onsets: [RecordingLipSync.Onset], pictures: [RecordingLipSync.Picture]) {
        let tone = try ToneLoop(frequency: SyntheticSignal.toneFrequency(index: 0))
        let camera = try PictureLoop(colour: SyntheticSignal.colour(index: 0), format: format)
        let writer = try WebMWriter(path: path, video: .init(width: format.width, height: format.height), audio: .init(channels: 1))
        var pictures: [RecordingLipSync.Picture] = []
        var audio = 0, video = 0
        while audio < 150 || video < 90 {
            let audioAt = Double(audio) * 0.020 + max(0, -lipsLate), videoAt = Double(video) / 30 + max(0, lipsLate)
            if audio < 150 && (video >= 90 || audioAt <= videoAt) {
                try writer.writeAudio(tone.packets[audio % ToneLoop.packetsPerLoop], timestamp: .nanoseconds(Int64(audioAt * 1e9)))
                audio += 1
            } else {
                let frame = camera.frames[video % SyntheticSignal.pictureLoopLength]
                try writer.writeVideo(frame.data, isKeyFrame: frame.isKeyFrame, timestamp: .nanoseconds(Int64(videoAt * 1e9)))
                pictures.append(.init(captured: Double(video) / 30, code: video % SyntheticSignal.pictureLoopLength))
                video += 1
            }
        }
        try writer.finish()
        // The loop's onset is its fifth packet: 100 ms into each second.
        return ([0.1, 1.1, 2.1].map { .init(speaker: 0, captured: $0) }, pictures)
    }

    @Test(arguments: [0.0, 0.060, -0.030])
    func theOffsetInAFileIsWhereItsPicturesAreAgainstItsSound(lipsLate: Double) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tessera-lipsync-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (onsets, pictures) = try Self.write(lipsLate: lipsLate, to: path)
        let lipSync = RecordingLipSync(tiles: [0: .init(participant: "load-0", rect: .init(x: 0, y: 0, width: 1, height: 1), contentMode: .fit)],
                                       pictures: [0: pictures], cameraSize: (Self.format.width, Self.format.height),
                                       cameraFramesPerSecond: 30, frequencies: [SyntheticSignal.toneFrequency(index: 0)])
        let result = try lipSync.measure(path: path, onsets: onsets)
        #expect(result.unmatched == 0 && result.offsetsMilliseconds.count == 3, "\(result)")
        // A player hears the sound an Opus look-ahead (6.5 ms) after its packet's time.
        let expected = (lipsLate - Double(OpusEncoder.voiceLookahead) / 48_000) * 1000
        for offset in result.offsetsMilliseconds { #expect(abs(offset - expected) <= 2, "measured \(offset) ms, wrote \(expected) ms") }
    }

    @Test func aFileThatIsNotThereIsAnErrorNotATrap() {
        let lipSync = RecordingLipSync(tiles: [:], pictures: [:], cameraSize: (320, 180), cameraFramesPerSecond: 30, frequencies: [400])
        #expect(throws: (any Error).self) { try lipSync.measure(path: "/nonexistent/tessera.webm", onsets: []) }
    }
}
