/// The BUNDLE media identification carried in RTP (RFC 8843 §15.2, sdes:mid): which m-line of
/// the SDP this packet's stream belongs to.
public struct MediaIdentification: RTPHeaderExtensionValue, Hashable, CustomStringConvertible {
    /// The mid, as in SDP `a=mid`.
    public var value: String
    /// The mid with this text.
    public init(_ value: String) { self.value = value }

    /// `HeaderExtensionURI.mid`.
    public static var uri: HeaderExtensionURI { .mid }
    /// The stored id of the mid extension.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.midID }

    /// Reads the mid: UTF-8 text without terminator (RFC 7941 §4.2); empty or invalid text is an error.
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        guard !data.isEmpty, let text = String(validating: data, as: UTF8.self) else {
            throw .invalidHeaderExtensionValue(id: id)
        }
        value = text
    }

    /// The mid's UTF-8 bytes.
    public var extensionData: [UInt8] { Array(value.utf8) }
    /// The mid text.
    public var description: String { value }
}
