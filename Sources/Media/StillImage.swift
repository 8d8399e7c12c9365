internal import CAVFormat
private import CYUV

/// Why a still picture could not be read.
public enum StillImageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Neither PNG nor JPEG by its first bytes.
    case unsupportedFormat
    /// A PNG or JPEG libavcodec could not decode (cut short, corrupt).
    case corrupt(String)
    /// Larger than the limit, in pixels.
    case tooLarge(width: Int, height: Int, maximumPixels: Int)
    /// A pixel format this reader does not turn into I420 (16-bit channels, grey with alpha).
    case unsupportedPixelFormat(String)

    public var description: String {
        switch self {
        case .unsupportedFormat: "not a PNG or JPEG picture"
        case .corrupt(let why): "the picture cannot be decoded: \(why)"
        case .tooLarge(let width, let height, let maximum): "the picture is \(width)x\(height), over the limit of \(maximum) pixels"
        case .unsupportedPixelFormat(let name): "pixel format \(name) is not supported: use 8-bit RGB, RGBA, grey or a palette"
        }
    }
}

/// A PNG or JPEG picture (an avatar, a "camera off" card) decoded into an I420 frame: by
/// libavcodec's `png` and `mjpeg` decoders, converted by libyuv (full-range JPEG YUV and RGB
/// to the limited-range BT.601 the compositor draws). Alpha is dropped. The size is checked
/// before any picture is allocated (`max_pixels`), so a small file that claims a huge picture
/// costs nothing.
public enum StillImage {
    public static func decode(_ bytes: [UInt8], maximumPixels: Int = 4096 * 4096) throws(StillImageError) -> I420Frame {
        let codecID: AVCodecID
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            codecID = AV_CODEC_ID_PNG
        } else if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            codecID = AV_CODEC_ID_MJPEG
        } else {
            throw .unsupportedFormat
        }
        if let (width, height) = declaredSize(bytes, isPNG: codecID == AV_CODEC_ID_PNG),
           width.multipliedReportingOverflow(by: height).overflow || width * height > maximumPixels {
            throw .tooLarge(width: width, height: height, maximumPixels: maximumPixels)
        }
        _ = LibAV.quiet
        guard let codec = avcodec_find_decoder(codecID) else { throw .corrupt("libavcodec has no \(codecID == AV_CODEC_ID_PNG ? "png" : "mjpeg") decoder") }
        var allocated: UnsafeMutablePointer<AVCodecContext>? = avcodec_alloc_context3(codec)
        defer { avcodec_free_context(&allocated) }
        guard let context = allocated else { throw .corrupt("out of memory") }
        context.pointee.max_pixels = Int64(maximumPixels)
        guard avcodec_open2(context, codec, nil) >= 0 else { throw .corrupt("the decoder did not open") }
        var allocatedPacket: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        defer { av_packet_free(&allocatedPacket) }
        var allocatedFrame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer { av_frame_free(&allocatedFrame) }
        guard let packet = allocatedPacket, let frame = allocatedFrame else { throw .corrupt("out of memory") }

        // The decoder reads up to AV_INPUT_BUFFER_PADDING_SIZE past the end: the copy is padded.
        let padded = bytes + [UInt8](repeating: 0, count: Int(tessera_AV_INPUT_BUFFER_PADDING_SIZE()))
        let sent: Int32 = padded.withUnsafeBufferPointer { buffer in
            packet.pointee.data = UnsafeMutablePointer(mutating: buffer.baseAddress)
            packet.pointee.size = Int32(bytes.count)
            defer {
                packet.pointee.data = nil
                packet.pointee.size = 0
            }
            return avcodec_send_packet(context, packet)
        }
        var status = sent >= 0 ? avcodec_receive_frame(context, frame) : sent
        if status == tessera_AVERROR_EAGAIN() {
            avcodec_send_packet(context, nil)  // drain: a decoder that holds the picture back gives it now
            status = avcodec_receive_frame(context, frame)
        }
        guard status >= 0 else { throw .corrupt(LibAV.message(status)) }
        return try convert(frame)
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

    /// The decoded picture as I420, from the formats PNG and JPEG decode to.
    private static func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(StillImageError) -> I420Frame {
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        guard width > 0, height > 0 else { throw .corrupt("an empty picture") }
        let format = AVPixelFormat(rawValue: frame.pointee.format)
        let planes = (frame.pointee.data.0, frame.pointee.data.1, frame.pointee.data.2)
        let strides = (frame.pointee.linesize.0, frame.pointee.linesize.1, frame.pointee.linesize.2)
        var out = I420Frame(width: width, height: height)
        let chromaStride = Int32(out.chromaWidth)
        let w = Int32(width), h = Int32(height)
        // Formats libyuv turns into I420 in one step.
        let direct: Int32? = out.withMutablePlanes { y, u, v -> Int32? in
            guard let source = planes.0 else { return -1 }
            switch format {
            case AV_PIX_FMT_RGBA: return ABGRToI420(source, strides.0, y, w, u, chromaStride, v, chromaStride, w, h)
            case AV_PIX_FMT_BGRA: return ARGBToI420(source, strides.0, y, w, u, chromaStride, v, chromaStride, w, h)
            case AV_PIX_FMT_RGB24: return RAWToI420(source, strides.0, y, w, u, chromaStride, v, chromaStride, w, h)
            case AV_PIX_FMT_BGR24: return RGB24ToI420(source, strides.0, y, w, u, chromaStride, v, chromaStride, w, h)
            case AV_PIX_FMT_YUV420P:
                guard let sourceU = planes.1, let sourceV = planes.2 else { return -1 }
                return I420Copy(source, strides.0, sourceU, strides.1, sourceV, strides.2, y, w, u, chromaStride, v, chromaStride, w, h)
            default: return nil
            }
        }
        if let direct {
            guard direct == 0 else { throw .corrupt("conversion failed") }
            return out
        }
        // The others through ARGB (libyuv's byte order B, G, R, A).
        var argb = [UInt8](repeating: 255, count: width * height * 4)
        let converted: Int32 = argb.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let target = buffer.baseAddress, let source = planes.0 else { return -1 }
            let stride = w * 4
            switch format {
            case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P:
                guard let sourceU = planes.1, let sourceV = planes.2 else { return -1 }
                let convert = format == AV_PIX_FMT_YUVJ420P ? J420ToARGB : format == AV_PIX_FMT_YUVJ422P ? J422ToARGB : J444ToARGB
                return convert(source, strides.0, sourceU, strides.1, sourceV, strides.2, target, stride, w, h)
            case AV_PIX_FMT_GRAY8:
                return J400ToARGB(source, strides.0, target, stride, w, h)
            case AV_PIX_FMT_PAL8:
                // data[1] holds 256 entries of native-endian 0xAARRGGBB: B, G, R, A in memory here.
                guard let palette = planes.1 else { return -1 }
                for row in 0..<height {
                    for column in 0..<width {
                        let index = Int(source[row * Int(strides.0) + column]) * 4
                        let pixel = (row * width + column) * 4
                        for channel in 0..<4 { target[pixel + channel] = palette[index + channel] }
                    }
                }
                return 0
            default:
                return -2
            }
        }
        if converted == -2 {
            throw .unsupportedPixelFormat(av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "\(format.rawValue)")
        }
        guard converted == 0 else { throw .corrupt("conversion failed") }
        let status = out.withMutablePlanes { y, u, v in
            argb.withUnsafeBufferPointer { ARGBToI420($0.baseAddress, w * 4, y, w, u, chromaStride, v, chromaStride, w, h) }
        }
        guard status == 0 else { throw .corrupt("conversion failed") }
        return out
    }
}
