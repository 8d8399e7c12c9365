import Media
import Testing
import Wire
import WireTesting

@Suite struct VP8CodecTests {
    let background = YUVColor(red: 40, green: 120, blue: 200)
    let bar = YUVColor(red: 250, green: 200, blue: 20)

    /// A solid picture with a bar that moves 16 pixels a frame.
    func picture(_ index: Int, width: Int = 640, height: Int = 360) -> I420Frame {
        var frame = I420Frame(width: width, height: height, color: background,
                              timestamp: .milliseconds(UInt64(index) * 33))
        frame.fill(PixelRect(x: (index * 16) % (width - 40), y: 0, width: 40, height: height), with: bar)
        return frame
    }

    /// A moving crop of smooth seeded noise (blown up from a small field): texture that takes
    /// more bits than a low rate allows, yet compresses.
    struct NoiseSource {
        let field: I420Frame
        init(width: Int, height: Int) {
            var generator = SeededGenerator(seed: 7)
            let w = (width + 128) / 4, h = (height + 128) / 4
            var bytes = [UInt8](repeating: 0, count: w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2))
            for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
            field = (I420Frame(width: w, height: h, packed: bytes) ?? I420Frame(width: w, height: h))
                .scaled(width: width + 128, height: height + 128)
            size = (width, height)
        }
        let size: (Int, Int)
        func frame(_ index: Int) -> I420Frame {
            var frame = field.cropped(to: PixelRect(x: (index * 6) % 128, y: (index * 4) % 128, width: size.0, height: size.1))
            frame.timestamp = .milliseconds(UInt64(index) * 33)
            return frame
        }
    }

    @Test func aMovingBarPictureComesBackWithItsColoursAndSize() throws {
        let encoder = try VP8Encoder(.init(width: 640, height: 360, bitrate: 600_000))
        let decoder = try VP8Decoder()
        var last: I420Frame?
        for index in 0..<10 {
            for encoded in try encoder.encode(picture(index)) {
                #expect(encoded.width == 640 && encoded.height == 360)
                last = try decoder.decode(encoded.data) ?? last
            }
        }
        let decoded = try #require(last)
        #expect(decoded.width == 640 && decoded.height == 360)
        #expect(decoder.frameSize?.width == 640 && decoder.frameSize?.height == 360)
        #expect(decoded.pixel(x: 320, y: 180).isClose(to: background), "centre is \(decoded.pixel(x: 320, y: 180))")
        // Frame 9's bar is at x 144...184: its middle, halfway down.
        let barX = 9 * 16 + 20
        #expect(decoded.pixel(x: barX, y: 100).isClose(to: bar), "bar is \(decoded.pixel(x: barX, y: 100))")
        #expect(decoded.pixel(x: barX + 80, y: 100).isClose(to: background))
    }

    @Test func theFirstFrameIsAKeyFrameAndSoIsTheOneAfterARequest() throws {
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000))
        var keys: [Bool] = []
        for index in 0..<12 {
            if index == 8 { encoder.requestKeyFrame() }
            keys += try encoder.encode(picture(index, width: 320, height: 180)).map(\.isKeyFrame)
        }
        #expect(keys.count == 12)
        #expect(keys.indices.filter { keys[$0] } == [0, 8])
    }

    @Test func timestampsRunOnTheNinetyKilohertzClockFromCaptureTimes() throws {
        let encoder = try VP8Encoder(.init(width: 160, height: 120, bitrate: 100_000))
        let stamps = try (0..<4).flatMap { try encoder.encode(picture($0, width: 160, height: 120)) }.map(\.rtpTimestamp)
        #expect(stamps == [0, 2970, 5940, 8910])  // 33 ms apart
        // Pictures without capture times advance one frame duration each (30 fps: 3000).
        let untimed = try VP8Encoder(.init(width: 160, height: 120, bitrate: 100_000))
        let steps = try (0..<3).flatMap { _ in try untimed.encode(I420Frame(width: 160, height: 120)) }.map(\.rtpTimestamp)
        #expect(steps == [0, 3000, 6000])
    }

    @Test func aLowerBitrateMakesSmallerFrames() throws {
        let source = NoiseSource(width: 320, height: 180)
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 1_000_000))
        var high = 0, low = 0
        for index in 0..<30 {
            let bytes = try encoder.encode(source.frame(index)).reduce(0) { $0 + $1.data.count }
            if index >= 10 { high += bytes }
        }
        try encoder.setBitrate(150_000)
        #expect(encoder.configuration.bitrate == 150_000)
        for index in 30..<60 {
            let bytes = try encoder.encode(source.frame(index)).reduce(0) { $0 + $1.data.count }
            if index >= 40 { low += bytes }
        }
        // 20 frames at 30 fps: 1 Mbit/s is about 83 kB, 150 kbit/s about 12.5 kB. Measured 74.5 kB
        // and 23.8 kB: this texture needs more than 150 kbit/s even at the coarsest quantizer.
        #expect(low * 2 < high, "bytes at 1 Mbit/s \(high), at 150 kbit/s \(low)")
    }

    @Test func aPictureOfAnotherSizeRestartsTheEncoderWithAKeyFrame() throws {
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000))
        let decoder = try VP8Decoder()
        for index in 0..<3 {
            for frame in try encoder.encode(picture(index, width: 320, height: 180)) { _ = try decoder.decode(frame.data) }
        }
        let resized = try encoder.encode(picture(3, width: 176, height: 144))
        #expect(resized.map(\.isKeyFrame) == [true])
        #expect(resized.first?.width == 176 && encoder.configuration.width == 176)
        let decoded = try decoder.decode(try #require(resized.first).data)
        #expect(decoded?.width == 176 && decoded?.height == 144)
        #expect(decoder.frameSize?.width == 176)
        #expect(resized.first.map { $0.rtpTimestamp > 0 } == true, "the RTP clock goes on across the restart")
    }

    @Test func oddSizesKeepTheirChromaAligned() throws {
        let encoder = try VP8Encoder(.init(width: 161, height: 121, bitrate: 200_000))
        let decoder = try VP8Decoder()
        var last: I420Frame?
        for index in 0..<5 {
            var frame = I420Frame(width: 161, height: 121, color: background, timestamp: .milliseconds(UInt64(index) * 33))
            frame.fill(PixelRect(x: 0, y: 60, width: 161, height: 61), with: bar)
            for encoded in try encoder.encode(frame) { last = try decoder.decode(encoded.data) ?? last }
        }
        let decoded = try #require(last)
        #expect(decoded.width == 161 && decoded.height == 121)
        #expect(decoded.pixel(x: 150, y: 20).isClose(to: background))
        #expect(decoded.pixel(x: 150, y: 100).isClose(to: bar))
    }

    @Test func badSettingsAreRefusedWithTheReason() {
        #expect(throws: VP8CodecError.invalidConfiguration("size 0x360 is outside 2...16384")) {
            try VP8Encoder(.init(width: 0, height: 360))
        }
        #expect(throws: VP8CodecError.self) { try VP8Encoder(.init(width: 320, height: 180, cpuUsed: 40)) }
        #expect(throws: VP8CodecError.self) { try VP8Encoder(.init(width: 320, height: 180)).setBitrate(5) }
    }

    @Test func anInterFrameBeforeAnyKeyFrameIsRefused() throws {
        let encoder = try VP8Encoder(.init(width: 160, height: 120, bitrate: 100_000))
        let frames = try (0..<2).flatMap { try encoder.encode(picture($0, width: 160, height: 120)) }
        let decoder = try VP8Decoder()
        #expect(throws: VP8CodecError.waitingForKeyFrame) { try decoder.decode(frames[1].data) }
        #expect(throws: VP8CodecError.self) { try decoder.decode([]) }
        #expect(decoder.needsKeyFrame)
        #expect(try decoder.decode(frames[0].data)?.width == 160)
        #expect(try decoder.decode(frames[1].data)?.width == 160)
    }

    @Test func aKeyFrameAnnouncingAHugePictureIsRefusedBeforeAllocating() throws {
        let encoder = try VP8Encoder(.init(width: 160, height: 120, bitrate: 100_000))
        var key = try #require(try encoder.encode(picture(0, width: 160, height: 120)).first).data
        key[6] = 0xFF; key[7] = 0x3F; key[8] = 0xFF; key[9] = 0x3F
        #expect(throws: VP8CodecError.pictureTooLarge(width: 16383, height: 16383)) { try VP8Decoder().decode(key) }
    }

    @Test func mutatedAndTruncatedFramesGiveErrorsOrPicturesNeverTraps() throws {
        let encoder = try VP8Encoder(.init(width: 160, height: 120, bitrate: 150_000))
        let stream = try (0..<6).flatMap { try encoder.encode(picture($0, width: 160, height: 120)) }.map(\.data)
        let decoder = try VP8Decoder()
        var mutator = Mutator(seed: 0x5650_3800)
        var pictures = 0, errors = 0
        for index in 0..<2000 {
            if index % 25 == 0 { _ = try decoder.decode(stream[0]) }  // back on a good key frame now and then
            let original = stream[index % stream.count]
            do {
                if let picture = try decoder.decode(mutator.mutate(original)) {
                    pictures += 1
                    #expect(picture.data.count == picture.width * picture.height + 2 * picture.chromaSize)
                }
            } catch {
                errors += 1
            }
        }
        for prefix in Mutator.truncations(of: stream[0]) where prefix.count % 7 == 0 {
            do { _ = try decoder.decode(prefix) } catch { errors += 1 }
        }
        #expect(pictures > 0 && errors > 0, "pictures \(pictures), errors \(errors)")
        // And the decoder still works.
        #expect(try decoder.decode(stream[0])?.pixel(x: 150, y: 60).isClose(to: background) == true)
    }

    /// A lending decoder lends, in libvpx's buffer, exactly the picture a copying one returns;
    /// a frame refused before libvpx leaves the lent picture as it was, one libvpx refuses takes
    /// it away; a mutated stream never lends a picture of the wrong shape.
    @Test func aLentPictureIsTheDecodedPictureUntilLibvpxIsCalledAgain() throws {
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000))
        let stream = try (0..<8).flatMap { try encoder.encode(picture($0, width: 320, height: 180)) }.map(\.data)
        let copying = try VP8Decoder(), lending = try VP8Decoder()
        for (index, frame) in stream.enumerated() {
            let copied = try #require(try copying.decode(frame, timestamp: .milliseconds(UInt64(index))))
            #expect(try lending.decodeLending(frame, timestamp: .milliseconds(UInt64(index))))
            let lent = try #require(lending.lentPicture)
            #expect(lent.view.lumaStride > lent.view.width, "libvpx's rows are padded: the view is not a packed copy")
            #expect(I420Frame(copying: lent.view, timestamp: lent.timestamp) == copied, "frame \(index)")
        }
        #expect(lending.framesDecoded == stream.count && lending.frameSize?.width == 320)
        #expect(throws: VP8CodecError.self) { try lending.decodeLending([]) }
        #expect(lending.lentPicture != nil, "an empty frame never reached libvpx")
        var damaged = stream[3]
        for index in 10..<damaged.count { damaged[index] ^= 0x5A }
        _ = try? lending.decodeLending(damaged)
        #expect(lending.lentPicture == nil || lending.lentPicture?.view.width == 320)
        #expect(throws: VP8CodecError.self) { try lending.decodeLending(Array(stream[0].prefix(12))) }
        #expect(lending.lentPicture == nil, "libvpx refused a frame: its buffers may have changed")
        #expect(try lending.decodeLending(stream[0]) && lending.lentPicture?.view.width == 320)
    }

    /// A frame not to be shown (an altref: `show_frame` clear) lends nothing new, and the picture
    /// on show stays lent (a copy of it, as libvpx may decode into the buffer it was in).
    @Test func aFrameNotToBeShownLeavesThePictureOnShowLent() throws {
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 300_000))
        let stream = try (0..<4).flatMap { try encoder.encode(picture($0 * 3, width: 320, height: 180)) }.map(\.data)
        let reference = try VP8Decoder(), lending = try VP8Decoder()
        let shown = try #require(try reference.decode(stream[0], timestamp: .milliseconds(5)))
        #expect(try lending.decodeLending(stream[0], timestamp: .milliseconds(5)))
        var hidden = stream[1]
        hidden[0] &= ~0x10
        #expect(try reference.decode(hidden) == nil)
        #expect(try !lending.decodeLending(hidden, timestamp: .milliseconds(6)))
        let kept = try #require(lending.lentPicture)
        #expect(kept.timestamp == .milliseconds(5) && I420Frame(copying: kept.view, timestamp: kept.timestamp) == shown)
        // The next shown frame predicts from what the hidden one left, in both decoders alike.
        let expected = try #require(try reference.decode(stream[2], timestamp: .milliseconds(7)))
        #expect(try lending.decodeLending(stream[2], timestamp: .milliseconds(7)))
        let next = try #require(lending.lentPicture)
        #expect(I420Frame(copying: next.view, timestamp: next.timestamp) == expected)
    }
}
