private import CVPX
import Wire

/// A libvpx VP8 decoder: compressed frames in (as `VP8FrameAssembler` hands them over), packed
/// I420 pictures out. Key frames may change the picture size mid-stream; ``frameSize`` follows.
///
/// Bad input never traps: libvpx's refusals become ``VP8CodecError``s, and after one the decoder
/// waits for the next key frame (inter frames until then are refused with
/// ``VP8CodecError/waitingForKeyFrame``), since they would predict from a damaged picture.
/// Not `Sendable`: one room's thread owns each decoder.
public final class VP8Decoder {
    /// The size of the last decoded picture; nil before the first.
    public private(set) var frameSize: (width: Int, height: Int)?
    /// Whether the decoder will refuse inter frames until a key frame comes (at the start and
    /// after an error): the caller should send a PLI.
    public private(set) var needsKeyFrame = true
    /// Frames decoded into pictures.
    public private(set) var framesDecoded = 0
    /// Frames refused as corrupt, or skipped while waiting for a key frame.
    public private(set) var framesRefused = 0

    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private var isOpen = false

    /// The largest picture accepted, in pixels: a key frame announcing more is refused before
    /// libvpx allocates for it (a hostile 16383x16383 header would cost gigabytes).
    public let maximumPixels: Int

    /// Starts a decoder (`threads` for large pictures; 1 is right for conference tiles).
    /// `maximumPixels` defaults to 3840x2160.
    public init(threads: Int = 1, maximumPixels: Int = 3840 * 2160) throws(VP8CodecError) {
        guard (1...16).contains(threads) else { throw .invalidConfiguration("\(threads) threads is outside 1...16") }
        guard maximumPixels > 0 else { throw .invalidConfiguration("maximumPixels \(maximumPixels) is not positive") }
        self.maximumPixels = maximumPixels
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        var config = vpx_codec_dec_cfg_t(threads: UInt32(threads), w: 0, h: 0)
        let status = tessera_vpx_dec_init_vp8(context, &config, 0)
        // Fully initialized here: if this throws, deinit frees the context.
        guard status == VPX_CODEC_OK else { throw .initializationFailed(vpxErrorText(nil, status)) }
        isOpen = true
    }

    deinit {
        if isOpen { vpx_codec_destroy(context) }
        context.deallocate()
        keptPicture?.deallocate()
    }

    /// Whether `data` starts a VP8 key frame (RFC 6386 §9.1: frame tag bit 0 clear, then the
    /// start code 9d 01 2a).
    public static func isKeyFrame(_ data: [UInt8]) -> Bool {
        data.count >= 10 && data[0] & 1 == 0 && data[3] == 0x9D && data[4] == 0x01 && data[5] == 0x2A
    }

    /// Decodes one compressed frame. Returns the picture, or nil when the frame is not meant to
    /// be shown (a VP8 frame with `show_frame` clear). `timestamp` is stamped on the picture.
    public func decode(_ data: [UInt8], timestamp: Instant = Instant(nanoseconds: 0)) throws(VP8CodecError) -> I420Frame? {
        guard let view = try decodePicture(data) else { return nil }
        return I420Frame(copying: view, timestamp: timestamp)
    }

    /// The picture of the last `decodeLending`, in libvpx's own buffer, and its `timestamp`.
    /// Valid until the next `decode` or `decodeLending` call that reaches libvpx, or the
    /// decoder's end: a frame refused before (while waiting for a key frame, too large, empty)
    /// leaves it lent; one that libvpx refuses takes it away (nil). While a frame not to be shown
    /// is decoded, a copy is lent instead (see `keepLentPicture`).
    public private(set) var lentPicture: (view: I420PictureView, timestamp: Instant)?

    /// Decodes as `decode` does, but lends the picture (`lentPicture`) instead of copying it out:
    /// for a caller that draws it before decoding again, on the same thread. Returns whether a
    /// new picture is lent.
    @discardableResult
    public func decodeLending(_ data: [UInt8], timestamp: Instant = Instant(nanoseconds: 0)) throws(VP8CodecError) -> Bool {
        guard let view = try decodePicture(data) else { return false }
        lentPicture = (view, timestamp)
        return true
    }

    /// A packed copy of the last lent picture, in memory of the decoder's own: lent instead while
    /// a frame not to be shown is decoded.
    private var keptPicture: UnsafeMutableBufferPointer<UInt8>?
    private var lendsKeptPicture: Bool {
        guard let lent = lentPicture, let kept = keptPicture?.baseAddress else { return false }
        return lent.view.y == UnsafePointer(kept)
    }

    /// Before libvpx decodes `data`, which may write into any of its buffers: a picture lent from
    /// them ends. A frame not to be shown (an altref, `show_frame` clear: RFC 6386 §9.1) leaves
    /// the picture on show as it was, so a copy of it is lent meanwhile (rare: the copy costs
    /// little).
    private func keepLentPicture(whileDecoding data: [UInt8]) {
        guard let lent = lentPicture, !lendsKeptPicture else { return }
        lentPicture = nil
        guard data[0] & 0x10 == 0 else { return }
        if keptPicture?.count != lent.view.packedSize {
            keptPicture?.deallocate()
            keptPicture = .allocate(capacity: lent.view.packedSize)
        }
        guard let base = keptPicture?.baseAddress else { return }
        lentPicture = (lent.view.copyPacked(into: base), lent.timestamp)
    }

    /// Decodes `data`; the picture to show, in libvpx's buffer, or nil when there is none.
    private func decodePicture(_ data: [UInt8]) throws(VP8CodecError) -> I420PictureView? {
        let keyFrame = Self.isKeyFrame(data)
        if needsKeyFrame && !keyFrame {
            framesRefused += 1
            throw .waitingForKeyFrame
        }
        guard !data.isEmpty, data.count <= 16 << 20 else {
            framesRefused += 1
            throw .corruptFrame("\(data.count) bytes")
        }
        if keyFrame {
            // RFC 6386 §9.1: 14-bit width and height after the start code (2 bits of scaling above).
            let width = Int(data[6]) | Int(data[7] & 0x3F) << 8, height = Int(data[8]) | Int(data[9] & 0x3F) << 8
            guard width > 0, height > 0, width * height <= maximumPixels else {
                framesRefused += 1
                needsKeyFrame = true
                throw .pictureTooLarge(width: width, height: height)
            }
        }
        let context = context
        keepLentPicture(whileDecoding: data)
        let status = data.withUnsafeBufferPointer { buffer in
            vpx_codec_decode(context, buffer.baseAddress, UInt32(buffer.count), nil, 0)
        }
        guard status == VPX_CODEC_OK else {
            framesRefused += 1
            needsKeyFrame = true
            lentPicture = nil
            throw .corruptFrame(vpxErrorText(context, status))
        }
        var corrupted: Int32 = 0
        if tessera_vpx_control_int_pointer(context, Int32(VP8D_GET_FRAME_CORRUPTED.rawValue), &corrupted) == VPX_CODEC_OK,
           corrupted != 0 {
            // Drain the picture so that libvpx's queue stays empty, then refuse it.
            var iterator: vpx_codec_iter_t?
            while vpx_codec_get_frame(context, &iterator) != nil {}
            framesRefused += 1
            needsKeyFrame = true
            lentPicture = nil
            throw .corruptReference
        }
        if keyFrame { needsKeyFrame = false }

        var picture: I420PictureView?
        var iterator: vpx_codec_iter_t?
        while let image = vpx_codec_get_frame(context, &iterator) {
            picture = Self.view(of: image)
        }
        if let picture {
            framesDecoded += 1
            frameSize = (picture.width, picture.height)
        }
        return picture
    }

    /// A libvpx picture's planes (rows padded past the width), when it is I420 of a sane size.
    private static func view(of image: UnsafeMutablePointer<vpx_image_t>) -> I420PictureView? {
        let width = Int(image.pointee.d_w), height = Int(image.pointee.d_h)
        let strides = (Int(image.pointee.stride.0), Int(image.pointee.stride.1), Int(image.pointee.stride.2))
        guard image.pointee.fmt == VPX_IMG_FMT_I420, width > 0, height > 0, width <= 16384, height <= 16384,
              strides.0 >= width, strides.1 == strides.2, strides.1 >= I420Frame.chromaSide(width),
              let y = image.pointee.planes.0, let u = image.pointee.planes.1, let v = image.pointee.planes.2 else { return nil }
        return I420PictureView(width: width, height: height, y: y, u: u, v: v, lumaStride: strides.0, chromaStride: strides.1)
    }
}

extension VP8Decoder: PictureLender {}

/// libvpx's words for an error on `context`, or for `code` alone.
private func vpxErrorText(_ context: UnsafeMutablePointer<vpx_codec_ctx_t>?, _ code: vpx_codec_err_t) -> String {
    var text = String(cString: vpx_codec_err_to_string(code))
    if let context, let detail = vpx_codec_error_detail(context) { text += " (\(String(cString: detail)))" }
    return text
}
