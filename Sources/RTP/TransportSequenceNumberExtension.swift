/// The transport-wide sequence number of a packet, counted across every stream of a transport
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2); transport-cc feedback refers to it.
public struct TransportSequenceNumber: RTPHeaderExtensionValue, Hashable {
    /// The 16-bit number.
    public var value: UInt16
    /// The number with this value.
    public init(_ value: UInt16) { self.value = value }

    /// `HeaderExtensionURI.transportSequenceNumber`.
    public static var uri: HeaderExtensionURI { .transportSequenceNumber }
    /// The stored id of the transport-wide sequence number extension.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.transportSequenceNumberID }

    /// Reads two bytes, big-endian.
    public init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError) {
        guard data.count == 2 else { throw .invalidHeaderExtensionValue(id: id) }
        value = UInt16(data[data.startIndex]) << 8 | UInt16(data[data.startIndex + 1])
    }

    /// The two bytes.
    public var extensionData: [UInt8] { [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
}
