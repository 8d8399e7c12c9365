import Foundation
@testable import Media
import Testing
import Wire
import WireTesting

/// The composite encoder's settled blocks: macroblocks its last reconstruction already shows
/// within one level are coded as skipped (`VP8Encoder.Configuration.skipsSettledBlocks`).
@Suite struct SettledBlocksTests {
    /// Encodes `pictures` in turn with and without settled blocks and decodes both; returns the
    /// last decoded picture of each and the settled-block count of the last frame.
    func encodeBoth(_ pictures: [I420Frame], bitrate: Int) throws -> (skipping: I420Frame, coding: I420Frame, settled: Int, blocks: Int) {
        let first = try #require(pictures.first)
        var results: [I420Frame] = []
        var settled = 0, blocks = 0
        for skips in [true, false] {
            let encoder = try VP8Encoder(.init(width: first.width, height: first.height, bitrate: bitrate, skipsSettledBlocks: skips))
            let decoder = try VP8Decoder()
            var last: I420Frame?
            for picture in pictures {
                for frame in try encoder.encode(picture) { last = try decoder.decode(frame.data) ?? last }
            }
            if skips { (settled, blocks) = (encoder.settledBlocks, encoder.macroblocks) }
            results.append(try #require(last))
        }
        return (results[0], results[1], settled, blocks)
    }

    @Test func aStillBackgroundIsSkippedAndAMovingBarStillDrawnWhereItIs() throws {
        let background = YUVColor(red: 40, green: 120, blue: 200), bar = YUVColor(red: 250, green: 200, blue: 20)
        let pictures = (0..<40).map { index in
            var frame = I420Frame(width: 640, height: 360, color: background, timestamp: .milliseconds(UInt64(index) * 33))
            frame.fill(PixelRect(x: (index * 8) % 600, y: 100, width: 32, height: 48), with: bar)
            return frame
        }
        let (skipping, coding, settled, blocks) = try encodeBoth(pictures, bitrate: 600_000)
        // All but the blocks the bar covers or just left: 920 of 920 less about a dozen.
        #expect(settled > blocks * 9 / 10, "\(settled) of \(blocks) blocks settled")
        // Frame 39's bar spans x 312...344; frame 38's was at 304...336.
        #expect(skipping.pixel(x: 328, y: 124).isClose(to: bar), "bar is \(skipping.pixel(x: 328, y: 124))")
        #expect(skipping.pixel(x: 306, y: 124).isClose(to: background), "where the bar was: \(skipping.pixel(x: 306, y: 124))")
        #expect(skipping.pixel(x: 20, y: 300).isClose(to: background))
        // A settled block is within one level everywhere (48 dB at worst); coding every block
        // makes this flat picture exact, which no viewer tells from 48 dB.
        let last = try #require(pictures.last)
        #expect(skipping.lumaPSNR(against: last) >= min(coding.lumaPSNR(against: last) - 0.5, 48),
                "skipping \(skipping.lumaPSNR(against: last)) dB, coding every block \(coding.lumaPSNR(against: last)) dB")
    }

    @Test func aStillTextureIsRefinedBeforeItIsSkipped() throws {
        // A still picture of seeded noise, at a rate that cannot code it well at once: CBR refines
        // it over many frames, and a block skipped before it is shown within a level would stay
        // as coarse as it was.
        var generator = SeededGenerator(seed: 11)
        let (width, height) = (320, 180)
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        let bytes = (0..<(width * height + 2 * chroma)).map { _ in UInt8(truncatingIfNeeded: generator.next() % 160 + 48) }
        let still = try #require(I420Frame(width: width, height: height, packed: bytes))
        let pictures = (0..<90).map { index in
            var picture = still
            picture.timestamp = .milliseconds(UInt64(index) * 33)
            return picture
        }
        let (skipping, coding, _, _) = try encodeBoth(pictures, bitrate: 400_000)
        #expect(skipping.lumaPSNR(against: still) >= coding.lumaPSNR(against: still) - 0.5,
                "skipping \(skipping.lumaPSNR(against: still)) dB, coding every block \(coding.lumaPSNR(against: still)) dB")
    }

    @Test func aSettledAreaStaysExactlyAsShownWhileABarMoves() throws {
        // Flat 16x16 patches a few levels apart (a background of soft steps) and a bar moving
        // below them. Once the still blocks settle they are neither coded nor filtered again, so
        // the decoded pictures show them the same, sample for sample, from one picture to the
        // next while the bar moves: no shimmer along block edges.
        let (width, height) = (320, 180)
        var generator = SeededGenerator(seed: 17)
        var still = I420Frame(width: width, height: height, color: YUVColor(red: 120, green: 120, blue: 120))
        for row in 0..<(height + 15) / 16 {
            for column in 0..<width / 16 {
                let level = UInt8(96 + generator.next() % 16)
                still.fill(PixelRect(x: column * 16, y: row * 16, width: 16, height: 16), with: YUVColor(y: level, u: 128, v: 128))
            }
        }
        let bar = YUVColor(red: 250, green: 200, blue: 20)
        let encoder = try VP8Encoder(.init(width: width, height: height, bitrate: 600_000, skipsSettledBlocks: true))
        let decoder = try VP8Decoder()
        var previous: I420Frame?
        var changedSamples: [Int] = []
        for index in 0..<90 {
            var picture = still
            picture.timestamp = .milliseconds(UInt64(index) * 33)
            picture.fill(PixelRect(x: (index * 4) % 280, y: 140, width: 32, height: 32), with: bar)
            for frame in try encoder.encode(picture) {
                guard let decoded = try decoder.decode(frame.data) else { continue }
                if index >= 60, let previous {
                    // The rows above the bar's band (and its blocks' filtered edges): still picture.
                    var changed = 0
                    for offset in 0..<(112 * width) where decoded.data[offset] != previous.data[offset] { changed += 1 }
                    changedSamples.append(changed)
                }
                previous = decoded
            }
        }
        #expect(encoder.settledBlocks > encoder.macroblocks * 3 / 4, "\(encoder.settledBlocks) of \(encoder.macroblocks) settled")
        #expect(changedSamples.count == 30 && changedSamples.allSatisfy { $0 == 0 }, "samples changed from picture to picture: \(changedSamples)")
    }

    @Test func settledBlocksAreSentInASegmentWithoutTheLoopFilter() throws {
        // The flat background with the moving bar: once blocks settle, each frame's header puts
        // segment 0 (the settled blocks) at loop filter level 0, whatever the frame's level.
        let background = YUVColor(red: 40, green: 120, blue: 200), bar = YUVColor(red: 250, green: 200, blue: 20)
        let encoder = try VP8Encoder(.init(width: 640, height: 360, bitrate: 600_000, skipsSettledBlocks: true))
        var deltas: [[Int]?] = []
        for index in 0..<40 {
            var picture = I420Frame(width: 640, height: 360, color: background, timestamp: .milliseconds(UInt64(index) * 33))
            picture.fill(PixelRect(x: (index * 8) % 600, y: 100, width: 32, height: 48), with: bar)
            for frame in try encoder.encode(picture) where index >= 30 {
                deltas.append(try VP8SegmentHeader(frame.data).loopFilterDeltas)
            }
        }
        #expect(deltas.count == 10 && deltas.allSatisfy { $0 == [-63, 0, 0, 0] }, "\(deltas)")

        // Moving noise: nothing settles, and no segment goes unfiltered.
        var generator = SeededGenerator(seed: 5)
        let field = (0..<(400 * 240 * 3 / 2)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let noise = try #require(I420Frame(width: 400, height: 240, packed: field))
        let camera = try VP8Encoder(.init(width: 320, height: 180, bitrate: 600_000, skipsSettledBlocks: true))
        for index in 0..<20 {
            var picture = noise.cropped(to: PixelRect(x: (index * 2) % 64, y: index % 48, width: 320, height: 180))
            picture.timestamp = .milliseconds(UInt64(index) * 33)
            for frame in try camera.encode(picture) {
                #expect(try VP8SegmentHeader(frame.data).loopFilterDeltas?.contains(-63) != true, "picture \(index)")
            }
        }
    }

    @Test func aPanningTextureSettlesNothing() throws {
        var generator = SeededGenerator(seed: 5)
        let field = (0..<(400 * 240 * 3 / 2)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let source = try #require(I420Frame(width: 400, height: 240, packed: field))
        let pictures = (0..<20).map { index in
            var picture = source.cropped(to: PixelRect(x: (index * 2) % 64, y: index % 48, width: 320, height: 180))
            picture.timestamp = .milliseconds(UInt64(index) * 33)
            return picture
        }
        let (_, _, settled, blocks) = try encodeBoth(pictures, bitrate: 600_000)
        #expect(settled <= blocks / 50, "\(settled) of \(blocks) blocks settled on moving noise")
    }

    @Test func aNewPictureSizeStartsAfreshAndStillSettles() throws {
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000, skipsSettledBlocks: true))
        let decoder = try VP8Decoder()
        let colour = YUVColor(red: 200, green: 60, blue: 90)
        var last: I420Frame?
        // A flat picture is refined for a few frames after each key frame (here 6 to 9), then settles.
        for (index, size) in (Array(repeating: (320, 180), count: 15) + Array(repeating: (480, 270), count: 15)).enumerated() {
            let picture = I420Frame(width: size.0, height: size.1, color: colour, timestamp: .milliseconds(UInt64(index) * 33))
            for frame in try encoder.encode(picture) { last = try decoder.decode(frame.data) ?? last }
        }
        let decoded = try #require(last)
        #expect(decoded.width == 480 && decoded.height == 270)
        #expect(decoded.pixel(x: 470, y: 260).isClose(to: colour))
        #expect(encoder.settledBlocks == encoder.macroblocks, "\(encoder.settledBlocks) of \(encoder.macroblocks)")
    }

    @Test func aCanvasThatTurnsStillSettlesAfterTheQuietPictures() throws {
        // Moving noise first (nothing settles, so comparing pauses), then a still flat picture:
        // within the pause and a few frames of refinement every block settles.
        var generator = SeededGenerator(seed: 21)
        let field = (0..<(400 * 240 * 3 / 2)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let noise = try #require(I420Frame(width: 400, height: 240, packed: field))
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000, skipsSettledBlocks: true))
        for index in 0..<10 {
            var picture = noise.cropped(to: PixelRect(x: index * 3, y: index * 2, width: 320, height: 180))
            picture.timestamp = .milliseconds(UInt64(index) * 33)
            _ = try encoder.encode(picture)
            #expect(encoder.settledBlocks == 0)
        }
        var settledAt: Int?
        for index in 10..<40 {
            _ = try encoder.encode(I420Frame(width: 320, height: 180, color: YUVColor(red: 90, green: 90, blue: 200),
                                             timestamp: .milliseconds(UInt64(index) * 33)))
            if settledAt == nil, encoder.settledBlocks == encoder.macroblocks { settledAt = index }
        }
        let at = try #require(settledAt, "the still picture never settled")
        #expect(at < 10 + SettledBlocks.quietPictures + 12, "settled at picture \(at)")
        #expect(encoder.settledBlocks == encoder.macroblocks)
    }

    /// The C comparison against a plain one, on planes of every awkward size: partial blocks on
    /// both edges, strides wider than the plane, planes smaller than one block.
    @Test func theSettledMapMatchesAPlainComparisonOnAnySize() throws {
        var generator = SeededGenerator(seed: 3)
        for (width, height) in [(1, 1), (2, 2), (15, 17), (16, 16), (17, 9), (33, 31), (64, 48), (90, 50), (161, 95)] {
            let chroma = (width: (width + 1) / 2, height: (height + 1) / 2)
            let sizes = [(width, height), (chroma.width, chroma.height), (chroma.width, chroma.height)]
            // Each plane with a stride 7 samples wider than itself.
            var pictures: [[UInt8]] = [], shown: [[UInt8]] = []
            for (planeWidth, planeHeight) in sizes {
                let stride = planeWidth + 7
                let picture = (0..<(stride * planeHeight)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                var copy = picture
                // A few samples off by 1 (still settled) and a few off by 2 or more (not).
                for _ in 0..<max(1, planeWidth * planeHeight / 40) {
                    let index = Int(generator.next() % UInt64(copy.count))
                    let delta = Int(generator.next() % 4)
                    copy[index] = UInt8(clamping: Int(copy[index]) + (generator.next() % 2 == 0 ? delta : -delta))
                }
                pictures.append(picture)
                shown.append(copy)
            }
            let columns = (width + 15) / 16, rows = (height + 15) / 16
            var expected = [UInt8](repeating: 0, count: columns * rows)
            for row in 0..<rows {
                for column in 0..<columns {
                    var within = true
                    for (plane, (planeWidth, planeHeight)) in sizes.enumerated() {
                        let side = plane == 0 ? 16 : 8, stride = planeWidth + 7
                        for y in row * side..<min(planeHeight, (row + 1) * side) {
                            for x in column * side..<min(planeWidth, (column + 1) * side)
                            where abs(Int(pictures[plane][y * stride + x]) - Int(shown[plane][y * stride + x])) > 1 {
                                within = false
                            }
                        }
                    }
                    expected[row * columns + column] = within ? 0 : 1
                }
            }
            var settled = SettledBlocks()
            let count = pictures[0].withUnsafeBufferPointer { y0 in
                pictures[1].withUnsafeBufferPointer { u0 in
                    pictures[2].withUnsafeBufferPointer { v0 in
                        shown[0].withUnsafeBufferPointer { y1 in
                            shown[1].withUnsafeBufferPointer { u1 in
                                shown[2].withUnsafeBufferPointer { v1 in
                                    settled.update(width: width, height: height,
                                                   source: (.init(base: y0.baseAddress!, stride: width + 7),
                                                            .init(base: u0.baseAddress!, stride: chroma.width + 7),
                                                            .init(base: v0.baseAddress!, stride: chroma.width + 7)),
                                                   reconstruction: (.init(base: y1.baseAddress!, stride: width + 7),
                                                                    .init(base: u1.baseAddress!, stride: chroma.width + 7),
                                                                    .init(base: v1.baseAddress!, stride: chroma.width + 7)))
                                }
                            }
                        }
                    }
                }
            }
            #expect(settled.activeMap == expected, "\(width)x\(height)")
            #expect(count == expected.count { $0 == 0 }, "\(width)x\(height)")
        }
    }
}

/// The segmentation part of a VP8 frame header (RFC 6386 §9.3, §19.2): read with the boolean
/// decoder of §7 from the first partition, after the frame tag (and a key frame's start code and
/// size, and its colour space and clamping bits).
struct VP8SegmentHeader {
    /// The loop filter level of each of the 4 segments as the header sets it (deltas or
    /// absolute values, as it says), or nil when the frame updates no segment data.
    var loopFilterDeltas: [Int]?

    enum Failure: Error { case truncated }

    init(_ frame: [UInt8]) throws {
        guard frame.count >= 3 else { throw Failure.truncated }
        let keyFrame = frame[0] & 1 == 0
        var reader = BoolReader(Array(frame.dropFirst(keyFrame ? 10 : 3)))
        if keyFrame { _ = reader.literal(2) }  // color_space, clamping_type
        guard reader.literal(1) == 1 else { return }  // segmentation_enabled
        _ = reader.literal(1)  // update_mb_segmentation_map
        guard reader.literal(1) == 1 else { return }  // update_segment_feature_data
        _ = reader.literal(1)  // segment_feature_mode
        for _ in 0..<4 {  // quantizer: flag, 7-bit magnitude, sign
            if reader.literal(1) == 1 { _ = reader.literal(8) }
        }
        var levels: [Int] = []
        for _ in 0..<4 {
            if reader.literal(1) == 1 {
                let magnitude = reader.literal(6)
                levels.append(reader.literal(1) == 1 ? -magnitude : magnitude)
            } else {
                levels.append(0)
            }
        }
        loopFilterDeltas = levels
    }

    /// RFC 6386 §7.3's boolean decoder, reading literals at probability 1/2.
    struct BoolReader {
        let bytes: [UInt8]
        var position = 2, value = 0, range = 255, bitCount = 0

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            value = (Int(bytes.first ?? 0) << 8) | Int(bytes.count > 1 ? bytes[1] : 0)
        }

        mutating func bit() -> Int {
            let split = 1 + (((range - 1) * 128) >> 8), bigSplit = split << 8
            let result: Int
            if value >= bigSplit {
                result = 1
                range -= split
                value -= bigSplit
            } else {
                result = 0
                range = split
            }
            while range < 128 {
                value <<= 1
                range <<= 1
                bitCount += 1
                if bitCount == 8 {
                    bitCount = 0
                    if position < bytes.count { value |= Int(bytes[position]) }
                    position += 1
                }
            }
            return result
        }

        mutating func literal(_ bits: Int) -> Int {
            (0..<bits).reduce(0) { total, _ in (total << 1) | bit() }
        }
    }
}
