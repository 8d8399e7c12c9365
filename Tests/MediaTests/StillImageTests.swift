import Media
import Testing
import WireTesting

/// PNG and JPEG pictures (a participant's placeholder) decoded into I420 by libavcodec and
/// libyuv: each format a browser or an image editor writes comes out the size and colour it
/// was; anything else, mutated or cut short, is a clear error.
@Suite struct StillImageTests {
    static let red = YUVColor(red: 220, green: 30, blue: 30)

    @Test(arguments: [("png", "rgb24"), ("png", "rgba"), ("png", "pal8"), ("png", "bgra"), ("mjpeg", "yuvj420p"),
                      ("mjpeg", "yuvj422p"), ("mjpeg", "yuvj444p")])
    func aPictureComesOutItsSizeAndColour(codec: String, pixelFormat: String) throws {
        let bytes = try stillPicture(codec: codec, pixelFormat: pixelFormat, rgb: "DC1E1E", width: 64, height: 48)
        try #require(!bytes.isEmpty, "ffmpeg made no \(codec) \(pixelFormat)")
        let picture = try StillImage.decode(bytes)
        #expect((picture.width, picture.height) == (64, 48))
        let centre = picture.pixel(x: 32, y: 24)
        #expect(centre.isClose(to: Self.red, tolerance: 16), "\(codec) \(pixelFormat): \(centre)")
    }

    @Test func greyComesOutGrey() throws {
        let picture = try StillImage.decode(try stillPicture(codec: "png", pixelFormat: "gray", rgb: "808080", width: 16, height: 16))
        let centre = picture.pixel(x: 8, y: 8)
        #expect(abs(Int(centre.u) - 128) <= 2 && abs(Int(centre.v) - 128) <= 2 && abs(Int(centre.y) - 126) <= 8, "\(centre)")
    }

    @Test func whatIsNotAPictureIsRefusedWithTheReason() throws {
        #expect(throws: StillImageError.unsupportedFormat) { try StillImage.decode(Array("GIF89a".utf8)) }
        #expect(throws: StillImageError.unsupportedFormat) { try StillImage.decode([]) }
        let deep = try stillPicture(codec: "png", pixelFormat: "rgb48be", rgb: "DC1E1E", width: 8, height: 8)
        #expect(throws: StillImageError.self) { try StillImage.decode(deep) }
        let big = try stillPicture(codec: "png", pixelFormat: "rgb24", rgb: "000000", width: 400, height: 300)
        #expect(throws: StillImageError.tooLarge(width: 400, height: 300, maximumPixels: 10_000)) {
            try StillImage.decode(big, maximumPixels: 10_000)
        }
        let bigJPEG = try stillPicture(codec: "mjpeg", pixelFormat: "yuvj420p", rgb: "000000", width: 400, height: 300)
        #expect(throws: StillImageError.tooLarge(width: 400, height: 300, maximumPixels: 10_000)) {
            try StillImage.decode(bigJPEG, maximumPixels: 10_000)
        }
    }

    /// Mutated and truncated PNGs and JPEGs: a picture or an error, never a trap.
    @Test func mutatedAndTruncatedPicturesNeverTrap() throws {
        var mutator = Mutator(seed: 14)
        for (codec, format) in [("png", "rgb24"), ("png", "pal8"), ("mjpeg", "yuvj420p")] {
            let bytes = try stillPicture(codec: codec, pixelFormat: format, rgb: "1E1EDC", width: 24, height: 16)
            for truncated in Mutator.truncations(of: bytes) { _ = try? StillImage.decode(truncated) }
            for _ in 0..<600 { _ = try? StillImage.decode(mutator.mutate(bytes)) }
        }
    }
}
