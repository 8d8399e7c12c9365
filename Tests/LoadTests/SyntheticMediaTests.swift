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
