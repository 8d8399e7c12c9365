private import COgg

/// Ogg Opus (RFC 7845): pages and packets by libogg, the first logical stream whose first packet
/// is an OpusHead. Its two header packets (OpusHead, OpusTags) are read for the channel count and
/// the pre-skip and not returned.
///
/// Times (RFC 7845 §4): a page's granule position is the sample count (48 kHz, counting the
/// pre-skip) at the end of the last packet that ends on it. The first audio page's packets are
/// timed back from its granule position; later packets follow the one before by its length, so
/// the first packet starts at -pre-skip in a stream that begins at granule 0.
final class OggOpusDemuxer: ContainerDemuxer {
    let video: MediaFileReader.VideoInfo? = nil
    private(set) var audio: MediaFileReader.AudioInfo?
    private let file: MediaFile
    private var sync = ogg_sync_state()
    private var stream = ogg_stream_state()
    private var serial: Int32?
    /// Header packets of the Opus stream still to pass (OpusHead and OpusTags).
    private var headersLeft = 2
    private var channels = 0, preSkip = 0
    /// Packets read from the pages, timed, not yet returned.
    private var ready: [EncodedPacket] = []
    private var readyIndex = 0
    /// The next packet's first sample, once the first audio page has set it.
    private var nextSample: Int64?
    private var ended = false
    /// The codecs of the streams before an Opus one (for `.unsupportedCodec`).
    private var otherCodecs: [String] = []

    /// Bytes handed to libogg per read.
    private static let chunk = 16384

    init(file: MediaFile) throws(MediaContainerError) {
        self.file = file
        ogg_sync_init(&sync)
        // The headers: read pages until OpusHead and OpusTags have passed.
        var page = ogg_page()
        while headersLeft > 0 {
            guard try nextPage(&page) else {
                if serial == nil { throw .unsupportedCodec(otherCodecs.isEmpty ? "no streams" : otherCodecs.joined(separator: ", ")) }
                throw .corrupt("the Ogg file ends inside the Opus headers")
            }
            try take(&page)
        }
        audio = .init(channels: channels, preSkip: preSkip)
    }

    deinit {
        ogg_sync_clear(&sync)
        if serial != nil { ogg_stream_clear(&stream) }
    }

    func nextPacket() throws(MediaContainerError) -> EncodedPacket? {
        while readyIndex == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyIndex = 0
            var page = ogg_page()
            guard !ended, try nextPage(&page) else { return nil }
            try take(&page)
        }
        defer { readyIndex += 1 }
        return ready[readyIndex]
    }

    /// The next page of any stream into `page` (its bytes stay libogg's, valid until the next
    /// call); false at the end of the file.
    private func nextPage(_ page: inout ogg_page) throws(MediaContainerError) -> Bool {
        while true {
            let status = ogg_sync_pageout(&sync, &page)
            if status == 1 { return true }
            // status -1: bytes that are not a page were skipped (libogg resynchronises); 0: more bytes.
            if status == 0 {
                guard let buffer = ogg_sync_buffer(&sync, Self.chunk) else { throw .corrupt("out of memory") }
                let read = try file.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Self.chunk))
                guard read > 0 else {
                    ended = true
                    return false
                }
                ogg_sync_wrote(&sync, read)
            }
        }
    }

    /// Feeds a page to the Opus stream (choosing the stream at its first page) and times the
    /// packets that end on it.
    private func take(_ page: inout ogg_page) throws(MediaContainerError) {
        let pageSerial = ogg_page_serialno(&page)
        if serial == nil {
            guard ogg_page_bos(&page) != 0 else { return }
            // A first page holds exactly the stream's identification packet (RFC 7845 §3).
            let body = UnsafeBufferPointer(start: page.body, count: page.body == nil ? 0 : max(0, page.body_len))
            guard body.starts(with: "OpusHead".utf8) else {
                otherCodecs.append(Self.codecName(Array(body.prefix(16))))
                return
            }
            serial = pageSerial
            ogg_stream_init(&stream, pageSerial)
        }
        guard pageSerial == serial else { return }
        let fed = ogg_stream_pagein(&stream, &page)
        guard fed == 0 else { return }  // a page libogg does not take (bad version, wrong serial)
        var packets: [[UInt8]] = []
        var packet = ogg_packet()
        while true {
            let status = ogg_stream_packetout(&stream, &packet)
            if status == 0 { break }
            guard status == 1, let bytes = packet.packet, packet.bytes > 0 else { continue }  // -1: a gap (lost pages)
            let data = Array(UnsafeBufferPointer(start: bytes, count: packet.bytes))
            if headersLeft > 0 {
                if headersLeft == 2 { try readOpusHead(data) }
                headersLeft -= 1
                continue
            }
            packets.append(data)
        }
        guard !packets.isEmpty else { return }
        let lengths = packets.map { Int64(OpusDecoder.sampleCount(of: $0) ?? 0) }
        var sample: Int64
        if let next = nextSample {
            sample = next
        } else {
            // The first audio page: its packets end at its granule position (when it has none,
            // they start at 0).
            let granule = ogg_page_granulepos(&page), total = lengths.reduce(0, +)
            sample = (granule >= 0 ? granule : total) &- total
        }
        for (data, length) in zip(packets, lengths) {
            // In 128 bits: a hostile granule position must not overflow.
            let nanoseconds = (Int128(sample) - Int128(preSkip)) * 1_000_000_000 / 48_000
            ready.append(EncodedPacket(kind: .audio, data: data, timestamp: .nanoseconds(Int64(clamping: nanoseconds)), isKeyFrame: true))
            sample &+= length
        }
        nextSample = sample
    }

    /// OpusHead (RFC 7845 §5.1): 'OpusHead', version, channel count, pre-skip (16 bits LE), ….
    private func readOpusHead(_ head: [UInt8]) throws(MediaContainerError) {
        guard head.count >= 19, head.starts(with: Array("OpusHead".utf8)) else { throw .corrupt("the OpusHead packet is cut short") }
        guard head[8] >> 4 == 0 else { throw .corrupt("OpusHead version \(head[8])") }  // major version 0
        channels = Int(head[9])
        guard channels > 0 else { throw .corrupt("an OpusHead with no channels") }
        preSkip = Int(head[10]) | Int(head[11]) << 8
    }

    /// A name for another stream's codec, from its identification packet.
    private static func codecName(_ first: [UInt8]) -> String {
        if first.starts(with: [0x01] + Array("vorbis".utf8)) { return "vorbis" }
        if first.starts(with: [0x80] + Array("theora".utf8)) { return "theora" }
        if first.starts(with: Array("Speex".utf8)) { return "speex" }
        if first.starts(with: [0x7F] + Array("FLAC".utf8)) { return "flac" }
        return "unknown"
    }
}
