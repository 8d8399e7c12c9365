private import CWebM

/// WebM and Matroska by libwebm's parser (`CWebM`): the first VP8 ("V_VP8") and the first Opus
/// ("A_OPUS") track.
///
/// Times: a block's time is its cluster's timecode plus its own, times TimecodeScale; an Opus
/// track's CodecDelay is taken off (a WebM writer adds it to every Opus block, RFC 7845 §4.2's
/// pre-skip), so the first packet starts before zero by the pre-skip, as in an Ogg file. The
/// frames after the first of a laced block follow the one before by its length.
final class WebMDemuxer: ContainerDemuxer {
    let docType: String
    let video: MediaFileReader.VideoInfo?
    let audio: MediaFileReader.AudioInfo?
    private let reader: OpaquePointer
    private let audioTrack: UInt64?
    private let audioCodecDelay: Int64
    /// Per track, where a laced block's next frame starts.
    private var nextTime: [UInt64: Int64] = [:]

    init(path: String) throws(MediaContainerError) {
        var status: Int32 = 0
        var docType = [CChar](repeating: 0, count: 16)
        guard let reader = tessera_webm_open(path, &status, &docType) else {
            if status > 0 { throw .file("open", path: path, code: status, opening: true) }
            throw .corrupt(String(cString: tessera_webm_status_name(status)))
        }
        var videoTrack: UInt64?, audioTrack: UInt64?
        var video: MediaFileReader.VideoInfo?, audio: MediaFileReader.AudioInfo?
        var codecDelay: UInt64 = 0
        var found: [String] = []
        var track = tessera_webm_track()
        for index in 0..<tessera_webm_track_count(reader) where tessera_webm_track_at(reader, index, &track) != 0 {
            let codec = withUnsafeBytes(of: track.codec_id) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            found.append(codec)
            if track.type == 1, codec == "V_VP8", videoTrack == nil, track.number != 0 {
                videoTrack = track.number
                video = .init(width: Int(clamping: track.pixel_width), height: Int(clamping: track.pixel_height))
            } else if track.type == 2, codec == "A_OPUS", audioTrack == nil, track.number != 0 {
                audioTrack = track.number
                codecDelay = min(track.codec_delay_ns, 1_000_000_000)  // more than a second is not a pre-skip
                audio = .init(channels: Int(clamping: track.channels), preSkip: Int(codecDelay * 48_000 / 1_000_000_000))
            }
        }
        guard videoTrack != nil || audioTrack != nil else {
            tessera_webm_close(reader)
            throw .unsupportedCodec(found.isEmpty ? "no streams" : found.joined(separator: ", "))
        }
        tessera_webm_select(reader, videoTrack ?? 0, audioTrack ?? 0)
        self.reader = reader
        self.docType = String(decoding: docType.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        self.audioTrack = audioTrack
        self.video = video
        self.audio = audio
        self.audioCodecDelay = Int64(codecDelay)
    }

    deinit { tessera_webm_close(reader) }

    var skippedDamage: String? {
        var position: UInt64 = 0, resumedAt: UInt64 = 0
        let status = tessera_webm_damage(reader, &position, &resumedAt)
        guard status != 0 else { return nil }
        return "\(String(cString: tessera_webm_status_name(status))) at byte \(position); read on from the cluster at byte \(resumedAt)"
    }

    func nextPacket() throws(MediaContainerError) -> EncodedPacket? {
        var frame = tessera_webm_frame()
        while true {
            let status = tessera_webm_next(reader, &frame)
            guard status == 1 else {
                if status == 0 { return nil }
                throw .corrupt(String(cString: tessera_webm_status_name(status)))
            }
            guard frame.size > 0, let data = frame.data else { continue }  // nothing to decode
            let bytes = Array(UnsafeBufferPointer(start: data, count: frame.size))
            let isAudio = frame.track == audioTrack
            var time = frame.time_ns
            if frame.index_in_block > 0, let next = nextTime[frame.track] { time = next }
            if isAudio {
                let samples = OpusDecoder.sampleCount(of: bytes) ?? 0
                nextTime[frame.track] = time &+ Int64(samples) * 1_000_000_000 / 48_000
            }
            return EncodedPacket(kind: isAudio ? .audio : .video, data: bytes,
                                 timestamp: .nanoseconds(isAudio ? time &- audioCodecDelay : time),
                                 isKeyFrame: isAudio || frame.is_key != 0)
        }
    }
}
