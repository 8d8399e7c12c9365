// Fuzz targets compile Wire and RTP as one module, where there is no Wire to import.
#if canImport(Wire)
import Wire
#endif

/// One RTP packet (RFC 3550 §5.1): the fixed header, contributing sources, header extensions and
/// the payload with any padding stripped.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
/// |                           timestamp                           |
/// |           synchronization source (SSRC) identifier            |
/// |            contributing source (CSRC) identifiers  ...        |
/// ```
///
/// `payload` is a slice of the datagram that was parsed (no copy); its indices are the datagram's.
public struct RTPPacket: Equatable, Sendable {
    /// The marker bit: for video, the last packet of a frame (RFC 3550 §5.1, RFC 7741 §4.1).
    public var marker: Bool
    /// The codec, as bound by SDP `a=rtpmap`.
    public var payloadType: PayloadType
    /// The 16-bit sequence number; unwrap it with `SequenceUnwrapper`.
    public var sequenceNumber: UInt16
    /// The media timestamp in the codec's clock rate (90 kHz video, 48 kHz Opus).
    public var timestamp: UInt32
    /// The sender's stream.
    public var ssrc: SSRC
    /// Contributing sources, for example the speakers in a mix (at most 15).
    public var csrcs: [SSRC]
    /// RFC 8285 header extension elements in wire order. Serialization uses the one-byte form when
    /// every element fits it and the two-byte form otherwise.
    public var extensions: [RTPHeaderExtension]
    /// A header extension block in a profile other than RFC 8285's, kept as received
    /// (RFC 3550 §5.3.1). Must be nil when `extensions` is not empty.
    public var otherProfileExtension: RTPOtherProfileExtension?
    /// The payload without padding.
    public var payload: ArraySlice<UInt8>
    /// Number of padding bytes after the payload, including the count byte itself; 0 when the P
    /// bit is clear (RFC 3550 §5.1). SRTP and pacing use padding; the media path ignores it.
    public var paddingLength: UInt8

    /// A packet with the given header fields and payload.
    public init(
        marker: Bool = false, payloadType: PayloadType, sequenceNumber: UInt16, timestamp: UInt32, ssrc: SSRC,
        csrcs: [SSRC] = [], extensions: [RTPHeaderExtension] = [],
        otherProfileExtension: RTPOtherProfileExtension? = nil,
        payload: ArraySlice<UInt8> = [], paddingLength: UInt8 = 0
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
        self.otherProfileExtension = otherProfileExtension
        self.payload = payload
        self.paddingLength = paddingLength
    }

    /// Size of the fixed header (RFC 3550 §5.1).
    public static let fixedHeaderSize = 12

    /// Parses one RTP packet from a whole datagram (after SRTP unprotect).
    public static func parse(_ bytes: [UInt8]) throws(RTPParseError) -> RTPPacket {
        let count = bytes.count
        guard count >= fixedHeaderSize else { throw .truncated(Truncated(needed: fixedHeaderSize, offset: 0)) }
        let first = bytes[0]
        let version = first >> 6
        guard version == 2 else { throw .unsupportedVersion(version) }
        let second = bytes[1]
        let csrcCount = Int(first & 0x0F)
        var offset = fixedHeaderSize
        var csrcs: [SSRC] = []
        if csrcCount > 0 {
            guard count - offset >= 4 * csrcCount else {
                throw .truncated(Truncated(needed: 4 * csrcCount, offset: offset))
            }
            csrcs.reserveCapacity(csrcCount)
            for _ in 0..<csrcCount {
                csrcs.append(SSRC(readU32(bytes, offset)))
                offset += 4
            }
        }
        var extensions: [RTPHeaderExtension] = []
        var other: RTPOtherProfileExtension?
        if first & 0x10 != 0 {
            // RFC 3550 §5.3.1: 16-bit profile, 16-bit length in words, then the words.
            guard count - offset >= 4 else { throw .truncated(Truncated(needed: 4, offset: offset)) }
            let profile = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let length = 4 * (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            offset += 4
            guard count - offset >= length else { throw .truncated(Truncated(needed: length, offset: offset)) }
            let end = offset + length
            if profile == RTPHeaderExtension.oneByteProfile {
                extensions = try RTPHeaderExtension.parseOneByteElements(bytes, from: offset, to: end)
            } else if profile & 0xFFF0 == RTPHeaderExtension.twoByteProfile {
                extensions = try RTPHeaderExtension.parseTwoByteElements(bytes, from: offset, to: end)
            } else {
                other = RTPOtherProfileExtension(profile: profile, data: bytes[offset..<end])
            }
            offset = end
        }
        var payloadEnd = count
        var padding: UInt8 = 0
        if first & 0x20 != 0 {
            // RFC 3550 §5.1: the last octet counts the padding octets, itself included.
            guard payloadEnd > offset else { throw .invalidPadding(0) }
            padding = bytes[payloadEnd - 1]
            guard padding > 0, Int(padding) <= payloadEnd - offset else { throw .invalidPadding(padding) }
            payloadEnd -= Int(padding)
        }
        return RTPPacket(
            marker: second & 0x80 != 0, payloadType: PayloadType(second & 0x7F),
            sequenceNumber: UInt16(bytes[2]) << 8 | UInt16(bytes[3]),
            timestamp: readU32(bytes, 4), ssrc: SSRC(readU32(bytes, 8)), csrcs: csrcs,
            extensions: extensions, otherProfileExtension: other,
            payload: bytes[offset..<payloadEnd], paddingLength: padding)
    }

    /// The number of bytes `serialize` writes.
    public var serializedSize: Int {
        var size = Self.fixedHeaderSize + 4 * csrcs.count + payload.count + Int(paddingLength)
        if !extensions.isEmpty {
            size += 4 + RTPHeaderExtension.blockLength(extensions, oneByte: RTPHeaderExtension.fitsOneByte(extensions))
        } else if let other = otherProfileExtension {
            size += 4 + (other.data.count + 3) & ~3
        }
        return size
    }

    /// Capacity `serialized` keeps after the packet, so that SRTP writes its tag in place: 16
    /// bytes for AEAD_AES_128_GCM (RFC 7714 §7.2), the longest, and 4 more as SRTCP would need.
    public static let srtpTrailerRoom = 20

    /// The packet as bytes on the wire.
    public func serialized() throws(RTPSerializeError) -> [UInt8] {
        var writer = ByteWriter(capacity: serializedSize + Self.srtpTrailerRoom)
        try serialize(into: &writer)
        return writer.bytes
    }

    /// Appends the packet to `writer`.
    public func serialize(into writer: inout ByteWriter) throws(RTPSerializeError) {
        guard csrcs.count <= 15 else { throw .tooManyCSRCs(csrcs.count) }
        guard payloadType.rawValue <= 0x7F else { throw .invalidPayloadType(payloadType) }
        guard extensions.isEmpty || otherProfileExtension == nil else { throw .conflictingHeaderExtensions }
        let hasExtension = !extensions.isEmpty || otherProfileExtension != nil
        writer.u8(0x80 | (paddingLength > 0 ? 0x20 : 0) | (hasExtension ? 0x10 : 0) | UInt8(csrcs.count))
        writer.u8((marker ? 0x80 : 0) | payloadType.rawValue)
        writer.u16(sequenceNumber)
        writer.u32(timestamp)
        writer.u32(ssrc.rawValue)
        for csrc in csrcs { writer.u32(csrc.rawValue) }
        if !extensions.isEmpty {
            try RTPHeaderExtension.serialize(extensions, into: &writer)
        } else if let other = otherProfileExtension {
            let words = (other.data.count + 3) / 4
            guard words <= 0xFFFF else { throw .headerExtensionBlockTooLong }
            writer.u16(other.profile)
            writer.u16(UInt16(words))
            writer.append(other.data)
            writer.zeros(4 * words - other.data.count)
        }
        writer.append(payload)
        if paddingLength > 0 {
            writer.zeros(Int(paddingLength) - 1)
            writer.u8(paddingLength)
        }
    }
}

/// A header extension block whose profile is neither RFC 8285 form (RFC 3550 §5.3.1).
public struct RTPOtherProfileExtension: Equatable, Sendable {
    /// The 16 "defined by profile" bits.
    public var profile: UInt16
    /// The extension words; serialization pads them with zeros to a multiple of 4 bytes.
    public var data: ArraySlice<UInt8>
    /// A block with this profile and data.
    public init(profile: UInt16, data: ArraySlice<UInt8>) {
        self.profile = profile
        self.data = data
    }
}

/// Reads a big-endian 32-bit value at `offset`; the caller has checked the bounds.
@inline(__always)
func readU32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
        | UInt32(bytes[offset + 3])
}
