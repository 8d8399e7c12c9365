// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// Why bytes are not a well-formed Opus packet (RFC 6716 §3.4, requirements R1-R7).
public enum OpusParseError: Error, Equatable, Sendable {
    /// The bytes end before a field the TOC says is there (R1: at least one byte).
    case truncated(Truncated)
    /// A frame is longer than 1275 bytes (R2).
    case frameTooLong(Int)
    /// Code 1 with an odd number of bytes after the TOC (R3).
    case unequalFramesOfOddLength(Int)
    /// Code 2 or code 3 VBR: the frame lengths add up to more than the packet (R4, R7).
    case frameLengthsExceedPacket
    /// Code 3 with a frame count of 0 (R5).
    case zeroFrameCount
    /// Code 3 whose frames last longer than 120 ms (R5).
    case durationTooLong(samples: Int)
    /// Code 3 CBR: the bytes left do not divide evenly among the frames (R6).
    case unevenConstantBitrateFrames
    /// Code 3: the padding is longer than the packet (R6, R7).
    case paddingExceedsPacket
}

/// Opus operating mode, from the TOC config (RFC 6716 §3.1, Table 2).
public enum OpusMode: Sendable, Equatable {
    /// SILK only (configs 0-11).
    case silk
    /// SILK and CELT (configs 12-15).
    case hybrid
    /// CELT only (configs 16-31).
    case celt
}

/// Opus audio bandwidth, from the TOC config (RFC 6716 §2, Table 1).
public enum OpusBandwidth: Sendable, Equatable {
    /// 4 kHz, 8 kHz sampling.
    case narrowband
    /// 6 kHz, 12 kHz sampling.
    case mediumband
    /// 8 kHz, 16 kHz sampling.
    case wideband
    /// 12 kHz, 24 kHz sampling.
    case superWideband
    /// 20 kHz, 48 kHz sampling.
    case fullband
}

/// What the TOC byte and frame count of one Opus packet say (RFC 6716 §3.1, §3.2); the RTP
/// payload of Opus is exactly one such packet (RFC 7587 §4.2).
///
/// ```
///  0 1 2 3 4 5 6 7
/// +-+-+-+-+-+-+-+-+
/// | config  |s| c |
/// +-+-+-+-+-+-+-+-+
/// ```
public struct OpusPacketInfo: Hashable, Sendable {
    /// The configuration number, 0...31 (mode, bandwidth and frame size).
    public var config: UInt8
    /// s: the packet is stereo.
    public var isStereo: Bool
    /// c: the frame count code, 0 (one frame), 1 (two equal), 2 (two different), 3 (arbitrary).
    public var frameCountCode: UInt8
    /// Frames in the packet, 1...48.
    public var frameCount: Int

    /// The mode the config selects.
    public var mode: OpusMode {
        switch config {
        case 0...11: .silk
        case 12...15: .hybrid
        default: .celt
        }
    }

    /// The audio bandwidth the config selects.
    public var bandwidth: OpusBandwidth {
        switch config {
        case 0...3, 16...19: .narrowband
        case 4...7: .mediumband
        case 8...11, 20...23: .wideband
        case 12...13, 24...27: .superWideband
        default: .fullband
        }
    }

    /// Samples per channel of one frame at 48 kHz (RFC 6716 Table 2: 2.5, 5, 10, 20, 40 or 60 ms).
    public var samplesPerFrame: Int {
        switch config {
        case 0...11: [480, 960, 1920, 2880][Int(config & 0x03)]
        case 12...15: [480, 960][Int(config & 0x01)]
        default: [120, 240, 480, 960][Int(config & 0x03)]
        }
    }

    /// The packet's duration in samples per channel at 48 kHz: the RTP timestamp advance.
    public var durationSamples: Int { samplesPerFrame * frameCount }

    /// Reads the TOC and validates the framing of a whole Opus packet (RFC 6716 §3.4, R1-R7).
    public static func parse(_ packet: ArraySlice<UInt8>) throws(OpusParseError) -> OpusPacketInfo {
        let start = packet.startIndex
        let length = packet.count
        guard length >= 1 else { throw .truncated(Truncated(needed: 1, offset: 0)) }
        let toc = packet[start]
        var info = OpusPacketInfo(config: toc >> 3, isStereo: toc & 0x04 != 0, frameCountCode: toc & 0x03, frameCount: 1)
        let maxFrame = 1275
        switch info.frameCountCode {
        case 0:
            guard length - 1 <= maxFrame else { throw .frameTooLong(length - 1) }
        case 1:
            info.frameCount = 2
            guard (length - 1) % 2 == 0 else { throw .unequalFramesOfOddLength(length - 1) }
            guard (length - 1) / 2 <= maxFrame else { throw .frameTooLong((length - 1) / 2) }
        case 2:
            info.frameCount = 2
            var offset = 1
            let first = try frameLength(packet, at: &offset)
            guard first <= length - offset else { throw .frameLengthsExceedPacket }
            let second = length - offset - first
            guard first <= maxFrame, second <= maxFrame else { throw .frameTooLong(max(first, second)) }
        default:
            guard length >= 2 else { throw .truncated(Truncated(needed: 1, offset: 1)) }
            let countByte = packet[start + 1]
            let count = Int(countByte & 0x3F)
            guard count > 0 else { throw .zeroFrameCount }
            info.frameCount = count
            guard info.durationSamples <= 5760 else { throw .durationTooLong(samples: info.durationSamples) }
            var offset = 2
            var padding = 0
            if countByte & 0x40 != 0 {
                // Padding length: each 255 means 254 bytes and another length byte (RFC 6716 §3.2.5).
                while true {
                    guard offset < length else { throw .truncated(Truncated(needed: 1, offset: offset)) }
                    let byte = Int(packet[start + offset])
                    offset += 1
                    padding += byte == 255 ? 254 : byte
                    if byte != 255 { break }
                }
            }
            guard padding <= length - offset else { throw .paddingExceedsPacket }
            let available = length - offset - padding
            if countByte & 0x80 != 0 {
                // VBR: M-1 frame lengths, the last frame takes the rest.
                var total = 0
                for _ in 0..<(count - 1) {
                    let frame = try frameLength(packet, at: &offset)
                    guard frame <= maxFrame else { throw .frameTooLong(frame) }
                    total += frame
                }
                guard offset + padding <= length, total <= length - offset - padding else {
                    throw .frameLengthsExceedPacket
                }
                let last = length - offset - padding - total
                guard last <= maxFrame else { throw .frameTooLong(last) }
            } else {
                guard available % count == 0 else { throw .unevenConstantBitrateFrames }
                guard available / count <= maxFrame else { throw .frameTooLong(available / count) }
            }
        }
        return info
    }

    /// Reads a 1- or 2-byte frame length (RFC 6716 §3.2.1).
    private static func frameLength(_ packet: ArraySlice<UInt8>, at offset: inout Int) throws(OpusParseError) -> Int {
        let start = packet.startIndex
        guard offset < packet.count else { throw .truncated(Truncated(needed: 1, offset: offset)) }
        let first = Int(packet[start + offset])
        if first < 252 {
            offset += 1
            return first
        }
        guard offset + 1 < packet.count else { throw .truncated(Truncated(needed: 2, offset: offset)) }
        let second = Int(packet[start + offset + 1])
        offset += 2
        return second * 4 + first
    }

    /// Reads a whole Opus packet.
    public static func parse(_ packet: [UInt8]) throws(OpusParseError) -> OpusPacketInfo { try parse(packet[...]) }
}

/// Wraps encoded Opus packets as RTP payloads (RFC 7587 §4.2): the payload is the packet itself;
/// the packetizer validates it and says how far the RTP timestamp (48 kHz, §4.1) advances.
public struct OpusPacketizer: Sendable {
    /// The RTP timestamp the next packet gets.
    public var nextTimestamp: UInt32

    /// A packetizer whose first packet gets `firstTimestamp` (random, RFC 3550 §5.1).
    public init(firstTimestamp: UInt32) { nextTimestamp = firstTimestamp }

    /// The payload and RTP timestamp for one encoded packet; throws for a malformed packet.
    public mutating func packetize(_ packet: [UInt8]) throws(OpusParseError) -> (payload: [UInt8], timestamp: UInt32) {
        let info = try OpusPacketInfo.parse(packet[...])
        let timestamp = nextTimestamp
        nextTimestamp &+= UInt32(info.durationSamples)
        return (packet, timestamp)
    }
}
