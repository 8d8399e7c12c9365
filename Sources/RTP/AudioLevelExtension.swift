/// The client-to-mixer audio level of one packet (RFC 6464 §3): what the mixer uses to pick the
/// active speaker without decoding.
///
/// ```
///  0 1 2 3 4 5 6 7
/// +-+-+-+-+-+-+-+-+
/// |V|    level    |
/// +-+-+-+-+-+-+-+-+
/// ```
public struct AudioLevel: RTPHeaderExtensionValue, Hashable {
    /// The V bit: the sender's voice activity detector thinks this packet holds speech.
    public var voiceActivity: Bool
    /// The level in -dBov, 0 (loudest) to 127 (silence); serialization keeps the low 7 bits.
    public var level: UInt8

    /// A level with this voice-activity flag and -dBov value.
    public init(voiceActivity: Bool, level: UInt8) {
        self.voiceActivity = voiceActivity
        self.level = level
    }

    /// `HeaderExtensionURI.audioLevel`.
    public static var uri: HeaderExtensionURI { .audioLevel }
    /// The stored id of the audio level extension.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.audioLevelID }

    /// Reads the first byte; RFC 6464 §3 allows padding the element, so extra bytes are ignored.
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        guard let byte = data.first else { throw .invalidHeaderExtensionValue(id: id) }
        voiceActivity = byte & 0x80 != 0
        level = byte & 0x7F
    }

    /// The one byte.
    public var extensionData: [UInt8] { [(voiceActivity ? 0x80 : 0) | (level & 0x7F)] }
}
