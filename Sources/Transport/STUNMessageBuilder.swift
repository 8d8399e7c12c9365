// Building STUN messages (RFC 8489 §6): header, attributes padded to 4 bytes, then
// MESSAGE-INTEGRITY and FINGERPRINT in the only order RFC 8489 §14.5 and §14.7 allow.
#if canImport(Wire)
import Wire
#endif

/// Why an attribute cannot be added to a message.
public enum STUNEncodeError: Error, Sendable, Equatable {
    /// A value longer than its definition allows (USERNAME 513 bytes; SOFTWARE, REALM, NONCE and
    /// the ERROR-CODE reason 763 bytes; any value 65,535 bytes).
    case valueTooLong(STUNAttributeType, length: Int)
    /// An ERROR-CODE outside 300...699 (RFC 8489 §14.8).
    case invalidErrorCode(UInt16)
    /// MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 or FINGERPRINT given as an ordinary attribute:
    /// their place is fixed, so `finish(integrityKey:fingerprint:)` writes them.
    case positionalAttribute(STUNAttributeType)
    /// The message would exceed the 16-bit length field (with room kept for the integrity and
    /// fingerprint attributes).
    case messageTooLong
}

/// Writes one STUN message: the header, then attributes in the order they are appended, then
/// (in `finish`) MESSAGE-INTEGRITY and FINGERPRINT, each computed over the bytes before it with
/// the header length set as RFC 8489 §14.5 and §14.7 require.
///
/// ```swift
/// var response = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: request.transactionID)
/// try response.append(.xorMappedAddress(source))
/// let datagram = response.finish(integrityKey: .shortTerm(password: localPassword), fingerprint: true)
/// ```
public struct STUNMessageBuilder: Sendable, Equatable {
    /// The largest attribute section `append` accepts: the 16-bit length rounded down to a
    /// multiple of 4, less 24 bytes for MESSAGE-INTEGRITY and 8 for FINGERPRINT.
    public static let maximumAttributesLength = 0xFFFC - 24 - 8

    private var writer: ByteWriter
    /// The transaction ID written in the header (and XORed into XOR-MAPPED-ADDRESS for IPv6).
    public let transactionID: STUNTransactionID
    /// The byte that pads values to a multiple of 4. Receivers ignore padding (RFC 8489 §14);
    /// zero is the usual choice, and RFC 5769's vectors pad with 0x20 (a space), which this
    /// makes reproducible.
    public let paddingByte: UInt8

    /// Starts a message: writes the 20-byte header with the length to be filled in by `finish`.
    /// `capacity` is the number of bytes to reserve; a Binding check or response fits in 128.
    public init(type: STUNMessageType, transactionID: STUNTransactionID, paddingByte: UInt8 = 0, capacity: Int = 128) {
        self.transactionID = transactionID
        self.paddingByte = paddingByte
        writer = ByteWriter(capacity: capacity)
        writer.u16(type.rawValue)
        writer.u16(0)  // message length, set in finish
        writer.u32(STUNMessage.magicCookie)
        writer.u32(transactionID.high)
        writer.u64(transactionID.low)
    }

    /// Two builders are equal when they have written the same bytes with the same settings.
    public static func == (lhs: STUNMessageBuilder, rhs: STUNMessageBuilder) -> Bool {
        lhs.transactionID == rhs.transactionID && lhs.paddingByte == rhs.paddingByte && lhs.writer.bytes == rhs.writer.bytes
    }

    /// Bytes written so far, header included.
    public var count: Int { writer.count }

    /// Appends one attribute: type, length, value, padding. Throws, writing nothing, when the
    /// value breaks its definition's limits or the message would grow too long.
    public mutating func append(_ attribute: STUNAttribute) throws(STUNEncodeError) {
        if let problem = attribute.encodingProblem { throw problem }
        let valueLength = attribute.valueLength
        let paddedLength = (valueLength + 3) & ~3
        guard writer.count - STUNMessage.headerSize + 4 + paddedLength <= Self.maximumAttributesLength else {
            throw .messageTooLong
        }
        writer.u16(attribute.type.rawValue)
        writer.u16(UInt16(truncatingIfNeeded: valueLength))
        attribute.encodeValue(into: &writer, transactionID: transactionID)
        for _ in valueLength..<paddedLength { writer.u8(paddingByte) }
    }

    /// Appends attributes in order; stops at the first that cannot be added.
    public mutating func append(contentsOf attributes: [STUNAttribute]) throws(STUNEncodeError) {
        for attribute in attributes { try append(attribute) }
    }

    /// Finishes the message and returns its bytes: with `integrityKey`, appends
    /// MESSAGE-INTEGRITY (HMAC-SHA1 over the header and attributes, the header length counting
    /// the attribute itself, RFC 8489 §14.5); with `fingerprint`, then appends FINGERPRINT
    /// (CRC-32 over everything before it XOR 0x5354554E, RFC 8489 §14.7). ICE sends both on
    /// every check and response (RFC 8445 §7.2.2, §7.3.1.4).
    public consuming func finish(integrityKey: STUNIntegrityKey? = nil, fingerprint: Bool = false) -> [UInt8] {
        if let integrityKey {
            let offset = writer.count
            writer.setU16(UInt16(truncatingIfNeeded: offset + 24 - STUNMessage.headerSize), at: 2)
            var mac: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0, 0, 0)
            let computed = withUnsafeMutableBytes(of: &mac) { macBytes in
                writer.bytes.withUnsafeBufferPointer { message in
                    guard let output = macBytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
                    return STUNHMAC.compute(.sha1, key: integrityKey.bytes, data: message, into: output)
                }
            }
            writer.u16(STUNAttributeType.messageIntegrity.rawValue)
            writer.u16(20)
            // Should OpenSSL fail (it does not for SHA-1), 20 zero bytes go out and fail
            // verification at the peer rather than trap here.
            withUnsafeBytes(of: &mac) { macBytes in
                for index in 0..<20 { writer.u8(computed ? macBytes[index] : 0) }
            }
        }
        if fingerprint {
            let offset = writer.count
            writer.setU16(UInt16(truncatingIfNeeded: offset + 8 - STUNMessage.headerSize), at: 2)
            let value = writer.bytes.withUnsafeBufferPointer { STUNFingerprint.value(of: $0) }
            writer.u16(STUNAttributeType.fingerprint.rawValue)
            writer.u16(4)
            writer.u32(value)
        }
        writer.setU16(UInt16(truncatingIfNeeded: writer.count - STUNMessage.headerSize), at: 2)
        return writer.bytes
    }
}
