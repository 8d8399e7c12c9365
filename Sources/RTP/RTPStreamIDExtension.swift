/// The RTP stream id of a simulcast layer (RFC 8852 §3.1, `urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id`):
/// the `rid` the SDP's `a=rid` and `a=simulcast` name (RFC 8851, RFC 8853), carried in the
/// packets of a layer whose SSRC the receiver has not yet learned.
public struct RTPStreamID: RTPHeaderExtensionValue, Hashable, CustomStringConvertible {
    /// The rid, as in SDP `a=rid`.
    public var value: String
    /// The rid with this text.
    public init(_ value: String) { self.value = value }

    public static var uri: HeaderExtensionURI { .rtpStreamID }

    /// Reads the rid: RFC 8851 §10's rid-id (letters, digits, `-` and `_`), 1 to 255 bytes
    /// (RFC 8852 §3.1 allows 1-255 bytes; RFC 8851 §10's rid syntax is narrower: anything else
    /// could name no `a=rid`, so it is an error).
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        value = try Self.rid(data, id: id)
    }

    static func rid(_ data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) -> String {
        // Some senders pad the element with zero bytes (RFC 8285 §4.2 allows padding after it).
        let text = data.prefix { $0 != 0 }
        guard !text.isEmpty, text.count <= 255,
              text.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }),
              let rid = String(validating: text, as: UTF8.self)
        else { throw .invalidHeaderExtensionValue(id: id) }
        return rid
    }

    public var extensionData: [UInt8] { Array(value.utf8) }
    public var description: String { value }
}

/// The rid of the layer a retransmission repairs (RFC 8852 §3.2,
/// `urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id`), carried by RTX packets (RFC 4588).
public struct RepairedRTPStreamID: RTPHeaderExtensionValue, Hashable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }

    public static var uri: HeaderExtensionURI { .repairedRTPStreamID }

    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        value = try RTPStreamID.rid(data, id: id)
    }

    public var extensionData: [UInt8] { Array(value.utf8) }
    public var description: String { value }
}
