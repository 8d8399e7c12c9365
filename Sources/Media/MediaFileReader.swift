import Wire

/// Reads the encoded packets of a WebM (or Matroska), IVF (VP8) or Ogg (Opus) file in file order:
/// recordings to check or compose, and fixtures for synthetic peers. WebM and Matroska are read
/// by libwebm's parser, Ogg's pages by libogg; IVF's fixed 32-byte header and 12-byte frame
/// headers are read here.
///
/// Only the first VP8 stream and the first Opus stream are read; other streams are skipped. A file
/// with neither is `.unsupportedCodec`. Bad bytes never trap: opening throws `.corrupt` (or
/// `.unsupportedFormat` when they look like another container), and a packet that cannot be read
/// throws `.corrupt` from `nextPacket()`. A file cut short ends early. A WebM damaged inside its
/// clusters is read on from the next cluster, as players do, and ``skippedDamage`` says so.
///
/// Not shared across threads.
public final class MediaFileReader {
    public struct VideoInfo: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    public struct AudioInfo: Sendable, Hashable {
        public var channels: Int
        /// Samples at 48 kHz a decoder discards at the start (the Opus pre-skip), 0 when unknown.
        public var preSkip: Int
        public init(channels: Int, preSkip: Int) {
            self.channels = channels
            self.preSkip = preSkip
        }
    }

    /// The container: "webm" or "matroska" (the EBML DocType), "ivf" or "ogg".
    public let formatName: String
    public var video: VideoInfo? { demuxer.video }
    public var audio: AudioInfo? { demuxer.audio }
    /// The first damage read past (what it was, where, and where reading went on), nil while
    /// none: the packets between were lost.
    public var skippedDamage: String? { demuxer.skippedDamage }

    private let demuxer: any ContainerDemuxer

    public init(path: String) throws(MediaContainerError) {
        let file = try MediaFile(path: path)
        let magic = try file.read(count: 12)
        switch ContainerFormat(magic: magic) {
        case .ebml:
            file.close()
            let demuxer = try WebMDemuxer(path: path)
            formatName = demuxer.docType
            self.demuxer = demuxer
        case .ivf:
            try file.seek(to: 0)
            demuxer = try IVFDemuxer(file: file)
            formatName = "ivf"
        case .ogg:
            try file.seek(to: 0)
            demuxer = try OggOpusDemuxer(file: file)
            formatName = "ogg"
        case .other(let name):
            throw .unsupportedFormat(name)
        }
    }

    /// The next VP8 or Opus packet in file order; nil at the end of the file.
    public func nextPacket() throws(MediaContainerError) -> EncodedPacket? {
        try demuxer.nextPacket()
    }

    /// Every remaining packet (for files of a few seconds: tests and fixtures).
    public func readAll() throws(MediaContainerError) -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        while let packet = try nextPacket() { packets.append(packet) }
        return packets
    }
}

/// One container's packets, VP8 and Opus only, in file order.
protocol ContainerDemuxer: AnyObject {
    var video: MediaFileReader.VideoInfo? { get }
    var audio: MediaFileReader.AudioInfo? { get }
    var skippedDamage: String? { get }
    func nextPacket() throws(MediaContainerError) -> EncodedPacket?
}

extension ContainerDemuxer {
    /// IVF and Ogg read on past nothing: damage there ends the file or is libogg's lost page.
    var skippedDamage: String? { nil }
}

/// A container told by its first bytes.
enum ContainerFormat: Equatable {
    case ebml, ivf, ogg
    /// Something else, named for the error when its magic is a common one.
    case other(String)

    init(magic: [UInt8]) {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            magic.count >= offset + prefix.count && Array(magic[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) {
            self = .ebml
        } else if starts(Array("DKIF".utf8)) {
            self = .ivf
        } else if starts(Array("OggS".utf8)) {
            self = .ogg
        } else if starts(Array("RIFF".utf8)) && starts(Array("WAVE".utf8), at: 8) {
            self = .other("wav")
        } else if starts(Array("RIFF".utf8)) && starts(Array("AVI ".utf8), at: 8) {
            self = .other("avi")
        } else if starts(Array("ftyp".utf8), at: 4) {
            self = .other("mp4")
        } else if starts(Array("fLaC".utf8)) {
            self = .other("flac")
        } else if starts(Array("ID3".utf8)) || starts([0xFF, 0xFB]) || starts([0xFF, 0xF3]) {
            self = .other("mp3")
        } else if magic.isEmpty {
            self = .other("an empty file")
        } else {
            self = .other("unknown")
        }
    }
}
