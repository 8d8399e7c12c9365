private import CYUV
#if canImport(Glibc)
import Glibc
#endif
import Wire

/// A colour in Y'CbCr (BT.601 limited range, as VP8 and libyuv use).
public struct YUVColor: Sendable, Hashable, CustomStringConvertible {
    public var y: UInt8
    public var u: UInt8
    public var v: UInt8

    public init(y: UInt8, u: UInt8, v: UInt8) {
        self.y = y
        self.u = u
        self.v = v
    }

    /// From 8-bit R'G'B' (BT.601, limited range: the same integer formula as libyuv's RGB→I420).
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        let r = Int(red), g = Int(green), b = Int(blue)
        y = UInt8(clamping: (66 * r + 129 * g + 25 * b + 0x1080) >> 8)
        u = UInt8(clamping: (112 * b - 74 * g - 38 * r + 0x8080) >> 8)
        v = UInt8(clamping: (112 * r - 94 * g - 18 * b + 0x8080) >> 8)
    }

    /// `#rrggbb`; nil for anything else.
    public init?(hex: String) {
        var text = Substring(hex)
        if text.hasPrefix("#") { text = text.dropFirst() }
        guard text.count == 6, let value = UInt32(text, radix: 16) else { return nil }
        self.init(red: UInt8(value >> 16 & 0xFF), green: UInt8(value >> 8 & 0xFF), blue: UInt8(value & 0xFF))
    }

    public static let black = YUVColor(y: 16, u: 128, v: 128)

    /// Whether every component is within `tolerance` of `other` (codecs blur colours a little).
    public func isClose(to other: YUVColor, tolerance: Int = 12) -> Bool {
        abs(Int(y) - Int(other.y)) <= tolerance && abs(Int(u) - Int(other.u)) <= tolerance
            && abs(Int(v) - Int(other.v)) <= tolerance
    }

    public var description: String { "YUV(\(y), \(u), \(v))" }
}

/// A rectangle in pixels, (0, 0) at the top left.
public struct PixelRect: Sendable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// The part of this rectangle inside `bounds` (empty when they do not meet).
    public func clipped(to bounds: PixelRect) -> PixelRect {
        let left = max(x, bounds.x), top = max(y, bounds.y)
        let right = min(x + width, bounds.x + bounds.width), bottom = min(y + height, bounds.y + bounds.height)
        return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    /// Moved and sized to even numbers, so that 4:2:0 chroma lines up (x, y down; size up, within
    /// `bounds`).
    public func evenAligned(within bounds: PixelRect) -> PixelRect {
        let left = x & ~1, top = y & ~1
        let right = min(bounds.x + bounds.width, (x + width + 1) & ~1)
        let bottom = min(bounds.y + bounds.height, (y + height + 1) & ~1)
        return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// Rotation to apply to a picture before showing it (the CVO extension's values).
public enum VideoRotation: Int, Sendable, Hashable, CaseIterable {
    case none = 0, clockwise90 = 90, upsideDown = 180, clockwise270 = 270
}

/// An I420 picture in planes that belong to someone else (a decoder's buffer, lent): read only,
/// and only while the owner keeps them (`VP8Decoder.lentPicture` says how long). A row of a plane
/// may be longer than the picture (`lumaStride`, `chromaStride`). Not `Sendable`: it is pointers.
public struct I420PictureView {
    public let width: Int
    public let height: Int
    public let y: UnsafePointer<UInt8>
    public let u: UnsafePointer<UInt8>
    public let v: UnsafePointer<UInt8>
    /// Bytes from a row of the Y plane to the next, and of the U and V planes.
    public let lumaStride: Int
    public let chromaStride: Int
    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: width, height: height) }
    /// Bytes of the picture packed as `I420Frame` packs it.
    public var packedSize: Int { width * height + 2 * I420Frame.chromaSide(width) * I420Frame.chromaSide(height) }

    public init(width: Int, height: Int, y: UnsafePointer<UInt8>, u: UnsafePointer<UInt8>, v: UnsafePointer<UInt8>,
                lumaStride: Int, chromaStride: Int) {
        (self.width, self.height, self.y, self.u, self.v) = (width, height, y, u, v)
        (self.lumaStride, self.chromaStride) = (lumaStride, chromaStride)
    }

    /// Copies the picture into `destination` (`packedSize` bytes), packed as `I420Frame` packs
    /// it, and returns a view of the copy.
    @discardableResult
    public func copyPacked(into destination: UnsafeMutablePointer<UInt8>) -> I420PictureView {
        let chromaWidth = I420Frame.chromaSide(width), luma = width * height
        let (u, v) = (destination + luma, destination + luma + chromaWidth * I420Frame.chromaSide(height))
        _ = I420Copy(y, Int32(lumaStride), self.u, Int32(chromaStride), self.v, Int32(chromaStride),
                     destination, Int32(width), u, Int32(chromaWidth), v, Int32(chromaWidth), Int32(width), Int32(height))
        return I420PictureView(width: width, height: height, y: destination, u: u, v: v, lumaStride: width, chromaStride: chromaWidth)
    }
}

/// Lends a track its latest picture in the lender's own planes instead of pushing a copy
/// (`VideoTrack.pushLent`): what `tessera compose`'s decoders do, as they decode and draw on
/// one thread.
public protocol PictureLender: AnyObject {
    /// The latest picture and its capture time, valid until the lender changes it; nil when it
    /// has none (see the lender).
    var lentPicture: (view: I420PictureView, timestamp: Instant)? { get }
}

/// A decoded picture in I420 (planar Y'CbCr 4:2:0), the format VP8 decodes to and encodes from.
/// The planes are packed in one buffer: Y (`width` × `height`), then U and V (half size, rounded
/// up). Value semantics: copies share storage until one is written.
public struct I420Frame: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// Y plane, then U, then V.
    public var data: [UInt8]
    /// When the picture was captured, on the host's clock.
    public var timestamp: Instant

    public var chromaWidth: Int { Self.chromaSide(width) }
    public var chromaHeight: Int { Self.chromaSide(height) }
    /// A chroma plane's width (height) for a picture `side` pixels wide (high): 4:2:0 halves
    /// each side, an odd one rounded up.
    public static func chromaSide(_ side: Int) -> Int { (side + 1) / 2 }
    public var lumaSize: Int { width * height }
    public var chromaSize: Int { chromaWidth * chromaHeight }
    public var bounds: PixelRect { PixelRect(x: 0, y: 0, width: width, height: height) }

    /// The luma PSNR of this picture against `reference`, in dB (99 when identical): how near a
    /// decoded picture comes to its source.
    public func lumaPSNR(against reference: I420Frame) -> Double {
        var squared = 0
        for offset in 0..<min(lumaSize, reference.lumaSize) {
            let difference = Int(data[offset]) - Int(reference.data[offset])
            squared += difference * difference
        }
        guard squared > 0 else { return 99 }
        return 10 * log10(255 * 255 * Double(reference.lumaSize) / Double(squared))
    }

    /// A picture filled with `color`.
    public init(width: Int, height: Int, color: YUVColor = .black, timestamp: Instant = Instant(nanoseconds: 0)) {
        let luma = width * height, chroma = Self.chromaSide(width) * Self.chromaSide(height)
        // memset: a frame is made per picture, and element loops are slow in debug builds.
        self.init(width: width, height: height, timestamp: timestamp) { y, u, v in
            memset(y, Int32(color.y), luma)
            memset(u, Int32(color.u), chroma)
            memset(v, Int32(color.v), chroma)
        }
    }

    /// A picture whose every pixel `write` sets, given the planes as `withMutablePlanes` gives
    /// them: no clearing of memory that is written over at once (a decoded picture is copied in,
    /// a scaled one drawn whole).
    init(width: Int, height: Int, timestamp: Instant,
         writingEveryPixel write: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) -> Void) {
        precondition(width > 0 && height > 0 && width <= 16384 && height <= 16384, "picture size out of range")
        self.width = width
        self.height = height
        self.timestamp = timestamp
        let luma = width * height, chroma = Self.chromaSide(width) * Self.chromaSide(height)
        data = [UInt8](unsafeUninitializedCapacity: luma + 2 * chroma) { buffer, count in
            guard let base = buffer.baseAddress else { return }
            write(base, base + luma, base + luma + chroma)
            count = luma + 2 * chroma
        }
    }

    /// A picture from planes already packed as this type packs them; nil when the size is wrong.
    public init?(width: Int, height: Int, packed: [UInt8], timestamp: Instant = Instant(nanoseconds: 0)) {
        guard width > 0, height > 0, width <= 16384, height <= 16384,
              packed.count == width * height + 2 * Self.chromaSide(width) * Self.chromaSide(height) else { return nil }
        self.width = width
        self.height = height
        self.data = packed
        self.timestamp = timestamp
    }

    /// The colour at a pixel (for tests and checks).
    public func pixel(x: Int, y: Int) -> YUVColor {
        let cx = x / 2, cy = y / 2
        return YUVColor(y: data[y * width + x], u: data[lumaSize + cy * chromaWidth + cx],
                        v: data[lumaSize + chromaSize + cy * chromaWidth + cx])
    }

    /// Whether the picture is a sender's mute frame: black below video black (Y ≤ 4, grey
    /// chroma) at each point of an 8×8 grid. What a browser sends for a disabled track
    /// (`track.enabled = false`: WebRTC's frames of Y 0); a camera's limited-range pictures
    /// never go under 16, even in the dark.
    public var isMuteBlack: Bool {
        for row in 0..<8 {
            for column in 0..<8 {
                let seen = pixel(x: (2 * column + 1) * width / 16, y: (2 * row + 1) * height / 16)
                if seen.y > 4 || abs(Int(seen.u) - 128) > 4 || abs(Int(seen.v) - 128) > 4 { return false }
            }
        }
        return true
    }

    /// Fills `rect` (clipped, aligned to even pixels) with `color` (libyuv I420Rect).
    public mutating func fill(_ rect: PixelRect, with color: YUVColor) {
        let area = rect.clipped(to: bounds).evenAligned(within: bounds)
        guard !area.isEmpty else { return }
        let (width, lumaSize, chromaSize, chromaWidth) = (width, lumaSize, chromaSize, chromaWidth)
        data.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            _ = I420Rect(base, Int32(width), base + lumaSize, Int32(chromaWidth), base + lumaSize + chromaSize, Int32(chromaWidth),
                         Int32(area.x), Int32(area.y), Int32(area.width), Int32(area.height),
                         Int32(color.y), Int32(color.u), Int32(color.v))
        }
    }

    /// This picture scaled to `width` × `height` (libyuv I420Scale, bilinear).
    public func scaled(width targetWidth: Int, height targetHeight: Int) -> I420Frame {
        if targetWidth == width && targetHeight == height { return self }
        let (outWidth, outHeight, outChroma) = (Int32(targetWidth), Int32(targetHeight), Int32(Self.chromaSide(targetWidth)))
        return withPlanes { sy, su, sv in
            I420Frame(width: targetWidth, height: targetHeight, timestamp: timestamp) { dy, du, dv in
                _ = I420Scale(sy, Int32(width), su, Int32(chromaWidth), sv, Int32(chromaWidth), Int32(width), Int32(height),
                              dy, outWidth, du, outChroma, dv, outChroma, outWidth, outHeight, kFilterBilinear)
            }
        }
    }

    /// The part of this picture inside `rect` (clipped, aligned to even pixels).
    public func cropped(to rect: PixelRect) -> I420Frame {
        let area = rect.clipped(to: bounds).evenAligned(within: bounds)
        guard !area.isEmpty, area != bounds else { return self }
        var output = I420Frame(width: area.width, height: area.height, timestamp: timestamp)
        output.draw(self, from: area, at: PixelRect(x: 0, y: 0, width: area.width, height: area.height))
        return output
    }

    /// Copies `source` (or its `sourceRect`) into `rect` of this picture, scaling when the sizes
    /// differ. Both rectangles are clipped and aligned to even pixels.
    public mutating func draw(_ source: I420Frame, from sourceRect: PixelRect? = nil, at rect: PixelRect) {
        source.withView { draw($0, from: sourceRect, at: rect) }
    }

    /// `draw` from a picture in someone else's planes (a decoder's, lent: no copy of it first).
    public mutating func draw(_ source: I420PictureView, from sourceRect: PixelRect? = nil, at rect: PixelRect) {
        let from = (sourceRect ?? source.bounds).clipped(to: source.bounds).evenAligned(within: source.bounds)
        let to = rect.evenAligned(within: bounds)
        guard !from.isEmpty, !to.isEmpty else { return }
        // Parts of the target outside this picture: shrink the source by the same proportion.
        let visible = to.clipped(to: bounds).evenAligned(within: bounds)
        guard !visible.isEmpty else { return }
        var sourceArea = from
        if visible != to {
            let scaleX = Double(from.width) / Double(to.width), scaleY = Double(from.height) / Double(to.height)
            sourceArea = PixelRect(x: from.x + Int(Double(visible.x - to.x) * scaleX),
                                   y: from.y + Int(Double(visible.y - to.y) * scaleY),
                                   width: Int(Double(visible.width) * scaleX), height: Int(Double(visible.height) * scaleY))
                .clipped(to: source.bounds).evenAligned(within: source.bounds)
            guard !sourceArea.isEmpty else { return }
        }
        let sourceStride = (Int32(source.lumaStride), Int32(source.chromaStride))
        let targetStride = (Int32(width), Int32(chromaWidth))
        let sy = source.y + sourceArea.y * source.lumaStride + sourceArea.x
        let su = source.u + (sourceArea.y / 2) * source.chromaStride + sourceArea.x / 2
        let sv = source.v + (sourceArea.y / 2) * source.chromaStride + sourceArea.x / 2
        let (width, chromaWidth) = (width, chromaWidth)
        withMutablePlanes { dy, du, dv in
            let dy = dy + visible.y * width + visible.x
            let du = du + (visible.y / 2) * chromaWidth + visible.x / 2
            let dv = dv + (visible.y / 2) * chromaWidth + visible.x / 2
            if sourceArea.width == visible.width && sourceArea.height == visible.height {
                _ = I420Copy(sy, sourceStride.0, su, sourceStride.1, sv, sourceStride.1,
                             dy, targetStride.0, du, targetStride.1, dv, targetStride.1, Int32(visible.width), Int32(visible.height))
            } else {
                _ = I420Scale(sy, sourceStride.0, su, sourceStride.1, sv, sourceStride.1,
                              Int32(sourceArea.width), Int32(sourceArea.height),
                              dy, targetStride.0, du, targetStride.1, dv, targetStride.1,
                              Int32(visible.width), Int32(visible.height), kFilterBilinear)
            }
        }
    }

    /// A packed copy of `view`'s picture.
    public init(copying view: I420PictureView, timestamp: Instant) {
        self.init(width: view.width, height: view.height, timestamp: timestamp) { y, _, _ in view.copyPacked(into: y) }
    }

    /// Calls `body` with this picture as a view of its planes.
    public func withView<R>(_ body: (I420PictureView) throws -> R) rethrows -> R {
        try withPlanes { y, u, v in
            try body(I420PictureView(width: width, height: height, y: y, u: u, v: v, lumaStride: width, chromaStride: chromaWidth))
        }
    }

    /// This picture turned clockwise by `rotation` (libyuv I420Rotate): 90 and 270 swap width
    /// and height.
    public func rotated(_ rotation: VideoRotation) -> I420Frame {
        guard rotation != .none else { return self }
        let swaps = rotation == .clockwise90 || rotation == .clockwise270
        let (outputWidth, outputHeight) = swaps ? (height, width) : (width, height)
        let mode: RotationMode = switch rotation {
        case .none: kRotate0
        case .clockwise90: kRotate90
        case .upsideDown: kRotate180
        case .clockwise270: kRotate270
        }
        let (outWidth, outChroma) = (Int32(outputWidth), Int32(Self.chromaSide(outputWidth)))
        return withPlanes { sy, su, sv in
            I420Frame(width: outputWidth, height: outputHeight, timestamp: timestamp) { dy, du, dv in
                _ = I420Rotate(sy, Int32(width), su, Int32(chromaWidth), sv, Int32(chromaWidth),
                               dy, outWidth, du, outChroma, dv, outChroma, Int32(width), Int32(height), mode)
            }
        }
    }

    /// This picture flipped left to right (libyuv I420Mirror), as a self-view is shown.
    public func mirrored() -> I420Frame {
        withPlanes { sy, su, sv in
            I420Frame(width: width, height: height, timestamp: timestamp) { dy, du, dv in
                _ = I420Mirror(sy, Int32(width), su, Int32(chromaWidth), sv, Int32(chromaWidth),
                               dy, Int32(width), du, Int32(chromaWidth), dv, Int32(chromaWidth), Int32(width), Int32(height))
            }
        }
    }

    /// Calls `body` with pointers to the Y, U and V planes.
    public func withPlanes<R>(_ body: (UnsafePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>) throws -> R) rethrows -> R {
        let (lumaSize, chromaSize) = (lumaSize, chromaSize)
        return try data.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { preconditionFailure("a frame always has pixels") }
            return try body(base, base + lumaSize, base + lumaSize + chromaSize)
        }
    }

    /// Calls `body` with mutable pointers to the Y, U and V planes.
    public mutating func withMutablePlanes<R>(
        _ body: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<UInt8>) throws -> R
    ) rethrows -> R {
        let (lumaSize, chromaSize) = (lumaSize, chromaSize)
        return try data.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { preconditionFailure("a frame always has pixels") }
            return try body(base, base + lumaSize, base + lumaSize + chromaSize)
        }
    }
}
