/// Splits encoded VP8 frames into RTP payloads (RFC 7741 §4.4 with one partition per frame):
/// each payload is a descriptor with a 15-bit picture id, then a piece of the frame; the first has
/// the S bit; the sizes are balanced so no packet is much smaller than the others. The caller sets
/// the RTP marker bit on the last payload and gives all of a frame's packets the same timestamp.
public struct VP8Packetizer: Sendable {
    /// The largest payload (descriptor included) this packetizer writes.
    public let maxPayloadSize: Int
    /// The picture id the next frame gets (15 bits, wraps).
    public var nextPictureID: UInt16

    /// Descriptor bytes: X byte, I byte and two bytes of 15-bit picture id.
    static let descriptorSize = 4

    /// A packetizer for this payload budget (MTU minus IP, UDP, SRTP and RTP header overhead);
    /// nil when the budget cannot hold the descriptor and one byte of frame.
    public init?(maxPayloadSize: Int, firstPictureID: UInt16 = 0) {
        guard maxPayloadSize > Self.descriptorSize else { return nil }
        self.maxPayloadSize = maxPayloadSize
        nextPictureID = firstPictureID & 0x7FFF
    }

    /// The payloads for one encoded frame, in order; none for an empty frame.
    public mutating func packetize(_ frame: ArraySlice<UInt8>) -> [[UInt8]] {
        guard !frame.isEmpty else { return [] }
        let pictureID = nextPictureID
        nextPictureID = (nextPictureID &+ 1) & 0x7FFF
        let budget = maxPayloadSize - Self.descriptorSize
        let packetCount = (frame.count + budget - 1) / budget
        let base = frame.count / packetCount
        let longer = frame.count % packetCount  // the first `longer` payloads take one byte more
        var payloads: [[UInt8]] = []
        payloads.reserveCapacity(packetCount)
        var offset = frame.startIndex
        for index in 0..<packetCount {
            let size = base + (index < longer ? 1 : 0)
            var payload: [UInt8] = []
            payload.reserveCapacity(Self.descriptorSize + size)
            payload.append(index == 0 ? 0x90 : 0x80)  // X, and S on the first
            payload.append(0x80)  // I
            payload.append(0x80 | UInt8(truncatingIfNeeded: pictureID >> 8))  // M, 15-bit id
            payload.append(UInt8(truncatingIfNeeded: pictureID))
            payload.append(contentsOf: frame[offset..<(offset + size)])
            offset += size
            payloads.append(payload)
        }
        return payloads
    }

    /// The payloads for one encoded frame.
    public mutating func packetize(_ frame: [UInt8]) -> [[UInt8]] { packetize(frame[...]) }
}
