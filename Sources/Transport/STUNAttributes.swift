// STUN attributes (RFC 8489 §14, §18.3) and the ICE ones (RFC 8445 §7.1, §16.1; RFC 7675 uses
// the same Binding request): decoding a value from the received bytes, encoding one for the
// builder.
#if canImport(Wire)
import Wire
#endif

/// The 16-bit type of a STUN attribute (RFC 8489 §14, §18.3). Types below 0x8000 are
/// comprehension-required: a receiver that does not know one must reject a request with 420.
public struct STUNAttributeType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The type number as written on the wire.
    public let rawValue: UInt16

    /// An attribute type from its number.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// True below 0x8000 (RFC 8489 §14): an agent that does not understand it must not go on.
    public var isComprehensionRequired: Bool { rawValue < 0x8000 }

    /// MAPPED-ADDRESS (0x0001, RFC 8489 §14.1): the reflexive address, not XORed (old servers).
    public static let mappedAddress = STUNAttributeType(rawValue: 0x0001)
    /// USERNAME (0x0006, RFC 8489 §14.3): for ICE, "receiver-ufrag:sender-ufrag".
    public static let username = STUNAttributeType(rawValue: 0x0006)
    /// MESSAGE-INTEGRITY (0x0008, RFC 8489 §14.5): HMAC-SHA1 of the message up to it.
    public static let messageIntegrity = STUNAttributeType(rawValue: 0x0008)
    /// ERROR-CODE (0x0009, RFC 8489 §14.8): class, number and reason of an error response.
    public static let errorCode = STUNAttributeType(rawValue: 0x0009)
    /// UNKNOWN-ATTRIBUTES (0x000A, RFC 8489 §14.13): the types a 420 response did not understand.
    public static let unknownAttributes = STUNAttributeType(rawValue: 0x000A)
    /// REALM (0x0014, RFC 8489 §14.9): long-term credential realm.
    public static let realm = STUNAttributeType(rawValue: 0x0014)
    /// NONCE (0x0015, RFC 8489 §14.10): long-term credential nonce.
    public static let nonce = STUNAttributeType(rawValue: 0x0015)
    /// MESSAGE-INTEGRITY-SHA256 (0x001C, RFC 8489 §14.6): HMAC-SHA256, truncated to 16...32 bytes.
    public static let messageIntegritySHA256 = STUNAttributeType(rawValue: 0x001C)
    /// XOR-MAPPED-ADDRESS (0x0020, RFC 8489 §14.2): the reflexive address XORed with the cookie.
    public static let xorMappedAddress = STUNAttributeType(rawValue: 0x0020)
    /// PRIORITY (0x0024, RFC 8445 §7.1.1): the priority a peer-reflexive candidate would get.
    public static let priority = STUNAttributeType(rawValue: 0x0024)
    /// USE-CANDIDATE (0x0025, RFC 8445 §7.1.2): the controlling agent nominates this pair.
    public static let useCandidate = STUNAttributeType(rawValue: 0x0025)
    /// SOFTWARE (0x8022, RFC 8489 §14.14): the sender's name and version.
    public static let software = STUNAttributeType(rawValue: 0x8022)
    /// FINGERPRINT (0x8028, RFC 8489 §14.7): CRC-32 of the message XOR 0x5354554E.
    public static let fingerprint = STUNAttributeType(rawValue: 0x8028)
    /// ICE-CONTROLLED (0x8029, RFC 8445 §7.1.3): the sender is controlled; 64-bit tie breaker.
    public static let iceControlled = STUNAttributeType(rawValue: 0x8029)
    /// ICE-CONTROLLING (0x802A, RFC 8445 §7.1.3): the sender is controlling; 64-bit tie breaker.
    public static let iceControlling = STUNAttributeType(rawValue: 0x802A)

    /// `USERNAME`, or `0xC057` for types this module does not name.
    public var description: String {
        switch self {
        case .mappedAddress: "MAPPED-ADDRESS"
        case .username: "USERNAME"
        case .messageIntegrity: "MESSAGE-INTEGRITY"
        case .errorCode: "ERROR-CODE"
        case .unknownAttributes: "UNKNOWN-ATTRIBUTES"
        case .realm: "REALM"
        case .nonce: "NONCE"
        case .messageIntegritySHA256: "MESSAGE-INTEGRITY-SHA256"
        case .xorMappedAddress: "XOR-MAPPED-ADDRESS"
        case .priority: "PRIORITY"
        case .useCandidate: "USE-CANDIDATE"
        case .software: "SOFTWARE"
        case .fingerprint: "FINGERPRINT"
        case .iceControlled: "ICE-CONTROLLED"
        case .iceControlling: "ICE-CONTROLLING"
        default: "0x" + String(rawValue, radix: 16, uppercase: true)
        }
    }
}

/// The ERROR-CODE attribute's value (RFC 8489 §14.8): a code 300...699 and a reason phrase.
public struct STUNErrorCode: Sendable, Equatable {
    /// The code, class × 100 + number: 300...699.
    public var code: UInt16
    /// The UTF-8 reason phrase for a human; at most 763 bytes.
    public var reason: String

    /// An error code and its reason phrase.
    public init(code: UInt16, reason: String) {
        self.code = code
        self.reason = reason
    }

    /// 300 Try Alternate (RFC 8489 §15).
    public static let tryAlternate = STUNErrorCode(code: 300, reason: "Try Alternate")
    /// 400 Bad Request: malformed, or a request without the credentials it needs (RFC 8489 §15).
    public static let badRequest = STUNErrorCode(code: 400, reason: "Bad Request")
    /// 401 Unauthenticated: wrong USERNAME or MESSAGE-INTEGRITY (RFC 8489 §15).
    public static let unauthenticated = STUNErrorCode(code: 401, reason: "Unauthenticated")
    /// 420 Unknown Attribute, sent with UNKNOWN-ATTRIBUTES (RFC 8489 §15).
    public static let unknownAttribute = STUNErrorCode(code: 420, reason: "Unknown Attribute")
    /// 438 Stale Nonce (RFC 8489 §15).
    public static let staleNonce = STUNErrorCode(code: 438, reason: "Stale Nonce")
    /// 487 Role Conflict: both agents claim the same ICE role (RFC 8445 §7.3.1.1).
    public static let roleConflict = STUNErrorCode(code: 487, reason: "Role Conflict")
    /// 500 Server Error (RFC 8489 §15).
    public static let serverError = STUNErrorCode(code: 500, reason: "Server Error")
}

/// One decoded STUN attribute. MESSAGE-INTEGRITY, MESSAGE-INTEGRITY-SHA256 and FINGERPRINT are
/// not attributes here: their place in the message is fixed, so `STUNMessageBuilder.finish`
/// writes them and `STUNMessage` verifies them.
public enum STUNAttribute: Sendable, Equatable {
    /// MAPPED-ADDRESS (RFC 8489 §14.1).
    case mappedAddress(TransportAddress)
    /// XOR-MAPPED-ADDRESS (RFC 8489 §14.2), already un-XORed: the address as the peer sees us.
    case xorMappedAddress(TransportAddress)
    /// USERNAME (RFC 8489 §14.3): UTF-8, at most 513 bytes.
    case username(String)
    /// ERROR-CODE (RFC 8489 §14.8).
    case errorCode(STUNErrorCode)
    /// UNKNOWN-ATTRIBUTES (RFC 8489 §14.13): the types a 420 response did not understand.
    case unknownAttributes([STUNAttributeType])
    /// REALM (RFC 8489 §14.9): UTF-8, at most 763 bytes.
    case realm(String)
    /// NONCE (RFC 8489 §14.10), kept opaque: at most 763 bytes.
    case nonce([UInt8])
    /// SOFTWARE (RFC 8489 §14.14): UTF-8, at most 763 bytes.
    case software(String)
    /// PRIORITY (RFC 8445 §7.1.1).
    case priority(UInt32)
    /// USE-CANDIDATE (RFC 8445 §7.1.2): no value.
    case useCandidate
    /// ICE-CONTROLLED with its tie breaker (RFC 8445 §7.1.3).
    case iceControlled(tieBreaker: UInt64)
    /// ICE-CONTROLLING with its tie breaker (RFC 8445 §7.1.3).
    case iceControlling(tieBreaker: UInt64)
    /// Any other attribute, kept as received: comprehension-optional ones a browser adds
    /// (GOOG-NETWORK-INFO 0xC057) and unknown comprehension-required ones (reported separately
    /// in `STUNMessage.unknownComprehensionRequired`).
    case other(type: STUNAttributeType, value: [UInt8])

    /// The type this attribute is written with.
    public var type: STUNAttributeType {
        switch self {
        case .mappedAddress: .mappedAddress
        case .xorMappedAddress: .xorMappedAddress
        case .username: .username
        case .errorCode: .errorCode
        case .unknownAttributes: .unknownAttributes
        case .realm: .realm
        case .nonce: .nonce
        case .software: .software
        case .priority: .priority
        case .useCandidate: .useCandidate
        case .iceControlled: .iceControlled
        case .iceControlling: .iceControlling
        case .other(let type, _): type
        }
    }
}

// MARK: - Limits (RFC 8489 §14)

extension STUNAttribute {
    /// USERNAME: RFC 5389 §15.3 allows fewer than 513 bytes, RFC 8489 §14.3 fewer than 509;
    /// accepting up to 513 is the lenient reading that interoperates with both.
    static let maximumUsernameLength = 513
    /// SOFTWARE, REALM, NONCE and the ERROR-CODE reason: fewer than 128 characters, "which can
    /// be as long as 763 bytes" (RFC 8489 §14.8, §14.9, §14.10, §14.14).
    static let maximumTextLength = 763
}

// MARK: - Decoding

extension STUNAttribute {
    /// Decodes one attribute value; `value` reads exactly the value bytes (padding excluded).
    init(type: STUNAttributeType, value: ByteReader, transactionID: STUNTransactionID) throws(STUNParseError) {
        var value = value
        let length = value.remaining
        switch type {
        case .mappedAddress:
            self = .mappedAddress(try Self.decodeAddress(&value, xor: nil))
        case .xorMappedAddress:
            self = .xorMappedAddress(try Self.decodeAddress(&value, xor: transactionID))
        case .username:
            self = .username(try Self.decodeText(value, type: type, limit: Self.maximumUsernameLength))
        case .software:
            self = .software(try Self.decodeText(value, type: type, limit: Self.maximumTextLength))
        case .realm:
            self = .realm(try Self.decodeText(value, type: type, limit: Self.maximumTextLength))
        case .nonce:
            guard length <= Self.maximumTextLength else { throw .valueTooLong(type, length: length) }
            self = .nonce(Array(value.rest))
        case .errorCode:
            // RFC 8489 §14.8: 21 reserved bits, class (3 bits), number (8 bits), reason.
            guard length >= 4 else { throw .badAttributeLength(type, length: length) }
            try stunRead { () throws(Truncated) in try value.skip(2) }
            let errorClass = try stunRead { () throws(Truncated) in try value.u8() } & 0x07
            let number = try stunRead { () throws(Truncated) in try value.u8() }
            guard (3...6).contains(errorClass), number <= 99 else {
                throw .invalidErrorCode(errorClass: errorClass, number: number)
            }
            let reason = try Self.decodeText(value, type: type, limit: Self.maximumTextLength)
            self = .errorCode(STUNErrorCode(code: UInt16(errorClass) * 100 + UInt16(number), reason: reason))
        case .unknownAttributes:
            // RFC 8489 §14.13: a list of 16-bit types.
            guard length % 2 == 0 else { throw .badAttributeLength(type, length: length) }
            var types: [STUNAttributeType] = []
            types.reserveCapacity(length / 2)
            while !value.isAtEnd {
                types.append(STUNAttributeType(rawValue: try stunRead { () throws(Truncated) in try value.u16() }))
            }
            self = .unknownAttributes(types)
        case .priority:
            guard length == 4 else { throw .badAttributeLength(type, length: length) }
            self = .priority(try stunRead { () throws(Truncated) in try value.u32() })
        case .useCandidate:
            guard length == 0 else { throw .badAttributeLength(type, length: length) }
            self = .useCandidate
        case .iceControlled:
            guard length == 8 else { throw .badAttributeLength(type, length: length) }
            self = .iceControlled(tieBreaker: try stunRead { () throws(Truncated) in try value.u64() })
        case .iceControlling:
            guard length == 8 else { throw .badAttributeLength(type, length: length) }
            self = .iceControlling(tieBreaker: try stunRead { () throws(Truncated) in try value.u64() })
        default:
            self = .other(type: type, value: Array(value.rest))
        }
    }

    /// MAPPED-ADDRESS and XOR-MAPPED-ADDRESS (RFC 8489 §14.1, §14.2): a reserved byte, the
    /// family, the port, 4 or 16 address bytes. With `xor`, the port is XORed with the cookie's
    /// top 16 bits and the address with the cookie (IPv4) or cookie ‖ transaction ID (IPv6).
    private static func decodeAddress(_ value: inout ByteReader, xor transactionID: STUNTransactionID?) throws(STUNParseError) -> TransportAddress {
        let type: STUNAttributeType = transactionID == nil ? .mappedAddress : .xorMappedAddress
        let length = value.remaining
        guard length >= 4 else { throw .badAttributeLength(type, length: length) }
        try stunRead { () throws(Truncated) in try value.skip(1) }
        let family = try stunRead { () throws(Truncated) in try value.u8() }
        var port = try stunRead { () throws(Truncated) in try value.u16() }
        switch family {
        case 0x01:
            guard length == 8 else { throw .badAttributeLength(type, length: length) }
            var address = try stunRead { () throws(Truncated) in try value.u32() }
            if transactionID != nil {
                port ^= UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
                address ^= STUNMessage.magicCookie
            }
            return TransportAddress(ip: .v4(address), port: port)
        case 0x02:
            guard length == 20 else { throw .badAttributeLength(type, length: length) }
            var high = try stunRead { () throws(Truncated) in try value.u64() }
            var low = try stunRead { () throws(Truncated) in try value.u64() }
            if let transactionID {
                port ^= UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
                high ^= UInt64(STUNMessage.magicCookie) << 32 | UInt64(transactionID.high)
                low ^= transactionID.low
            }
            return TransportAddress(ip: .v6(high: high, low: low), port: port)
        default:
            throw .unknownAddressFamily(family)
        }
    }

    /// A UTF-8 text value no longer than `limit` bytes.
    private static func decodeText(_ value: ByteReader, type: STUNAttributeType, limit: Int) throws(STUNParseError) -> String {
        guard value.remaining <= limit else { throw .valueTooLong(type, length: value.remaining) }
        // Validating through a buffer pointer keeps the stdlib on its prespecialized fast path.
        let text = value.rest.withUnsafeBufferPointer { String(validating: $0, as: UTF8.self) }
        guard let text else { throw .invalidUTF8(type) }
        return text
    }
}

// MARK: - Encoding

extension STUNAttribute {
    /// Bytes the value takes on the wire, before padding.
    var valueLength: Int {
        switch self {
        case .mappedAddress(let address), .xorMappedAddress(let address): address.isIPv4 ? 8 : 20
        case .username(let text), .realm(let text), .software(let text): text.utf8.count
        case .errorCode(let error): 4 + error.reason.utf8.count
        case .unknownAttributes(let types): 2 * types.count
        case .nonce(let bytes): bytes.count
        case .priority: 4
        case .useCandidate: 0
        case .iceControlled, .iceControlling: 8
        case .other(_, let value): value.count
        }
    }

    /// Why this attribute cannot be sent as it is, or nil when it can.
    var encodingProblem: STUNEncodeError? {
        switch self {
        case .username(let text):
            let length = text.utf8.count
            return length > Self.maximumUsernameLength ? .valueTooLong(.username, length: length) : nil
        case .realm(let text), .software(let text):
            let length = text.utf8.count
            return length > Self.maximumTextLength ? .valueTooLong(type, length: length) : nil
        case .nonce(let bytes):
            return bytes.count > Self.maximumTextLength ? .valueTooLong(.nonce, length: bytes.count) : nil
        case .errorCode(let error):
            guard (300...699).contains(error.code) else { return .invalidErrorCode(error.code) }
            let length = error.reason.utf8.count
            return length > Self.maximumTextLength ? .valueTooLong(.errorCode, length: length) : nil
        case .other(let type, let value):
            switch type {
            case .messageIntegrity, .messageIntegritySHA256, .fingerprint: return .positionalAttribute(type)
            default: return value.count > Int(UInt16.max) ? .valueTooLong(type, length: value.count) : nil
            }
        default:
            return nil
        }
    }

    /// Writes the value (no header, no padding).
    func encodeValue(into writer: inout ByteWriter, transactionID: STUNTransactionID) {
        switch self {
        case .mappedAddress(let address):
            Self.encodeAddress(address, xor: nil, into: &writer)
        case .xorMappedAddress(let address):
            Self.encodeAddress(address, xor: transactionID, into: &writer)
        case .username(let text), .realm(let text), .software(let text):
            Self.encodeText(text, into: &writer)
        case .errorCode(let error):
            writer.u16(0)
            writer.u8(UInt8(truncatingIfNeeded: error.code / 100))
            writer.u8(UInt8(truncatingIfNeeded: error.code % 100))
            Self.encodeText(error.reason, into: &writer)
        case .unknownAttributes(let types):
            for type in types { writer.u16(type.rawValue) }
        case .nonce(let bytes):
            Self.encodeBytes(bytes, into: &writer)
        case .priority(let priority):
            writer.u32(priority)
        case .useCandidate:
            break
        case .iceControlled(let tieBreaker), .iceControlling(let tieBreaker):
            writer.u64(tieBreaker)
        case .other(_, let value):
            Self.encodeBytes(value, into: &writer)
        }
    }

    /// Text bytes one at a time: values are short, and this avoids `ByteWriter.append`'s
    /// unspecialized generic path across the module boundary on the per-packet path.
    private static func encodeText(_ text: String, into writer: inout ByteWriter) {
        for byte in text.utf8 { writer.u8(byte) }
    }

    /// Opaque bytes one at a time, for the same reason.
    private static func encodeBytes(_ bytes: [UInt8], into writer: inout ByteWriter) {
        for byte in bytes { writer.u8(byte) }
    }

    private static func encodeAddress(_ address: TransportAddress, xor transactionID: STUNTransactionID?, into writer: inout ByteWriter) {
        let portMask = transactionID == nil ? 0 : UInt16(truncatingIfNeeded: STUNMessage.magicCookie >> 16)
        writer.u8(0)
        switch address.ip {
        case .v4(let ip):
            writer.u8(0x01)
            writer.u16(address.port ^ portMask)
            writer.u32(transactionID == nil ? ip : ip ^ STUNMessage.magicCookie)
        case .v6(let high, let low):
            writer.u8(0x02)
            writer.u16(address.port ^ portMask)
            if let transactionID {
                writer.u64(high ^ (UInt64(STUNMessage.magicCookie) << 32 | UInt64(transactionID.high)))
                writer.u64(low ^ transactionID.low)
            } else {
                writer.u64(high)
                writer.u64(low)
            }
        }
    }
}

// MARK: - Typed access on a parsed message

extension STUNMessage {
    /// The first USERNAME: for an ICE check, "receiver-ufrag:sender-ufrag" (RFC 8445 §7.2.2).
    public var username: String? {
        for case .username(let name) in attributes { return name }
        return nil
    }

    /// The first PRIORITY (RFC 8445 §7.1.1).
    public var priority: UInt32? {
        for case .priority(let priority) in attributes { return priority }
        return nil
    }

    /// True when USE-CANDIDATE is present: the controlling peer nominates the pair (RFC 8445 §7.1.2).
    public var useCandidate: Bool {
        attributes.contains(.useCandidate)
    }

    /// The tie breaker of ICE-CONTROLLING, present when the sender is the controlling agent.
    public var iceControlling: UInt64? {
        for case .iceControlling(let tieBreaker) in attributes { return tieBreaker }
        return nil
    }

    /// The tie breaker of ICE-CONTROLLED, present when the sender is the controlled agent.
    public var iceControlled: UInt64? {
        for case .iceControlled(let tieBreaker) in attributes { return tieBreaker }
        return nil
    }

    /// The first XOR-MAPPED-ADDRESS, decoded: our address as the responder saw it.
    public var xorMappedAddress: TransportAddress? {
        for case .xorMappedAddress(let address) in attributes { return address }
        return nil
    }

    /// The first MAPPED-ADDRESS.
    public var mappedAddress: TransportAddress? {
        for case .mappedAddress(let address) in attributes { return address }
        return nil
    }

    /// The first ERROR-CODE of an error response.
    public var errorCode: STUNErrorCode? {
        for case .errorCode(let error) in attributes { return error }
        return nil
    }

    /// The first SOFTWARE.
    public var software: String? {
        for case .software(let text) in attributes { return text }
        return nil
    }
}
