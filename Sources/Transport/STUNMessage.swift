// STUN messages (RFC 8489 §5, §6): the header, the attribute walk, and the RFC 7983 demux test.
//
// This file and the other STUN*.swift files depend only on Wire, COpenSSL and CZlib, so that the
// fuzz target (Fuzz/STUNFuzz.swift) can compile them into one module with Wire's sources; there
// `Wire` is not a separate module, hence the conditional import.
#if canImport(Wire)
import Wire
#endif

/// The class of a STUN message (RFC 8489 §5): the two C bits of the message type.
public enum STUNClass: UInt8, Sendable, Hashable, CaseIterable {
    /// A request: the receiver answers with a success or an error response.
    case request = 0b00
    /// An indication: no response (RFC 7675 consent uses requests, not these).
    case indication = 0b01
    /// A success response to a request with the same transaction ID.
    case successResponse = 0b10
    /// An error response, carrying ERROR-CODE.
    case errorResponse = 0b11
}

/// The method of a STUN message (RFC 8489 §5, §18.2): 12 bits. ICE uses only Binding.
public struct STUNMethod: RawRepresentable, Sendable, Hashable {
    /// The 12-bit method number.
    public let rawValue: UInt16

    /// A method from its number; nil above the 12-bit range (0x000...0xFFF).
    public init?(rawValue: UInt16) {
        guard rawValue <= 0x0FFF else { return nil }
        self.rawValue = rawValue
    }

    private init(validated rawValue: UInt16) { self.rawValue = rawValue }

    /// Binding (0x001): the only method STUN itself and ICE define (RFC 8489 §18.2).
    public static let binding = STUNMethod(validated: 0x001)

    /// The method bits of a 14-bit message type (RFC 8489 §5, figure 3: M0-M3, M4-M6, M7-M11).
    init(messageType: UInt16) {
        rawValue = (messageType & 0x000F) | (messageType & 0x00E0) >> 1 | (messageType & 0x3E00) >> 2
    }
}

/// A STUN message type: method and class interleaved into 14 bits (RFC 8489 §5).
///
/// ```
///  0                 1
///  2  3  4 5 6 7 8 9 0 1 2 3 4 5
/// +--+--+-+-+-+-+-+-+-+-+-+-+-+-+
/// |M |M |M|M|M|C|M|M|M|C|M|M|M|M|
/// |11|10|9|8|7|1|6|5|4|0|3|2|1|0|
/// +--+--+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
public struct STUNMessageType: Sendable, Hashable, CustomStringConvertible {
    /// The method, Binding for everything ICE sends.
    public var method: STUNMethod
    /// The class: request, indication, success or error response.
    public var messageClass: STUNClass

    /// A message type from its method and class.
    public init(method: STUNMethod, messageClass: STUNClass) {
        self.method = method
        self.messageClass = messageClass
    }

    /// A message type from the first 16 bits of a message; the two most significant bits, which
    /// are zero in every STUN message, are ignored.
    public init(rawValue: UInt16) {
        method = STUNMethod(messageType: rawValue)
        let classBits = UInt8(truncatingIfNeeded: (rawValue >> 4) & 0x1 | (rawValue >> 7) & 0x2)
        messageClass = STUNClass(rawValue: classBits) ?? .request  // two bits: always one of the four
    }

    /// The 14-bit type as written in the first two bytes of the header.
    public var rawValue: UInt16 {
        let m = method.rawValue
        let c = UInt16(messageClass.rawValue)
        return (m & 0x000F) | (m & 0x0070) << 1 | (m & 0x0F80) << 2 | (c & 0x1) << 4 | (c & 0x2) << 7
    }

    /// Binding request (0x0001): an ICE connectivity check or RFC 7675 consent check.
    public static let bindingRequest = STUNMessageType(method: .binding, messageClass: .request)
    /// Binding success response (0x0101): the answer carrying XOR-MAPPED-ADDRESS.
    public static let bindingSuccessResponse = STUNMessageType(method: .binding, messageClass: .successResponse)
    /// Binding error response (0x0111): the answer carrying ERROR-CODE.
    public static let bindingErrorResponse = STUNMessageType(method: .binding, messageClass: .errorResponse)
    /// Binding indication (0x0011): a keepalive that needs no answer (RFC 8445 §11).
    public static let bindingIndication = STUNMessageType(method: .binding, messageClass: .indication)

    /// `Binding request`, or `method 0x003 success response` for other methods.
    public var description: String {
        let name = method == .binding ? "Binding" : "method 0x" + String(method.rawValue, radix: 16)
        switch messageClass {
        case .request: return name + " request"
        case .indication: return name + " indication"
        case .successResponse: return name + " success response"
        case .errorResponse: return name + " error response"
        }
    }
}

/// The 96-bit transaction ID that pairs a response with its request (RFC 8489 §5, §6.3.1).
/// Two integers, so it hashes and compares without allocation.
public struct STUNTransactionID: Sendable, Hashable, CustomStringConvertible {
    /// Bytes 8..<12 of the header, big-endian.
    public let high: UInt32
    /// Bytes 12..<20 of the header, big-endian.
    public let low: UInt64

    /// A transaction ID from its two big-endian halves.
    public init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A transaction ID from exactly 12 bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 12 else { return nil }
        var high: UInt32 = 0, low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 4 { high = high << 8 | UInt32(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// A fresh ID from the system's cryptographic generator: RFC 8489 §6 asks for a uniformly
    /// random ID, which also keeps an off-path attacker from forging responses.
    public static func random() -> STUNTransactionID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A fresh ID from the given generator (seeded in tests).
    public static func random<Generator: RandomNumberGenerator>(using generator: inout Generator) -> STUNTransactionID {
        STUNTransactionID(high: UInt32(truncatingIfNeeded: generator.next()), low: generator.next())
    }

    /// The 12 bytes as they appear in the header.
    public var bytes: [UInt8] {
        (0..<12).map { index in
            index < 4
                ? UInt8(truncatingIfNeeded: high >> (24 - 8 * index))
                : UInt8(truncatingIfNeeded: low >> (56 - 8 * (index - 4)))
        }
    }

    /// 24 lowercase hex digits.
    public var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// Why received bytes are not an acceptable STUN message. Every malformed input gives one of
/// these; the parser never traps.
public enum STUNParseError: Error, Sendable, Equatable {
    /// The two most significant bits are not zero (RFC 8489 §5): not STUN at all.
    case notSTUN(firstByte: UInt8)
    /// Fewer bytes than the 20-byte header or an attribute header needs.
    case truncated(Truncated)
    /// Bytes 4..<8 are not 0x2112A442 (RFC 8489 §5): an RFC 3489 message or not STUN.
    case wrongMagicCookie(UInt32)
    /// The header's message length is not a multiple of 4 (RFC 8489 §5).
    case lengthNotMultipleOfFour(UInt16)
    /// The header's message length runs past the end of the datagram.
    case lengthPastDatagram(declared: Int, available: Int)
    /// The datagram holds bytes after the message the header describes.
    case trailingBytes(Int)
    /// An attribute (with its padding) runs past the end of the message (RFC 8489 §14).
    case attributePastMessage(STUNAttributeType, offset: Int)
    /// An attribute's value has a length its definition does not allow (a 3-byte PRIORITY, a
    /// 21-byte MESSAGE-INTEGRITY, an XOR-MAPPED-ADDRESS whose length does not match its family).
    case badAttributeLength(STUNAttributeType, length: Int)
    /// A text attribute is longer than its definition allows (USERNAME 513 bytes, SOFTWARE,
    /// REALM, NONCE and the ERROR-CODE reason 763 bytes).
    case valueTooLong(STUNAttributeType, length: Int)
    /// A text attribute is not valid UTF-8 (RFC 8489 §14.3, §14.8, §14.9, §14.14).
    case invalidUTF8(STUNAttributeType)
    /// An address family other than 0x01 (IPv4) or 0x02 (IPv6) (RFC 8489 §14.1).
    case unknownAddressFamily(UInt8)
    /// An ERROR-CODE whose class is not 3...6 or whose number is not 0...99 (RFC 8489 §14.8).
    case invalidErrorCode(errorClass: UInt8, number: UInt8)
    /// MESSAGE-INTEGRITY or MESSAGE-INTEGRITY-SHA256 appears twice.
    case duplicateIntegrity(STUNAttributeType)
    /// MESSAGE-INTEGRITY after MESSAGE-INTEGRITY-SHA256 (RFC 8489 §14.6 puts it first).
    case misplacedIntegrity(STUNAttributeType)
    /// An attribute after FINGERPRINT, which must be last (RFC 8489 §14.7).
    case attributeAfterFingerprint(STUNAttributeType)
}

/// A received STUN message (RFC 8489 §5, §14), parsed from one datagram.
///
/// The message keeps the exact received bytes, so MESSAGE-INTEGRITY and FINGERPRINT are checked
/// against what was sent, not against a re-encoding (`verifyIntegrity(key:)`,
/// `verifyFingerprint()`). Attributes are decoded once, in order; MESSAGE-INTEGRITY,
/// MESSAGE-INTEGRITY-SHA256 and FINGERPRINT are positional and are not in `attributes`.
public struct STUNMessage: Sendable, Equatable {
    /// 0x2112A442, bytes 4..<8 of every RFC 5389/8489 message (RFC 8489 §5).
    public static let magicCookie: UInt32 = 0x2112_A442
    /// The 20-byte header: type, length, magic cookie, transaction ID.
    public static let headerSize = 20

    /// Method and class.
    public let type: STUNMessageType
    /// The transaction ID that pairs a response with its request.
    public let transactionID: STUNTransactionID
    /// The attributes before MESSAGE-INTEGRITY, in order, MESSAGE-INTEGRITY(-SHA256) and
    /// FINGERPRINT excluded. Attributes after MESSAGE-INTEGRITY other than those are dropped, as
    /// RFC 8489 §14.5 requires. Unknown attributes are kept as `.other`.
    public let attributes: [STUNAttribute]
    /// Unknown comprehension-required attributes (type below 0x8000), each once: a request that
    /// has any must be answered with a 420 error listing them in UNKNOWN-ATTRIBUTES
    /// (RFC 8489 §6.3.1.1). Empty for almost every message, and then it allocates nothing.
    public let unknownComprehensionRequired: [STUNAttributeType]
    /// The exact received datagram: the header and every attribute, as the integrity and
    /// fingerprint checks need them.
    public let bytes: [UInt8]
    /// Where the MESSAGE-INTEGRITY attribute's header starts in `bytes`, if it is present.
    public let messageIntegrityOffset: Int?
    /// Where the MESSAGE-INTEGRITY-SHA256 attribute's header starts in `bytes`, if present.
    public let messageIntegritySHA256Offset: Int?
    /// Where the FINGERPRINT attribute's header starts in `bytes`, if present (always the last
    /// 8 bytes).
    public let fingerprintOffset: Int?

    /// Parses one datagram that holds exactly one STUN message.
    ///
    /// Throws a `STUNParseError` for anything malformed: not STUN, a wrong cookie, a length that
    /// is not a multiple of 4 or does not match the datagram, an attribute running past the
    /// message, an attribute value its definition forbids, duplicate or misplaced integrity, an
    /// attribute after FINGERPRINT. It neither checks integrity nor the fingerprint: call the
    /// verifiers, which need the key only the agent knows.
    public init(parsing datagram: [UInt8]) throws(STUNParseError) {
        if let first = datagram.first, first & 0xC0 != 0 { throw .notSTUN(firstByte: first) }
        var reader = ByteReader(datagram)
        let typeField = try stunRead { () throws(Truncated) in try reader.u16() }
        let length = try stunRead { () throws(Truncated) in try reader.u16() }
        let cookie = try stunRead { () throws(Truncated) in try reader.u32() }
        let idHigh = try stunRead { () throws(Truncated) in try reader.u32() }
        let idLow = try stunRead { () throws(Truncated) in try reader.u64() }
        guard cookie == Self.magicCookie else { throw .wrongMagicCookie(cookie) }
        guard length % 4 == 0 else { throw .lengthNotMultipleOfFour(length) }
        guard Int(length) <= reader.remaining else {
            throw .lengthPastDatagram(declared: Int(length), available: reader.remaining)
        }
        guard Int(length) == reader.remaining else { throw .trailingBytes(reader.remaining - Int(length)) }

        let transactionID = STUNTransactionID(high: idHigh, low: idLow)
        var attributes: [STUNAttribute] = []
        // One allocation for typical messages: an attribute takes at least 4 bytes, usually 8+.
        attributes.reserveCapacity(min(Int(length) / 8, 16))
        var unknown: [STUNAttributeType] = []
        var integrityOffset: Int?, integritySHA256Offset: Int?, fingerprintOffset: Int?

        // RFC 8489 §14: type, length, value, padding to a multiple of 4 (any padding bytes).
        while !reader.isAtEnd {
            let offset = reader.offset
            let rawType = try stunRead { () throws(Truncated) in try reader.u16() }
            let valueLength = Int(try stunRead { () throws(Truncated) in try reader.u16() })
            let type = STUNAttributeType(rawValue: rawType)
            let paddedLength = (valueLength + 3) & ~3
            guard paddedLength <= reader.remaining else { throw .attributePastMessage(type, offset: offset) }
            let value = try stunRead { () throws(Truncated) in try reader.subReader(valueLength) }
            try stunRead { () throws(Truncated) in try reader.skip(paddedLength - valueLength) }

            if fingerprintOffset != nil { throw .attributeAfterFingerprint(type) }
            switch type {
            case .messageIntegrity:
                // RFC 8489 §14.5: HMAC-SHA1, 20 bytes.
                guard integrityOffset == nil else { throw .duplicateIntegrity(type) }
                guard integritySHA256Offset == nil else { throw .misplacedIntegrity(type) }
                guard valueLength == 20 else { throw .badAttributeLength(type, length: valueLength) }
                integrityOffset = offset
            case .messageIntegritySHA256:
                // RFC 8489 §14.6: HMAC-SHA256 truncated to 16...32 bytes, a multiple of 4.
                guard integritySHA256Offset == nil else { throw .duplicateIntegrity(type) }
                guard (16...32).contains(valueLength), valueLength % 4 == 0 else {
                    throw .badAttributeLength(type, length: valueLength)
                }
                integritySHA256Offset = offset
            case .fingerprint:
                // RFC 8489 §14.7: CRC-32, 4 bytes, the last attribute.
                guard valueLength == 4 else { throw .badAttributeLength(type, length: valueLength) }
                fingerprintOffset = offset
            default:
                // RFC 8489 §14.5, §14.6: whatever follows the integrity attribute is ignored.
                guard integrityOffset == nil, integritySHA256Offset == nil else { continue }
                let attribute = try STUNAttribute(type: type, value: value, transactionID: transactionID)
                if case .other = attribute, type.isComprehensionRequired, !unknown.contains(type) {
                    unknown.append(type)
                }
                attributes.append(attribute)
            }
        }

        self.type = STUNMessageType(rawValue: typeField)
        self.transactionID = transactionID
        self.attributes = attributes
        self.unknownComprehensionRequired = unknown
        self.bytes = datagram
        self.messageIntegrityOffset = integrityOffset
        self.messageIntegritySHA256Offset = integritySHA256Offset
        self.fingerprintOffset = fingerprintOffset
    }

    /// The RFC 7983 demux test for one datagram: true when the first byte is 0...3 and bytes
    /// 4..<8 are the magic cookie. Cheap (no parse); the parser then checks everything else.
    ///
    /// ```
    ///                  +----------------+
    ///                  |        [0..3] -+--> STUN     (this test, plus the cookie)
    ///                  |      [16..19] -+--> ZRTP
    ///  datagram ---->  |      [20..63] -+--> DTLS
    ///                  |      [64..79] -+--> TURN channel
    ///                  |    [128..191] -+--> RTP/RTCP
    ///                  +----------------+
    /// ```
    @inlinable
    public static func isSTUN<Bytes: RandomAccessCollection<UInt8>>(_ firstBytes: Bytes) -> Bool {
        guard firstBytes.count >= 8 else { return false }
        let start = firstBytes.startIndex
        @inline(__always) func byte(_ offset: Int) -> UInt8 { firstBytes[firstBytes.index(start, offsetBy: offset)] }
        return byte(0) < 4 && byte(4) == 0x21 && byte(5) == 0x12 && byte(6) == 0xA4 && byte(7) == 0x42
    }

    /// True when MESSAGE-INTEGRITY is present (a request without it gets a 400, RFC 8489 §9.1.3).
    public var hasMessageIntegrity: Bool { messageIntegrityOffset != nil }
    /// True when MESSAGE-INTEGRITY-SHA256 is present.
    public var hasMessageIntegritySHA256: Bool { messageIntegritySHA256Offset != nil }
    /// True when FINGERPRINT is present (RFC 8445 §7.2.2 sends it on every ICE check).
    public var hasFingerprint: Bool { fingerprintOffset != nil }
}

/// Runs a Wire read, turning its `Truncated` into the parser's typed error.
@inline(__always)
func stunRead<Value>(_ read: () throws(Truncated) -> Value) throws(STUNParseError) -> Value {
    do throws(Truncated) {
        return try read()
    } catch {
        throw .truncated(error)
    }
}
