private import CAVFormat
import Wire

/// Reads the encoded packets of a WebM (or Matroska), IVF (VP8) or Ogg (Opus) file in file order
/// (libavformat's demuxers): recordings to check or replay, and fixtures for synthetic peers.
///
/// Only the first VP8 stream and the first Opus stream are read; other streams are skipped. A file
/// with neither is `.unsupportedCodec`. Bad bytes never trap: opening throws `.corrupt` (or
/// `.unsupportedFormat` when they look like another container), and a packet that cannot be read
/// throws `.corrupt` from `nextPacket()`. A file cut short ends early, as libavformat sees it.
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

    /// The container libavformat found: "matroska,webm", "ivf" or "ogg".
    public let formatName: String
    public let video: VideoInfo?
    public let audio: AudioInfo?

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let packet: UnsafeMutablePointer<AVPacket>
    private let videoIndex: Int32?
    private let audioIndex: Int32?
    /// Per stream, where the next packet starts when libavformat gives one no timestamp (an Ogg
    /// page's inner packets): the previous one's time plus its duration.
    private var nextTime: [Int32: Int64] = [:]

    private static let allowedFormats: Set<String> = ["matroska", "webm", "ivf", "ogg"]

    public init(path: String) throws(MediaContainerError) {
        _ = LibAV.quiet
        var context: UnsafeMutablePointer<AVFormatContext>?
        var options: OpaquePointer?
        // Never follow a path into another protocol (http:, concat:, …).
        av_dict_set(&options, "protocol_whitelist", "file", 0)
        let status = avformat_open_input(&context, LibAV.fileURL(path), nil, &options)
        av_dict_free(&options)
        guard status >= 0, let context else {
            if status == tessera_AVERROR(ENOENT) || status == tessera_AVERROR(EACCES) || status == tessera_AVERROR(EISDIR) {
                throw .fileNotFound(path: path)
            }
            if status == tessera_AVERROR_INVALIDDATA() { throw .corrupt(LibAV.message(status)) }
            throw LibAV.error("avformat_open_input \(path)", status)
        }
        var owned: UnsafeMutablePointer<AVFormatContext>? = context
        let name = String(cString: context.pointee.iformat.pointee.name)
        guard !Set(name.split(separator: ",").map(String.init)).isDisjoint(with: Self.allowedFormats) else {
            avformat_close_input(&owned)
            throw .unsupportedFormat(name)
        }
        var videoIndex: Int32?, audioIndex: Int32?
        var video: VideoInfo?, audio: AudioInfo?
        var found: [String] = []
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let parameters = context.pointee.streams[index]?.pointee.codecpar?.pointee else { continue }
            found.append(String(cString: avcodec_get_name(parameters.codec_id)))
            if parameters.codec_type == AVMEDIA_TYPE_VIDEO, parameters.codec_id == AV_CODEC_ID_VP8, videoIndex == nil {
                videoIndex = Int32(index)
                video = VideoInfo(width: Int(parameters.width), height: Int(parameters.height))
            } else if parameters.codec_type == AVMEDIA_TYPE_AUDIO, parameters.codec_id == AV_CODEC_ID_OPUS, audioIndex == nil {
                audioIndex = Int32(index)
                audio = AudioInfo(channels: Int(parameters.ch_layout.nb_channels), preSkip: Int(max(0, parameters.initial_padding)))
            }
        }
        guard videoIndex != nil || audioIndex != nil else {
            avformat_close_input(&owned)
            throw .unsupportedCodec(found.isEmpty ? "no streams" : found.joined(separator: ", "))
        }
        guard let packet = av_packet_alloc() else {
            avformat_close_input(&owned)
            throw LibAV.error("av_packet_alloc", tessera_AVERROR(ENOMEM))
        }
        self.context = context
        self.packet = packet
        self.formatName = name
        self.videoIndex = videoIndex
        self.audioIndex = audioIndex
        self.video = video
        self.audio = audio
    }

    deinit {
        avformat_close_input(&context)
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
    }

    /// The next VP8 or Opus packet in file order; nil at the end of the file.
    public func nextPacket() throws(MediaContainerError) -> EncodedPacket? {
        guard let context else { return nil }
        while true {
            let status = av_read_frame(context, packet)
            if status == tessera_AVERROR_EOF() { return nil }
            guard status >= 0 else {
                if status == tessera_AVERROR_INVALIDDATA() { throw .corrupt(LibAV.message(status)) }
                throw LibAV.error("av_read_frame", status)
            }
            defer { av_packet_unref(packet) }
            let index = packet.pointee.stream_index
            let kind: PacketKind
            if index == videoIndex {
                kind = .video
            } else if index == audioIndex {
                kind = .audio
            } else {
                continue
            }
            let size = Int(packet.pointee.size)
            guard size > 0, let data = packet.pointee.data else { continue }  // nothing to decode
            guard let stream = context.pointee.streams[Int(index)] else { continue }
            let timeBase = stream.pointee.time_base
            guard timeBase.num > 0, timeBase.den > 0 else { throw .corrupt("\(kind) stream has time base \(timeBase.num)/\(timeBase.den)") }
            let noTime = tessera_AV_NOPTS_VALUE()
            var time = packet.pointee.pts != noTime ? packet.pointee.pts : packet.pointee.dts
            if time == noTime { time = nextTime[index] ?? 0 }
            if packet.pointee.duration > 0 {
                nextTime[index] = time.addingReportingOverflow(packet.pointee.duration).partialValue
            }
            return EncodedPacket(kind: kind, data: Array(UnsafeBufferPointer(start: data, count: size)),
                                 timestamp: LibAV.duration(time, in: timeBase),
                                 isKeyFrame: kind == .audio || packet.pointee.flags & AV_PKT_FLAG_KEY != 0)
        }
    }

    /// Every remaining packet (for files of a few seconds: tests and fixtures).
    public func readAll() throws(MediaContainerError) -> [EncodedPacket] {
        var packets: [EncodedPacket] = []
        while let packet = try nextPacket() { packets.append(packet) }
        return packets
    }
}
