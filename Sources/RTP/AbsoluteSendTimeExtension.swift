/// The sender's send time of a packet, 24-bit 6.18 fixed-point seconds that wrap every 64 s
/// (webrtc.org abs-send-time); receive-side bandwidth estimation (REMB) uses it.
public struct AbsoluteSendTime: RTPHeaderExtensionValue, Hashable {
    /// The 24-bit value: 6 bits of seconds, 18 bits of fraction. Serialization keeps 24 bits.
    public var rawValue: UInt32

    /// The time with this 24-bit value.
    public init(rawValue: UInt32) { self.rawValue = rawValue & 0xFF_FFFF }

    /// The time from a 64-bit NTP timestamp (RFC 3550 §4): its middle 24 bits.
    public init(ntpTimestamp: UInt64) { rawValue = UInt32(truncatingIfNeeded: ntpTimestamp >> 14) & 0xFF_FFFF }

    /// The time from microseconds since any epoch, modulo 64 s.
    public init(microseconds: UInt64) {
        // 2^18 units per second; (µs << 18) / 1e6, done modulo 64 s to avoid overflow.
        let wrapped = microseconds % 64_000_000
        rawValue = UInt32((wrapped << 18) / 1_000_000) & 0xFF_FFFF
    }

    /// The time in seconds within the 64-second wrap.
    public var seconds: Double { Double(rawValue) / Double(1 << 18) }

    /// `HeaderExtensionURI.absoluteSendTime`.
    public static var uri: HeaderExtensionURI { .absoluteSendTime }
    /// The stored id of the abs-send-time extension.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.absoluteSendTimeID }

    /// Reads three bytes.
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        guard data.count == 3 else { throw .invalidHeaderExtensionValue(id: id) }
        let start = data.startIndex
        rawValue = UInt32(data[start]) << 16 | UInt32(data[start + 1]) << 8 | UInt32(data[start + 2])
    }

    /// The three bytes.
    public var extensionData: [UInt8] {
        [UInt8(truncatingIfNeeded: rawValue >> 16), UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)]
    }
}
