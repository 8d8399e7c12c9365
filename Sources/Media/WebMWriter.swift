#if canImport(Glibc)
import Glibc
#endif
import Wire

/// Writes already-encoded VP8 frames and Opus packets into a WebM file: what a recording is.
/// WebM is a small subset of Matroska over EBML (RFC 8794), written here element by element
/// (`EBMLBuffer`): an EBML header, then a Segment holding Info, Tracks, Clusters of SimpleBlocks
/// and, at the end, Cues and a SeekHead.
///
/// Crash tolerance: a recording killed mid-way (SIGKILL, a crashed host) still plays up to its
/// last second or so, because nothing it needs is left to the end:
/// - the header (EBML header, Info, Tracks) reaches the file when the writer is made;
/// - a cluster is kept in memory while it fills and written whole, with its own timestamp, the
///   moment it closes: at least every second (`clusterTimeLimit`), at 256 KiB
///   (`clusterSizeLimit`), and at a video key frame once it holds 4 KiB;
/// - the Segment is written with an unknown size, so a demuxer reads a file without cues or a
///   duration to its last complete cluster;
/// - the interleaving queue holds at most a second (`interleaveLimit`), so a stalled stream (a
///   camera switched off) does not hold the other one back for long.
/// `finish()` then adds what only helps seeking and display: the cues, the duration, the
/// SeekHead and the Segment's size, each into space the header kept for it or at the end.
///
/// Timestamps are milliseconds in the file (TimecodeScale 1,000,000 ns). Within a stream they
/// may repeat but not go back: an earlier one is refused with `.timestampWentBackwards` and the
/// packet is not written, so a caller's clock hiccup costs one packet and never the file. An
/// Opus stream may start before zero by its pre-skip, as encoders and Ogg files do: WebM's
/// CodecDelay says how much a reader takes off each Opus block, so every Opus block is written
/// at its time plus the pre-skip.
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

    /// A cluster closes when it spans this long (milliseconds), …
    static let clusterTimeLimit: Int64 = 1000
    /// … holds this many bytes, …
    static let clusterSizeLimit = 256 * 1024
    /// … or holds this many when a video key frame comes (a cluster then starts at a key frame,
    /// where a player can begin).
    static let clusterKeyFrameSize = 4 * 1024
    /// The longest span of packets the interleaving queue holds while waiting for a stream
    /// that sends nothing (milliseconds).
    static let interleaveLimit: Int64 = 1000
    /// Bytes kept after the EBML header for the SeekHead `finish()` writes: it takes at most 68
    /// (its ID and size, 5, and three Seeks of at most 21), the rest stays a Void.
    static let seekHeadSpace = 96

    public let path: String
    public let video: VideoTrack?
    public let audio: AudioTrack?
    public private(set) var isFinished = false

    private struct Stream {
        var number: UInt8
        /// The last timestamp accepted, as given and in file milliseconds.
        var last: (given: Duration, file: Int64)?
        /// Added to every timestamp before it is rounded to the file's milliseconds (an Opus
        /// track's CodecDelay), so the earliest allowed, -offset, is 0 in the file.
        var offset: Duration
        /// The end of its last packet, in file milliseconds: the file's duration.
        var end: Int64 = 0
    }

    private struct Queued {
        var kind: PacketKind
        var time: Int64
        var isKeyFrame: Bool
        var data: [UInt8]
    }

    private var descriptor: Int32 = -1
    /// Where the Segment's data begins in the file: positions in the SeekHead and Cues count
    /// from here.
    private var segmentStart = 0
    /// Where the Segment's size field is, and the Duration's space, and the SeekHead's.
    private var segmentSizeOffset = 0, durationOffset = 0, seekHeadOffset = 0
    private var infoPosition = 0, tracksPosition = 0
    /// Bytes written so far: the next element's position.
    private var written = 0
    private var videoStream: Stream?
    private var audioStream: Stream?
    /// Packets waiting for the other stream (interleaving), in arrival order per stream.
    private var queue: [Queued] = []
    /// The cluster being filled: its time, its SimpleBlocks, and whether it has an audio cue.
    private var cluster: (time: Int64, blocks: EBMLBuffer, cued: Bool)?
    private var cues: [(time: Int64, track: UInt8, clusterPosition: Int)] = []

    /// Creates (or replaces) the file at `path` and writes the WebM header.
    public init(path: String, video: VideoTrack?, audio: AudioTrack?) throws(MediaContainerError) {
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
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .file("open", path: path) }
        var number: UInt8 = 1
        if video != nil {
            videoStream = Stream(number: number, offset: .zero)
            number += 1
        }
        if let audio {
            audioStream = Stream(number: number, offset: .nanoseconds(Int64(audio.preSkip) * 1_000_000_000 / 48_000))
        }
        do {
            try writeHeader()
        } catch {
            close(descriptor)
            descriptor = -1
            isFinished = true
            throw error
        }
    }

    deinit {
        if !isFinished { try? finish() }
        if descriptor >= 0 { close(descriptor) }
    }

    /// Writes one encoded VP8 frame. `timestamp` is its time since the recording's start.
    public func writeVideo(_ frame: [UInt8], isKeyFrame: Bool, timestamp: Duration) throws(MediaContainerError) {
        guard !isFinished else { throw .finished }
        guard var stream = videoStream else { throw .noSuchStream(.video) }
        guard !frame.isEmpty else { throw .emptyPacket(.video) }
        guard stream.last != nil || isKeyFrame else { throw .firstVideoFrameIsNotKey }
        let time = try accept(timestamp, kind: .video, stream: &stream)
        stream.end = max(stream.end, time)
        videoStream = stream
        try enqueue(Queued(kind: .video, time: time, isKeyFrame: isKeyFrame, data: frame))
    }

    /// Writes one Opus packet. `timestamp` is the time of its first sample since the recording's
    /// start.
    public func writeAudio(_ packet: [UInt8], timestamp: Duration) throws(MediaContainerError) {
        guard !isFinished else { throw .finished }
        guard var stream = audioStream else { throw .noSuchStream(.audio) }
        guard !packet.isEmpty else { throw .emptyPacket(.audio) }
        let time = try accept(timestamp, kind: .audio, stream: &stream)
        // The packet's length from its TOC byte, so the file's duration includes the last
        // packet; 0 for a malformed one.
        let samples = OpusDecoder.sampleCount(of: packet) ?? 0
        stream.end = max(stream.end, time + Int64(samples) / 48)
        audioStream = stream
        try enqueue(Queued(kind: .audio, time: time, isKeyFrame: true, data: packet))
    }

    /// Writes the packets still queued for interleaving, the last cluster, the cues, the
    /// duration, the SeekHead and the Segment's size, and closes the file. A second call does
    /// nothing.
    public func finish() throws(MediaContainerError) {
        guard !isFinished else { return }
        isFinished = true
        defer {
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
        guard descriptor >= 0 else { return }
        try writeQueued(all: true)
        try closeCluster()

        let cuesPosition = written - segmentStart
        if !cues.isEmpty {
            var element = EBMLBuffer()
            element.master(EBMLID.cues) { cuesElement in
                for cue in cues {
                    cuesElement.master(EBMLID.cuePoint) { point in
                        point.unsigned(EBMLID.cueTime, UInt64(cue.time))
                        point.master(EBMLID.cueTrackPositions) { positions in
                            positions.unsigned(EBMLID.cueTrack, UInt64(cue.track))
                            positions.unsigned(EBMLID.cueClusterPosition, UInt64(cue.clusterPosition))
                        }
                    }
                }
            }
            try append(element.bytes)
        }
        let segmentSize = written - segmentStart

        var seekHead = EBMLBuffer()
        seekHead.master(EBMLID.seekHead) { head in
            var entries = [(EBMLID.info, infoPosition), (EBMLID.tracks, tracksPosition)]
            if !cues.isEmpty { entries.append((EBMLID.cues, cuesPosition)) }
            for (id, position) in entries {
                head.master(EBMLID.seek) { seek in
                    var idBytes = EBMLBuffer()
                    idBytes.id(id)
                    seek.binary(EBMLID.seekID, idBytes.bytes)
                    seek.unsigned(EBMLID.seekPosition, UInt64(position))
                }
            }
        }
        seekHead.void(total: Self.seekHeadSpace - seekHead.bytes.count)
        try write(seekHead.bytes, at: seekHeadOffset)

        var duration = EBMLBuffer()
        duration.float(EBMLID.duration, Double(max(videoStream?.end ?? 0, audioStream?.end ?? 0)))
        try write(duration.bytes, at: durationOffset)

        var size = EBMLBuffer()
        size.size(UInt64(segmentSize), length: 8)
        try write(size.bytes, at: segmentSizeOffset)
    }

    // MARK: - Header

    private func writeHeader() throws(MediaContainerError) {
        var header = EBMLBuffer()
        header.master(EBMLID.ebml) { ebml in
            ebml.unsigned(EBMLID.ebmlVersion, 1)
            ebml.unsigned(EBMLID.ebmlReadVersion, 1)
            ebml.unsigned(EBMLID.ebmlMaxIDLength, 4)
            ebml.unsigned(EBMLID.ebmlMaxSizeLength, 8)
            ebml.string(EBMLID.docType, "webm")
            ebml.unsigned(EBMLID.docTypeVersion, 4)
            ebml.unsigned(EBMLID.docTypeReadVersion, 2)
        }
        header.id(EBMLID.segment)
        segmentSizeOffset = header.bytes.count
        header.bytes += [0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]  // unknown size, until finish()
        segmentStart = header.bytes.count
        seekHeadOffset = header.bytes.count
        header.void(total: Self.seekHeadSpace)

        infoPosition = header.bytes.count - segmentStart
        header.master(EBMLID.info) { info in
            info.unsigned(EBMLID.timecodeScale, 1_000_000)
            info.string(EBMLID.muxingApp, "Tessera")
            info.string(EBMLID.writingApp, "Tessera")
            info.void(total: 11)  // the Duration's space: ID (2 bytes), size (1), a 64-bit float
        }
        durationOffset = header.bytes.count - 11

        tracksPosition = header.bytes.count - segmentStart
        header.master(EBMLID.tracks) { tracks in
            if let video, let stream = videoStream {
                Self.trackEntry(&tracks, number: stream.number, type: 1, codec: "V_VP8") { entry in
                    entry.master(EBMLID.video) { picture in
                        picture.unsigned(EBMLID.pixelWidth, UInt64(video.width))
                        picture.unsigned(EBMLID.pixelHeight, UInt64(video.height))
                    }
                }
            }
            if let audio, let stream = audioStream {
                Self.trackEntry(&tracks, number: stream.number, type: 2, codec: "A_OPUS") { entry in
                    entry.binary(EBMLID.codecPrivate, Self.opusHead(channels: audio.channels, preSkip: audio.preSkip))
                    // RFC 7845 §4.2's pre-skip, and §4.6's 80 ms of decoding before a seek point.
                    entry.unsigned(EBMLID.codecDelay, UInt64(audio.preSkip) * 1_000_000_000 / 48_000)
                    entry.unsigned(EBMLID.seekPreRoll, 80_000_000)
                    entry.master(EBMLID.audio) { sound in
                        sound.float(EBMLID.samplingFrequency, 48_000)
                        sound.unsigned(EBMLID.channels, UInt64(audio.channels))
                    }
                }
            }
        }
        try append(header.bytes)
    }

    /// A TrackEntry: its number (also its UID), type (1 video, 2 audio), no lacing, the codec,
    /// then what `rest` adds.
    private static func trackEntry(_ tracks: inout EBMLBuffer, number: UInt8, type: UInt64, codec: String,
                                   _ rest: (inout EBMLBuffer) -> Void) {
        tracks.master(EBMLID.trackEntry) { entry in
            entry.unsigned(EBMLID.trackNumber, UInt64(number))
            entry.unsigned(EBMLID.trackUID, UInt64(number))
            entry.unsigned(EBMLID.trackType, type)
            entry.unsigned(EBMLID.flagLacing, 0)
            entry.string(EBMLID.codecID, codec)
            rest(&entry)
        }
    }

    // MARK: - Packets

    /// The packet's time in the file, or why it is refused.
    private func accept(_ timestamp: Duration, kind: PacketKind, stream: inout Stream) throws(MediaContainerError) -> Int64 {
        let time = Self.milliseconds(nanoseconds: (timestamp + stream.offset).nanosecondsClamped)
        if time < (stream.last?.file ?? 0) {
            throw .timestampWentBackwards(kind, previous: stream.last?.given ?? .zero - stream.offset, given: timestamp)
        }
        guard time <= Int64(1) << 40 else { throw .invalidConfiguration("a \(kind) timestamp of \(timestamp)") }
        stream.last = (timestamp, time)
        return time
    }

    /// Queues a packet and writes what interleaving lets go.
    private func enqueue(_ packet: Queued) throws(MediaContainerError) {
        queue.append(packet)
        try writeQueued(all: false)
    }

    /// Writes the earliest queued packet while every stream has one waiting, or the waiting span
    /// is longer than `interleaveLimit`, or (`all`, at the end) while any is left.
    private func writeQueued(all: Bool) throws(MediaContainerError) {
        let streams = (videoStream != nil ? 1 : 0) + (audioStream != nil ? 1 : 0)
        while let first = queue.first {
            var hasVideo = false, hasAudio = false
            var earliest = first.time, latest = first.time, earliestIndex = 0
            for (index, waiting) in queue.enumerated() {
                if waiting.kind == .video { hasVideo = true } else { hasAudio = true }
                if waiting.time < earliest { (earliest, earliestIndex) = (waiting.time, index) }
                latest = max(latest, waiting.time)
            }
            guard all || (hasVideo ? 1 : 0) + (hasAudio ? 1 : 0) == streams || latest - earliest > Self.interleaveLimit else { return }
            try writeBlock(queue.remove(at: earliestIndex))
        }
    }

    private func writeBlock(_ packet: Queued) throws(MediaContainerError) {
        guard let number = (packet.kind == .video ? videoStream : audioStream)?.number else { return }
        if let open = cluster {
            let relative = packet.time - open.time
            if open.blocks.bytes.count >= Self.clusterSizeLimit || relative > Self.clusterTimeLimit || relative < Int64(Int16.min)
                || (packet.kind == .video && packet.isKeyFrame && open.blocks.bytes.count >= Self.clusterKeyFrameSize) {
                try closeCluster()
            }
        }
        // Taken out while it grows, so appending does not copy the cluster's bytes.
        var open = cluster.take() ?? (packet.time, EBMLBuffer(), false)
        // A cue at each video key frame; with no video, at each cluster's first audio block.
        if packet.kind == .video ? packet.isKeyFrame : (videoStream == nil && !open.cued) {
            cues.append((packet.time, number, written - segmentStart))
            open.cued = true
        }
        // SimpleBlock (Matroska §10.3): track number, 16-bit time from the cluster's, flags.
        let relative = Int16(clamping: packet.time - open.time)
        open.blocks.id(EBMLID.simpleBlock)
        open.blocks.size(UInt64(4 + packet.data.count))
        open.blocks.bytes += [0x80 | number, UInt8(truncatingIfNeeded: UInt16(bitPattern: relative) >> 8),
                              UInt8(truncatingIfNeeded: UInt16(bitPattern: relative)), packet.isKeyFrame ? 0x80 : 0]
        open.blocks.bytes += packet.data
        cluster = open
    }

    private func closeCluster() throws(MediaContainerError) {
        guard let open = cluster.take() else { return }
        var element = EBMLBuffer()
        element.id(EBMLID.cluster)
        var timecode = EBMLBuffer()
        timecode.unsigned(EBMLID.clusterTimecode, UInt64(open.time))
        element.size(UInt64(timecode.bytes.count + open.blocks.bytes.count))
        element.bytes += timecode.bytes
        element.bytes += open.blocks.bytes
        try append(element.bytes)
    }

    // MARK: - The file

    private func append(_ bytes: [UInt8]) throws(MediaContainerError) {
        try write(bytes, at: written)
        written += bytes.count
    }

    private func write(_ bytes: [UInt8], at offset: Int) throws(MediaContainerError) {
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset + done)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .file("write", path: path)
            }
            done += count
        }
    }

    /// Nanoseconds to the file's milliseconds, to the nearest (halves away from zero; through
    /// microseconds, so no sum overflows).
    static func milliseconds(nanoseconds: Int64) -> Int64 {
        let microseconds = nanoseconds / 1000
        return microseconds >= 0 ? (microseconds + 500) / 1000 : -((500 - microseconds) / 1000)
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
