// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// What transport-cc feedback says about one transport-wide sequence number.
public struct TransportCCPacketStatus: Equatable, Sendable {
    /// The transport-wide sequence number (`TransportSequenceNumber`).
    public var sequenceNumber: UInt16
    /// Arrival time minus the previous received packet's arrival time (the reference time for the
    /// first), in 250 µs ticks; nil when the packet was not received.
    public var receiveDelta: Int16?

    /// A status with these fields.
    public init(sequenceNumber: UInt16, receiveDelta: Int16?) {
        self.sequenceNumber = sequenceNumber
        self.receiveDelta = receiveDelta
    }

    /// Whether the packet arrived.
    public var isReceived: Bool { receiveDelta != nil }
    /// The receive delta in microseconds.
    public var receiveDeltaMicroseconds: Int? { receiveDelta.map { Int($0) * 250 } }
}

/// Transport-wide congestion control feedback, RTPFB FMT 15
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1): for a run of transport-wide sequence
/// numbers, which packets arrived and when, for the sender's bandwidth estimate.
///
/// ```
/// |      base sequence number     |      packet status count      |
/// |                 reference time                | fb pkt. count |
/// |          packet chunk         |         packet chunk          |
/// ...
/// |         packet chunk          |  recv delta   |  recv delta   |
/// ```
///
/// Status symbols (§3.1.1): 0 not received, 1 received with a 1-byte delta (0...63.75 ms),
/// 2 received with a signed 2-byte delta, 3 reserved. Chunks (§3.1.3, §3.1.4): run length
/// `0|S S|run(13)`, or status vector `1|0|14 × 1-bit` / `1|1|7 × 2-bit`.
public struct TransportCCFeedback: Equatable, Sendable {
    /// The FMT value.
    public static let format: UInt8 = 15
    /// Who sends the feedback.
    public var senderSSRC: SSRC
    /// The media source field (libwebrtc puts the first media SSRC here).
    public var mediaSSRC: SSRC
    /// The transport-wide sequence number of the first status.
    public var baseSequenceNumber: UInt16
    /// Reference time in 64 ms units, 24 bits (serialization keeps the low 24 bits).
    public var referenceTime: UInt32
    /// Feedback packet count, to detect lost feedback.
    public var feedbackPacketCount: UInt8
    /// Receive delta per sequence number from `baseSequenceNumber` on, in 250 µs ticks; nil means
    /// not received.
    public var receiveDeltas: [Int16?]

    /// Feedback with these fields.
    public init(
        senderSSRC: SSRC, mediaSSRC: SSRC, baseSequenceNumber: UInt16, referenceTime: UInt32,
        feedbackPacketCount: UInt8, receiveDeltas: [Int16?]
    ) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.baseSequenceNumber = baseSequenceNumber
        self.referenceTime = referenceTime
        self.feedbackPacketCount = feedbackPacketCount
        self.receiveDeltas = receiveDeltas
    }

    /// Feedback built from per-packet statuses in ascending sequence order (across the wrap). The
    /// first status's number is the base; numbers skipped between statuses are reported not received.
    public init(
        senderSSRC: SSRC, mediaSSRC: SSRC, referenceTime: UInt32, feedbackPacketCount: UInt8,
        packets: [TransportCCPacketStatus]
    ) {
        let base = packets.first?.sequenceNumber ?? 0
        var deltas: [Int16?] = []
        deltas.reserveCapacity(packets.count)
        for packet in packets {
            let index = Int(packet.sequenceNumber &- base)
            if index >= deltas.count {
                deltas.append(contentsOf: repeatElement(nil, count: index - deltas.count))
                deltas.append(packet.receiveDelta)
            } else {
                deltas[index] = packet.receiveDelta
            }
        }
        self.init(
            senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequenceNumber: base, referenceTime: referenceTime,
            feedbackPacketCount: feedbackPacketCount, receiveDeltas: deltas)
    }

    /// One status per sequence number from the base on.
    public var packets: [TransportCCPacketStatus] {
        var result: [TransportCCPacketStatus] = []
        result.reserveCapacity(receiveDeltas.count)
        for (index, delta) in receiveDeltas.enumerated() {
            result.append(TransportCCPacketStatus(
                sequenceNumber: baseSequenceNumber &+ UInt16(truncatingIfNeeded: index), receiveDelta: delta))
        }
        return result
    }

    /// The reference time in milliseconds.
    public var referenceTimeMilliseconds: Int64 { Int64(referenceTime & 0xFF_FFFF) * 64 }

    static func parse(body: ByteReader) throws(RTCPParseError) -> TransportCCFeedback {
        var reader = body
        let sources = try FeedbackSources.read(&reader)
        let (base, statusCount, referenceTime, feedbackCount) = try readingRTCP { () throws(Truncated) in
            (try reader.u16(), Int(try reader.u16()), try reader.u24(), try reader.u8())
        }
        // Symbols, one byte each; a 2-byte chunk describes at most 8191 packets, which bounds the
        // allocation by the packet's length.
        var symbols: [UInt8] = []
        symbols.reserveCapacity(min(statusCount, reader.remaining / 2 * 0x1FFF))
        var received = 0
        try readingRTCP { () throws(Truncated) in
            while symbols.count < statusCount {
                let chunk = try reader.u16()
                let left = statusCount - symbols.count
                if chunk & 0x8000 == 0 {
                    let symbol = UInt8(truncatingIfNeeded: chunk >> 13) & 0x03
                    let run = min(Int(chunk & 0x1FFF), left)
                    symbols.append(contentsOf: repeatElement(symbol, count: run))
                    if symbol != 0 { received += run }
                } else if chunk & 0x4000 == 0 {
                    for index in 0..<min(14, left) {
                        let symbol = UInt8(truncatingIfNeeded: chunk >> (13 - index)) & 0x01
                        symbols.append(symbol)
                        received += Int(symbol)
                    }
                } else {
                    for index in 0..<min(7, left) {
                        let symbol = UInt8(truncatingIfNeeded: chunk >> (12 - 2 * index)) & 0x03
                        symbols.append(symbol)
                        if symbol != 0 { received += 1 }
                    }
                }
            }
        }
        // Every received packet has at least one delta byte: a cheap bound before allocating.
        guard received <= reader.remaining else {
            throw .truncated(Truncated(needed: received, offset: reader.offset))
        }
        var deltas: [Int16?] = []
        deltas.reserveCapacity(symbols.count)
        for symbol in symbols {
            switch symbol {
            case 0: deltas.append(nil)
            case 1: deltas.append(Int16(try readingRTCP { () throws(Truncated) in try reader.u8() }))
            case 2: deltas.append(Int16(bitPattern: try readingRTCP { () throws(Truncated) in try reader.u16() }))
            default: throw .reservedPacketStatusSymbol
            }
        }
        return TransportCCFeedback(
            senderSSRC: sources.sender, mediaSSRC: sources.media, baseSequenceNumber: base,
            referenceTime: referenceTime, feedbackPacketCount: feedbackCount, receiveDeltas: deltas)
    }

    /// The status symbol a delta needs (§3.1.1).
    @inline(__always)
    static func symbol(for delta: Int16?) -> UInt8 {
        guard let delta else { return 0 }
        return (0...255).contains(delta) ? 1 : 2
    }

    func serialize(into writer: inout ByteWriter) throws(RTCPSerializeError) {
        let count = receiveDeltas.count
        guard count <= 0xFFFF else { throw .tooManyEntries(count) }
        try writer.rtcpPacket(type: RTCPPacketType.transportFeedback, count: Self.format) {
            (writer: inout ByteWriter) throws(RTCPSerializeError) in
            writer.u32(senderSSRC.rawValue)
            writer.u32(mediaSSRC.rawValue)
            writer.u16(baseSequenceNumber)
            writer.u16(UInt16(count))
            writer.u24(referenceTime & 0xFF_FFFF)
            writer.u8(feedbackPacketCount)
            writeChunks(&writer)
            for delta in receiveDeltas {
                guard let delta else { continue }
                if (0...255).contains(delta) {
                    writer.u8(UInt8(delta))
                } else {
                    writer.u16(UInt16(bitPattern: delta))
                }
            }
        }
    }

    /// Greedy chunking: long runs as run-length chunks, otherwise 1-bit vectors where every symbol
    /// is 0 or 1, else 2-bit vectors.
    private func writeChunks(_ writer: inout ByteWriter) {
        let count = receiveDeltas.count
        var index = 0
        while index < count {
            let symbol = Self.symbol(for: receiveDeltas[index])
            var run = 1
            while index + run < count, run < 0x1FFF, Self.symbol(for: receiveDeltas[index + run]) == symbol { run += 1 }
            if run >= 14 || (run >= 7 && symbol == 2) {
                writer.u16(UInt16(symbol) << 13 | UInt16(run))
                index += run
                continue
            }
            let oneBitSpan = min(14, count - index)
            var fitsOneBit = true
            for offset in 0..<oneBitSpan where Self.symbol(for: receiveDeltas[index + offset]) == 2 {
                fitsOneBit = false
                break
            }
            if fitsOneBit {
                var chunk: UInt16 = 0x8000
                for offset in 0..<oneBitSpan {
                    chunk |= UInt16(Self.symbol(for: receiveDeltas[index + offset])) << (13 - offset)
                }
                writer.u16(chunk)
                index += oneBitSpan
            } else if run >= 7 {
                writer.u16(UInt16(symbol) << 13 | UInt16(run))
                index += run
            } else {
                var chunk: UInt16 = 0xC000
                let span = min(7, count - index)
                for offset in 0..<span {
                    chunk |= UInt16(Self.symbol(for: receiveDeltas[index + offset])) << (12 - 2 * offset)
                }
                writer.u16(chunk)
                index += span
            }
        }
    }
}
