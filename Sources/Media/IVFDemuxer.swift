/// IVF, libvpx's raw VP8 file: a 32-byte header ("DKIF", version, header size, fourcc "VP80",
/// width, height, time base denominator and numerator, frame count), then per frame a 12-byte
/// header (size, 64-bit timestamp in the time base) and the frame. All little-endian.
final class IVFDemuxer: ContainerDemuxer {
    let video: MediaFileReader.VideoInfo?
    let audio: MediaFileReader.AudioInfo? = nil
    private let file: MediaFile
    /// The time base, seconds = timestamp x numerator / denominator.
    private let numerator: Int64, denominator: Int64
    private var ended = false

    /// A frame larger than this is refused as corrupt (a 4K key frame is a few megabytes).
    static let largestFrame = 64 << 20

    init(file: MediaFile) throws(MediaContainerError) {
        let header = try file.read(count: 32)
        guard header.count == 32 else { throw .corrupt("the IVF header is cut short") }
        let headerSize = Int(Self.little(header, 6, 2))
        let fourcc = String(decoding: header[8..<12], as: UTF8.self)
        guard fourcc == "VP80" else { throw .unsupportedCodec(fourcc.uppercased() == "VP90" ? "vp9" : fourcc) }
        guard (32...4096).contains(headerSize) else { throw .corrupt("IVF header size \(headerSize)") }
        denominator = Int64(Self.little(header, 16, 4))
        numerator = Int64(Self.little(header, 20, 4))
        guard numerator > 0, denominator > 0 else { throw .corrupt("IVF time base \(numerator)/\(denominator)") }
        video = .init(width: Int(Self.little(header, 12, 2)), height: Int(Self.little(header, 14, 2)))
        if headerSize > 32 { _ = try file.read(count: headerSize - 32) }
        self.file = file
    }

    func nextPacket() throws(MediaContainerError) -> EncodedPacket? {
        guard !ended else { return nil }
        while true {
            let header = try file.read(count: 12)
            let size = header.count == 12 ? Int(Self.little(header, 0, 4)) : 0
            guard header.count == 12, size <= Self.largestFrame else {
                ended = true
                if header.count == 12 { throw .corrupt("an IVF frame of \(size) bytes") }
                return nil  // the end, or a file cut short inside a frame header
            }
            let frame = try file.read(count: size)
            guard frame.count == size else {
                ended = true
                return nil  // cut short inside a frame
            }
            guard !frame.isEmpty else { continue }  // nothing to decode
            let ticks = Int128(Int64(bitPattern: Self.little(header, 4, 8)))
            // seconds = ticks x numerator / denominator, in 128 bits so no product overflows.
            let nanoseconds = ticks * Int128(numerator) * 1_000_000_000 / Int128(denominator)
            return EncodedPacket(kind: .video, data: frame, timestamp: .nanoseconds(Int64(clamping: nanoseconds)),
                                 isKeyFrame: frame[0] & 0x01 == 0)  // RFC 6386 §9.1: bit 0 of the frame tag is 0 on key frames
        }
    }

    private static func little(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> UInt64 {
        (0..<count).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * $1) }
    }
}
