private import CPNG
private import CTurboJPEG
private import CYUV
import Wire

/// Why a still picture could not be read.
public enum StillImageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither PNG nor JPEG by its first bytes.
    case unsupportedFormat
    /// A PNG or JPEG libpng or TurboJPEG could not decode (cut short, corrupt), with their reason.
    case corrupt(String)
    /// Larger than the limit in pixels, or a side over 16384 (an `I420Frame`'s).
    case tooLarge(width: Int, height: Int, maximumPixels: Int)
    /// A JPEG in a colour space this reader does not turn into I420 (CMYK or YCCK, as print
    /// software writes: libjpeg has no conversion from them to RGB).
    case unsupportedPixelFormat(String)

    public var description: String {
        switch self {
        case .unsupportedFormat: "not a PNG or JPEG picture"
        case .corrupt(let why): "the picture cannot be decoded: \(why)"
        case .tooLarge(let width, let height, let maximum): "the picture is \(width)x\(height), over the limit of \(maximum) pixels or 16384 a side"
        case .unsupportedPixelFormat(let name): "colour space \(name) is not supported: use an RGB or grey JPEG, or a PNG"
        }
    }
}

/// A PNG or JPEG picture (an avatar, a "camera off" card) decoded into an I420 frame: PNG by
/// libpng's simplified API, JPEG by TurboJPEG, both to 8-bit B, G, R, A (libyuv's ARGB), then
/// converted by libyuv to the limited-range BT.601 the compositor draws (full-range JPEG YUV
/// goes through RGB). Alpha is dropped, not composited. The size is checked before any picture
/// is allocated, from the file's own header and again from the decoder's, so a small file that
/// claims a huge picture costs nothing.
public enum StillImage {
    public static func decode(_ bytes: [UInt8], maximumPixels: Int = 4096 * 4096) throws(StillImageError) -> I420Frame {
        let isPNG: Bool
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            isPNG = true
        } else if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            isPNG = false
        } else {
            throw .unsupportedFormat
        }
        if let (width, height) = declaredSize(bytes, isPNG: isPNG), let refusal = oversize(width: width, height: height, maximumPixels: maximumPixels) {
            throw refusal
        }
        let (argb, width, height) = isPNG ? try decodePNG(bytes, maximumPixels: maximumPixels)
                                          : try decodeJPEG(bytes, maximumPixels: maximumPixels)
        let chromaStride = Int32(I420Frame.chromaSide(width)), w = Int32(width), h = Int32(height)
        var status: Int32 = 0
        // libyuv writes every sample, odd sizes' last column and row too: nothing to clear first.
        let out = I420Frame(width: width, height: height, timestamp: Instant(nanoseconds: 0)) { y, u, v in
            status = argb.withUnsafeBufferPointer { ARGBToI420($0.baseAddress, w * 4, y, w, u, chromaStride, v, chromaStride, w, h) }
        }
        guard status == 0 else { throw .corrupt("conversion failed") }
        return out
    }

    /// Why a picture of this size is refused: over `maximumPixels`, or a side over the 16384 an
    /// `I420Frame` holds (a 20000x1 picture is within the pixels).
    private static func oversize(width: Int, height: Int, maximumPixels: Int) -> StillImageError? {
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard overflow || pixels > maximumPixels || width > 16384 || height > 16384 else { return nil }
        return .tooLarge(width: width, height: height, maximumPixels: maximumPixels)
    }

    /// A PNG by libpng's simplified API, which turns every PNG (palette, grey, 16-bit channels,
    /// with or without alpha, interlaced) into 8-bit BGRA, and catches its own errors (its
    /// longjmp stays inside libpng): a failure is a 0 return and `image.message`.
    private static func decodePNG(_ bytes: [UInt8], maximumPixels: Int) throws(StillImageError) -> (argb: [UInt8], width: Int, height: Int) {
        var image = png_image()
        image.version = png_uint_32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }  // after an error or a finished read libpng has freed it: a no-op then
        var argb: [UInt8] = []
        var refusal: StillImageError?
        // libpng reads the memory until png_image_finish_read: both calls inside the one borrow.
        let read: Int32 = bytes.withUnsafeBytes { source in
            guard png_image_begin_read_from_memory(&image, source.baseAddress, source.count) != 0 else { return 0 }
            refusal = oversize(width: Int(image.width), height: Int(image.height), maximumPixels: maximumPixels)
            guard refusal == nil else { return 1 }
            // Untagged 16-bit samples are sRGB, as browsers take every untagged PNG; libpng's
            // simplified API would take them as linear, and lighten them (png.h on this flag).
            image.flags |= png_uint_32(PNG_IMAGE_FLAG_16BIT_sRGB)
            // With alpha kept, 8-bit colours come as they are ("not scaled (pre-multiplied) by the
            // alpha channel", png.h); without, libpng would composite them onto a background.
            image.format = png_uint_32(PNG_FORMAT_BGRA)
            argb = [UInt8](repeating: 0, count: Int(image.width) * Int(image.height) * 4)
            return argb.withUnsafeMutableBytes { target in
                png_image_finish_read(&image, nil, target.baseAddress, Int32(image.width) * 4, nil)
            }
        }
        if let refusal { throw refusal }
        guard read != 0 else {
            let message = withUnsafeBytes(of: image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw .corrupt(message)
        }
        guard image.width > 0, image.height > 0 else { throw .corrupt("an empty picture") }
        return (argb, Int(image.width), Int(image.height))
    }

    /// A JPEG by TurboJPEG: its header for the size and colour space, then the picture as BGRA.
    private static func decodeJPEG(_ bytes: [UInt8], maximumPixels: Int) throws(StillImageError) -> (argb: [UInt8], width: Int, height: Int) {
        guard let handle = tjInitDecompress() else { throw .corrupt(turboJPEGError(nil)) }
        defer { tjDestroy(handle) }
        // TurboJPEG 2.x returns -1 for a warning (TJERR_WARNING) as for an error, and
        // tjDecompressHeader3 refuses a sampling it has no TJSAMP for (subsampling -1) that
        // tjDecompress2 decodes all the same: both have read the size. A header cut short can
        // come back as a warning, or even 0, with no size: the size decides, with TurboJPEG's message.
        func failed(_ status: Int32) -> Bool { status != 0 && tjGetErrorCode(handle) != Int32(TJERR_WARNING.rawValue) }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorSpace: Int32 = -1
        let header = bytes.withUnsafeBufferPointer { source in
            tjDecompressHeader3(handle, source.baseAddress, UInt(source.count), &width, &height, &subsampling, &colorSpace)
        }
        guard !failed(header) || subsampling < 0, width > 0, height > 0 else { throw .corrupt(turboJPEGError(handle)) }
        if let refusal = oversize(width: Int(width), height: Int(height), maximumPixels: maximumPixels) { throw refusal }
        if colorSpace == Int32(TJCS_CMYK.rawValue) { throw .unsupportedPixelFormat("CMYK") }
        if colorSpace == Int32(TJCS_YCCK.rawValue) { throw .unsupportedPixelFormat("YCCK") }

        var argb = [UInt8](repeating: 0, count: Int(width) * Int(height) * 4)
        // TJFLAG_LIMITSCANS: over 500 progressive scans is an error, not minutes of CPU
        // (libjpeg-turbo's "Two Issues with the JPEG Standard"). tjDecompress2 scales a larger
        // picture down to fit width x height, so it never writes past the buffer.
        let status = argb.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                tjDecompress2(handle, source.baseAddress, UInt(source.count), target.baseAddress, width, width * 4, height,
                              Int32(TJPF_BGRA.rawValue), TJFLAG_LIMITSCANS)
            }
        }
        // A warning is a picture: libjpeg has recovered from what it warns about (extraneous bytes
        // before a marker, as some cameras write; data cut short, filled in grey), as browsers show
        // such files. TurboJPEG 2.x keeps the warning flag through a fatal error that follows one,
        // so such a picture comes out cut short (black below): still only our zeroed buffer.
        guard !failed(status) else { throw .corrupt(turboJPEGError(handle)) }
        return (argb, Int(width), Int(height))
    }

    /// TurboJPEG's last error (the instance's, else the thread's: `tjGetErrorStr2`).
    private static func turboJPEGError(_ handle: tjhandle?) -> String {
        tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown error"
    }

    /// The size the file says its picture has: PNG's IHDR (RFC 2083 §4.1.1), or a JPEG's first
    /// start-of-frame segment (ITU T.81 B.2.2); nil when it cannot be read (the decoder says why).
    private static func declaredSize(_ bytes: [UInt8], isPNG: Bool) -> (width: Int, height: Int)? {
        func big(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, at + count <= bytes.count else { return nil }
            return bytes[at..<at + count].reduce(0) { $0 << 8 | Int($1) }
        }
        if isPNG {
            guard let width = big(16, 4), let height = big(20, 4) else { return nil }
            return (width, height)
        }
        var offset = 2
        while let marker = big(offset, 2), marker >> 8 == 0xFF, let length = big(offset + 2, 2), length >= 2 {
            // SOF0…SOF15 but DHT (C4), JPG (C8) and DAC (CC).
            if (0xFFC0...0xFFCF).contains(marker), ![0xFFC4, 0xFFC8, 0xFFCC].contains(marker) {
                guard let height = big(offset + 5, 2), let width = big(offset + 7, 2) else { return nil }
                return (width, height)
            }
            offset += 2 + length
        }
        return nil
    }
}
