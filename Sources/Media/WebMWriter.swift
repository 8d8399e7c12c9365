private import CAVFormat
private import COpus
import Wire

/// Writes already-encoded VP8 frames and Opus packets into a WebM file (libavformat's "webm"
/// muxer): what a recording is.
///
/// Crash tolerance: a recording killed mid-way (SIGKILL, a crashed host) still plays up to its
/// last second or so, because nothing it needs is left to the trailer:
/// - clusters are closed at least every second (`cluster_time_limit` 1000 ms, and at 256 KiB by
///   `cluster_size_limit`), and libavformat keeps a cluster in memory until it is closed;
/// - every packet call ends with an `avio_flush` (`flush_packets` 1), so a closed cluster reaches
///   the file at once; the header is flushed as soon as it is written;
/// - the interleaving queue holds at most a second (`max_interleave_delta`), so a stalled stream
///   (a camera switched off) does not hold the other one back for libavformat's default 10 s;
/// - the segment is written with an unknown size and the clusters carry their own timestamps,
///   so a demuxer reads a file without cues or a duration to its last complete cluster.
/// `finish()` then adds what only helps seeking and display: the cues, the duration and the
/// segment's size. `live` mode is not used: it would leave those out of finished files too.
///
/// Timestamps are milliseconds in the file (WebM's time base, 1/1000). Within a stream they may
/// repeat but not go back: an earlier one is refused with `.timestampWentBackwards` and the
/// packet is not written, so a caller's clock hiccup costs one packet and never the file.
/// An Opus stream may start before zero by its pre-skip, as encoders and Ogg files do.
///
/// Not shared across threads: one recorder owns a writer. `deinit` finishes an unfinished file.
public final class WebMWriter {
    /// A VP8 stream of pictures of one size.
    public struct VideoTrack: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    /// An Opus stream at 48 kHz.
    public struct AudioTrack: Sendable, Hashable {
        public var channels: Int
        /// Samples at 48 kHz the decoder discards at the start (OpusHead's pre-skip): libopus
        /// reports 312 for its default look-ahead; 0 for packets that need none.
        public var preSkip: Int
        public init(channels: Int, preSkip: Int = 312) {
            self.channels = channels
            self.preSkip = preSkip
        }
    }

    /// Muxer options for crash tolerance (see the type's documentation).
    static let muxerOptions: [(String, String)] = [
        ("cluster_time_limit", "1000"),
        ("cluster_size_limit", "262144"),
        ("flush_packets", "1"),
        ("max_interleave_delta", "1000000"),
        // Never shift the caller's times: an Opus pre-skip is WebM's CodecDelay (see
        // `muxerAddsCodecDelay`), not a reason to move every stream later.
        ("avoid_negative_ts", "disabled"),
    ]

    private struct Stream {
        var index: Int32
        var timeBase: AVRational
        /// The last timestamp written, in `timeBase`.
        var last: Int64?
        /// The earliest timestamp allowed (below zero by an Opus pre-skip).
        var lowest: Int64
        /// Added to every timestamp before libavformat sees it (see `codecDelayOffset`).
        var offset: Int64 = 0
    }

    /// WebM's CodecDelay element says how much to subtract from each Opus block's timestamp, so a
    /// block must be written at its presentation time plus the pre-skip. libavformat after
    /// 59.30.100 does that itself; up to that version (Debian 12 has 59.27) it leaves the
    /// timestamp as it is, and by default shifts every stream by the pre-skip instead, putting
    /// the video 7 ms late. With those versions the writer adds the pre-skip itself.
    static let muxerAddsCodecDelay = avformat_version() > (59 << 16 | 30 << 8 | 100)

    public let path: String
    public let video: VideoTrack?
    public let audio: AudioTrack?
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var videoStream: Stream?
    private var audioStream: Stream?
    public private(set) var isFinished = false

    /// Creates (or replaces) the file at `path` and writes the WebM header.
    public init(path: String, video: VideoTrack?, audio: AudioTrack?) throws(MediaContainerError) {
        _ = LibAV.quiet
        self.path = path
        self.video = video
        self.audio = audio
        guard video != nil || audio != nil else { throw .invalidConfiguration("a recording needs a video or an audio stream") }
        if let video, !(2...16384).contains(video.width) || !(2...16384).contains(video.height) {
            throw .invalidConfiguration("video size \(video.width)x\(video.height) is out of range")
        }
        if let audio {
            guard audio.channels == 1 || audio.channels == 2 else {
                throw .invalidConfiguration("\(audio.channels) audio channels: Tessera records mono or stereo")
            }
            guard (0...48_000).contains(audio.preSkip) else { throw .invalidConfiguration("pre-skip \(audio.preSkip) is out of range") }
        }
        do {
            try open()
        } catch {
            release()
            isFinished = true
            throw error
        }
    }

    deinit {
        if !isFinished { try? finish() }
        release()
    }

    /// Writes one encoded VP8 frame. `timestamp` is its time since the recording's start.
    public func writeVideo(_ frame: [UInt8], isKeyFrame: Bool, timestamp: Duration) throws(MediaContainerError) {
        guard !isFinished else { throw .finished }
        guard var stream = videoStream else { throw .noSuchStream(.video) }
        guard !frame.isEmpty else { throw .emptyPacket(.video) }
        guard stream.last != nil || isKeyFrame else { throw .firstVideoFrameIsNotKey }
        try write(frame, to: &stream, kind: .video, timestamp: timestamp, isKeyFrame: isKeyFrame, duration: 0)
        videoStream = stream
    }

    /// Writes one Opus packet. `timestamp` is the time of its first sample since the recording's
    /// start.
    public func writeAudio(_ packet: [UInt8], timestamp: Duration) throws(MediaContainerError) {
        guard !isFinished else { throw .finished }
        guard var stream = audioStream else { throw .noSuchStream(.audio) }
        guard !packet.isEmpty else { throw .emptyPacket(.audio) }
        // The packet's length from its TOC byte (RFC 6716 §3.1), so the file's duration includes
        // the last packet; 0 (unknown) for a malformed one, which libavformat accepts.
        let samples = packet.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return 0 }
            return opus_packet_get_nb_samples(base, Int32(clamping: buffer.count), 48_000)
        }
        let duration = samples > 0 ? av_rescale_q(Int64(samples), AVRational(num: 1, den: 48_000), stream.timeBase) : 0
        try write(packet, to: &stream, kind: .audio, timestamp: timestamp, isKeyFrame: true, duration: duration)
        audioStream = stream
    }

    /// Writes the packets still queued for interleaving and the trailer (cues, duration), and
    /// closes the file. A second call does nothing.
    public func finish() throws(MediaContainerError) {
        guard !isFinished else { return }
        isFinished = true
        defer { release() }
        guard let context else { return }
        let trailer = av_write_trailer(context)
        let close = avio_closep(&context.pointee.pb)
        if trailer < 0 { throw LibAV.error("av_write_trailer", trailer) }
        if close < 0 { throw LibAV.error("avio_closep", close) }
    }

    // MARK: - libavformat

    private func open() throws(MediaContainerError) {
        var context: UnsafeMutablePointer<AVFormatContext>?
        let url = LibAV.fileURL(path)
        var status = avformat_alloc_output_context2(&context, nil, "webm", url)
        guard status >= 0, let context else { throw LibAV.error("avformat_alloc_output_context2", status) }
        self.context = context
        guard let packet = av_packet_alloc() else { throw LibAV.error("av_packet_alloc", tessera_AVERROR(ENOMEM)) }
        self.packet = packet

        if let video {
            guard let stream = avformat_new_stream(context, nil) else { throw LibAV.error("avformat_new_stream", tessera_AVERROR(ENOMEM)) }
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            parameters.pointee.codec_id = AV_CODEC_ID_VP8
            parameters.pointee.width = Int32(video.width)
            parameters.pointee.height = Int32(video.height)
            stream.pointee.time_base = LibAV.milliseconds
        }
        if let audio {
            guard let stream = avformat_new_stream(context, nil) else { throw LibAV.error("avformat_new_stream", tessera_AVERROR(ENOMEM)) }
            let parameters = stream.pointee.codecpar!
            parameters.pointee.codec_type = AVMEDIA_TYPE_AUDIO
            parameters.pointee.codec_id = AV_CODEC_ID_OPUS
            parameters.pointee.sample_rate = 48_000
            av_channel_layout_default(&parameters.pointee.ch_layout, Int32(audio.channels))
            // libavformat writes CodecDelay and SeekPreRoll from these, and lets the first
            // packets start before zero by the pre-skip.
            parameters.pointee.initial_padding = Int32(audio.preSkip)
            parameters.pointee.seek_preroll = 3840  // 80 ms, RFC 7845 §4.6
            let head = Self.opusHead(channels: audio.channels, preSkip: audio.preSkip)
            let padding = Int(tessera_AV_INPUT_BUFFER_PADDING_SIZE())
            guard let extradata = av_mallocz(head.count + padding)?.assumingMemoryBound(to: UInt8.self) else {
                throw LibAV.error("av_mallocz", tessera_AVERROR(ENOMEM))
            }
            extradata.update(from: head, count: head.count)
            parameters.pointee.extradata = extradata
            parameters.pointee.extradata_size = Int32(head.count)
            stream.pointee.time_base = LibAV.milliseconds
        }

        status = avio_open(&context.pointee.pb, url, AVIO_FLAG_WRITE)
        guard status >= 0 else { throw LibAV.error("avio_open \(path)", status) }

        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        for (key, value) in Self.muxerOptions { av_dict_set(&options, key, value, 0) }
        status = avformat_write_header(context, &options)
        guard status >= 0 else { throw LibAV.error("avformat_write_header", status) }
        if let unused = av_dict_get(options, "", nil, AV_DICT_IGNORE_SUFFIX) {
            // An option this libavformat does not know: crash tolerance would be silently lost.
            throw .invalidConfiguration("libavformat ignored the muxer option \(String(cString: unused.pointee.key))")
        }
        avio_flush(context.pointee.pb)

        // avformat_write_header may change the time bases; read them back.
        var index: Int32 = 0
        if video != nil {
            videoStream = Stream(index: index, timeBase: context.pointee.streams[Int(index)]!.pointee.time_base, last: nil, lowest: 0)
            index += 1
        }
        if let audio {
            let timeBase = context.pointee.streams[Int(index)]!.pointee.time_base
            let preSkip = av_rescale_q(Int64(audio.preSkip), AVRational(num: 1, den: 48_000), timeBase)
            audioStream = Stream(index: index, timeBase: timeBase, last: nil, lowest: -preSkip,
                                 offset: Self.muxerAddsCodecDelay ? 0 : preSkip)
        }
    }

    private func write(_ bytes: [UInt8], to stream: inout Stream, kind: PacketKind, timestamp: Duration,
                       isKeyFrame: Bool, duration: Int64) throws(MediaContainerError) {
        guard let context, let packet else { throw .finished }
        let time = LibAV.value(timestamp, in: stream.timeBase)
        if time < (stream.last ?? stream.lowest) {
            let previous = stream.last.map { LibAV.duration($0, in: stream.timeBase) } ?? LibAV.duration(stream.lowest, in: stream.timeBase)
            throw .timestampWentBackwards(kind, previous: previous, given: timestamp)
        }
        guard bytes.count < Int32.max - 64 else { throw .invalidConfiguration("a \(bytes.count)-byte \(kind) packet") }
        var status = av_new_packet(packet, Int32(bytes.count))
        guard status >= 0 else { throw LibAV.error("av_new_packet", status) }
        bytes.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            packet.pointee.data.update(from: base, count: source.count)
        }
        packet.pointee.stream_index = stream.index
        packet.pointee.pts = time + stream.offset
        packet.pointee.dts = time + stream.offset
        packet.pointee.duration = duration
        packet.pointee.flags = isKeyFrame ? AV_PKT_FLAG_KEY : 0
        // Takes the packet's data and leaves `packet` blank for the next call.
        status = av_interleaved_write_frame(context, packet)
        av_packet_unref(packet)
        guard status >= 0 else { throw LibAV.error("av_interleaved_write_frame (\(kind))", status) }
        stream.last = time
    }

    private func release() {
        if let context {
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
            self.context = nil
        }
        if packet != nil { av_packet_free(&packet) }
    }

    /// The Opus identification header (RFC 7845 §5.1) that WebM carries as CodecPrivate:
    /// 'OpusHead', version 1, channels, pre-skip, input sample rate, output gain 0, mapping
    /// family 0 (mono or stereo). Multi-byte fields are little-endian.
    static func opusHead(channels: Int, preSkip: Int) -> [UInt8] {
        var head = Array("OpusHead".utf8)
        head.append(1)
        head.append(UInt8(channels))
        head.append(UInt8(preSkip & 0xFF))
        head.append(UInt8(preSkip >> 8 & 0xFF))
        let rate = UInt32(48_000)
        head.append(contentsOf: [UInt8(rate & 0xFF), UInt8(rate >> 8 & 0xFF), UInt8(rate >> 16 & 0xFF), UInt8(rate >> 24)])
        head.append(contentsOf: [0, 0])  // output gain
        head.append(0)  // channel mapping family
        return head
    }
}
