// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// The picture size a VP8 key frame declares (RFC 6386 §9.1).
public struct VP8KeyFrameSize: Hashable, Sendable {
    /// Width in pixels, 14 bits.
    public var width: UInt16
    /// Height in pixels, 14 bits.
    public var height: UInt16
    /// Horizontal upscaling code, 2 bits (0: none, 1: 5/4, 2: 5/3, 3: 2).
    public var horizontalScale: UInt8
    /// Vertical upscaling code, 2 bits.
    public var verticalScale: UInt8

    /// A size with these fields.
    public init(width: UInt16, height: UInt16, horizontalScale: UInt8 = 0, verticalScale: UInt8 = 0) {
        self.width = width
        self.height = height
        self.horizontalScale = horizontalScale
        self.verticalScale = verticalScale
    }
}

/// The start of a VP8 frame, which is also the VP8 payload header of a frame's first RTP packet
/// (RFC 7741 §4.3, RFC 6386 §9.1):
///
/// ```
///  0 1 2 3 4 5 6 7
/// +-+-+-+-+-+-+-+-+
/// |Size0|H| VER |P|   P = 0: key frame (inverse key frame flag)
/// |     Size1     |   H: show frame
/// |     Size2     |   Size: first partition size, 19 bits
/// ```
///
/// Key frames continue with the start code 9d 01 2a and two little-endian 16-bit fields:
/// 14 bits width and 2 bits scale, 14 bits height and 2 bits scale.
public struct VP8FrameHeader: Hashable, Sendable {
    /// P bit clear: a key frame, which decodes without earlier frames.
    public var isKeyFrame: Bool
    /// VER: the bitstream version (reconstruction filter), 3 bits.
    public var version: UInt8
    /// H: the frame is meant to be shown.
    public var showFrame: Bool
    /// Size of the first partition in bytes, 19 bits.
    public var firstPartitionSize: UInt32
    /// The picture size, on key frames.
    public var keyFrameSize: VP8KeyFrameSize?

    /// A header with these fields.
    public init(
        isKeyFrame: Bool, version: UInt8 = 0, showFrame: Bool = true, firstPartitionSize: UInt32,
        keyFrameSize: VP8KeyFrameSize? = nil
    ) {
        self.isKeyFrame = isKeyFrame
        self.version = version
        self.showFrame = showFrame
        self.firstPartitionSize = firstPartitionSize
        self.keyFrameSize = keyFrameSize
    }

    /// The key frame start code (RFC 6386 §9.1).
    static let startCode: (UInt8, UInt8, UInt8) = (0x9D, 0x01, 0x2A)

    /// Whether the first byte of a frame (or of a start-of-frame payload after its descriptor)
    /// marks a key frame: the P bit is 0 (RFC 7741 §4.3). Cheap; no validation.
    @inline(__always)
    public static func isKeyFrame(firstByte: UInt8) -> Bool { firstByte & 0x01 == 0 }

    /// Reads the frame tag and, on key frames, the start code and size.
    public static func parse(_ frame: ArraySlice<UInt8>) throws(VP8ParseError) -> VP8FrameHeader {
        let start = frame.startIndex
        guard frame.count >= 3 else { throw .truncated(Truncated(needed: 3, offset: 0)) }
        let tag = UInt32(frame[start]) | UInt32(frame[start + 1]) << 8 | UInt32(frame[start + 2]) << 16
        var header = VP8FrameHeader(
            isKeyFrame: tag & 0x01 == 0, version: UInt8(truncatingIfNeeded: tag >> 1) & 0x07,
            showFrame: tag & 0x10 != 0, firstPartitionSize: tag >> 5)
        guard header.isKeyFrame else { return header }
        guard frame.count >= 10 else { throw .truncated(Truncated(needed: 7, offset: 3)) }
        guard frame[start + 3] == startCode.0, frame[start + 4] == startCode.1, frame[start + 5] == startCode.2 else {
            throw .invalidKeyFrameStartCode
        }
        let width = UInt16(frame[start + 6]) | UInt16(frame[start + 7]) << 8
        let height = UInt16(frame[start + 8]) | UInt16(frame[start + 9]) << 8
        header.keyFrameSize = VP8KeyFrameSize(
            width: width & 0x3FFF, height: height & 0x3FFF, horizontalScale: UInt8(width >> 14),
            verticalScale: UInt8(height >> 14))
        return header
    }

    /// The 3-byte tag, plus start code and size on key frames (10 bytes).
    public func serialized() -> [UInt8] {
        let tag = (isKeyFrame ? 0 : 1) | UInt32(version & 0x07) << 1 | (showFrame ? 0x10 : 0)
            | (firstPartitionSize & 0x7_FFFF) << 5
        var bytes: [UInt8] = [
            UInt8(truncatingIfNeeded: tag), UInt8(truncatingIfNeeded: tag >> 8), UInt8(truncatingIfNeeded: tag >> 16),
        ]
        if isKeyFrame {
            let size = keyFrameSize ?? VP8KeyFrameSize(width: 0, height: 0)
            let width = size.width & 0x3FFF | UInt16(size.horizontalScale & 0x03) << 14
            let height = size.height & 0x3FFF | UInt16(size.verticalScale & 0x03) << 14
            bytes += [
                Self.startCode.0, Self.startCode.1, Self.startCode.2,
                UInt8(truncatingIfNeeded: width), UInt8(truncatingIfNeeded: width >> 8),
                UInt8(truncatingIfNeeded: height), UInt8(truncatingIfNeeded: height >> 8),
            ]
        }
        return bytes
    }
}
