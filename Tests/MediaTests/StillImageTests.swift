import Media
import Testing
import WireTesting

/// PNG and JPEG pictures (a participant's placeholder) decoded into I420 by libpng, TurboJPEG
/// and libyuv: each format a browser or an image editor writes comes out the size and colour it
/// was; anything else, mutated or cut short, is a clear error.
@Suite struct StillImageTests {
    static let red = YUVColor(red: 220, green: 30, blue: 30)

    /// 16-bit PNGs too: libpng's simplified API reads them as 8-bit.
    @Test(arguments: [("png", "rgb24"), ("png", "rgba"), ("png", "pal8"), ("png", "bgra"), ("png", "rgb48be"), ("png", "rgba64be"),
                      ("mjpeg", "yuvj420p"), ("mjpeg", "yuvj422p"), ("mjpeg", "yuvj444p")])
    func aPictureComesOutItsSizeAndColour(codec: String, pixelFormat: String) throws {
        let bytes = try stillPicture(codec: codec, pixelFormat: pixelFormat, rgb: "DC1E1E", width: 64, height: 48)
        try #require(!bytes.isEmpty, "ffmpeg made no \(codec) \(pixelFormat)")
        let picture = try StillImage.decode(bytes)
        #expect((picture.width, picture.height) == (64, 48))
        let centre = picture.pixel(x: 32, y: 24)
        #expect(centre.isClose(to: Self.red, tolerance: 16), "\(codec) \(pixelFormat): \(centre)")
    }

    @Test(arguments: ["gray", "ya8", "gray16be"])
    func greyComesOutGrey(pixelFormat: String) throws {
        let picture = try StillImage.decode(try stillPicture(codec: "png", pixelFormat: pixelFormat, rgb: "808080", width: 16, height: 16))
        let centre = picture.pixel(x: 8, y: 8)
        #expect(abs(Int(centre.u) - 128) <= 2 && abs(Int(centre.v) - 128) <= 2 && abs(Int(centre.y) - 126) <= 8, "\(centre)")
    }

    /// Odd sides: the last column and row, and their chroma, are the picture's colour too (the
    /// conversion writes every sample; nothing is cleared first).
    @Test func anOddSizedPictureIsItsColourToTheLastSample() throws {
        // Cropped in RGB: ffmpeg's colour source itself makes even sides only.
        let png = [UInt8](try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=0xDC1E1E:s=16x10", "-frames:v", "1",
                                                 "-vf", "format=rgb24,crop=15:9:0:0", "-c:v", "png", "-f", "image2pipe", "-"]))
        let picture = try StillImage.decode(png)
        #expect((picture.width, picture.height) == (15, 9))
        for (x, y) in [(0, 0), (14, 0), (0, 8), (14, 8), (7, 4)] {
            #expect(picture.pixel(x: x, y: y).isClose(to: Self.red, tolerance: 16), "(\(x), \(y)): \(picture.pixel(x: x, y: y))")
        }
    }

    @Test func whatIsNotAPictureIsRefusedWithTheReason() throws {
        #expect(throws: StillImageError.unsupportedFormat) { try StillImage.decode(Array("GIF89a".utf8)) }
        #expect(throws: StillImageError.unsupportedFormat) { try StillImage.decode([]) }
        let big = try stillPicture(codec: "png", pixelFormat: "rgb24", rgb: "000000", width: 400, height: 300)
        #expect(throws: StillImageError.tooLarge(width: 400, height: 300, maximumPixels: 10_000)) {
            try StillImage.decode(big, maximumPixels: 10_000)
        }
        let bigJPEG = try stillPicture(codec: "mjpeg", pixelFormat: "yuvj420p", rgb: "000000", width: 400, height: 300)
        #expect(throws: StillImageError.tooLarge(width: 400, height: 300, maximumPixels: 10_000)) {
            try StillImage.decode(bigJPEG, maximumPixels: 10_000)
        }
    }

    /// A JPEG that libjpeg warns about is still a picture: here one without its end-of-image
    /// marker ("Premature end of JPEG file"), as a browser shows it.
    @Test func aJPEGWithAWarningIsAPicture() throws {
        let bytes = try stillPicture(codec: "mjpeg", pixelFormat: "yuvj420p", rgb: "DC1E1E", width: 64, height: 48)
        try #require(bytes.suffix(2) == [0xFF, 0xD9])
        let picture = try StillImage.decode(Array(bytes.dropLast(2)))
        #expect((picture.width, picture.height) == (64, 48))
        #expect(picture.pixel(x: 32, y: 24).isClose(to: Self.red, tolerance: 16))
    }

    /// A CMYK JPEG (print software's) is refused by name: libjpeg has no CMYK to RGB. Its
    /// header is enough (ITU T.81 B.2.2, B.2.3): a baseline frame of four components and a scan.
    @Test func aCMYKJPEGIsRefusedByItsColourSpace() {
        let components: [UInt8] = (1...4).flatMap { [UInt8($0), 0x11, 0] }
        let frame: [UInt8] = [0xFF, 0xC0, 0, 20, 8, 0, 8, 0, 8, 4] + components
        let scan: [UInt8] = [0xFF, 0xDA, 0, 14, 4] + (1...4).flatMap { [UInt8($0), 0] } + [0, 63, 0]
        let cmyk: [UInt8] = [0xFF, 0xD8] + frame + scan + [0xFF, 0xD9]
        #expect(throws: StillImageError.unsupportedPixelFormat("CMYK")) { try StillImage.decode(cmyk) }
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
