// The RFC 5769 test vectors, byte for byte, and the messages this suite builds itself. Shared by
// the vector, behaviour and robustness tests.
import Wire
import Transport

/// Bytes from hex text; whitespace is ignored. Test-only: malformed text gives a short array,
/// which the tests' byte-for-byte comparisons then catch.
func hexBytes(_ text: String) -> [UInt8] {
    let digits = text.compactMap { $0.hexDigitValue }
    return stride(from: 0, to: digits.count - 1, by: 2).map { UInt8(digits[$0] << 4 | digits[$0 + 1]) }
}

enum RFC5769 {
    /// The short-term password of §2.1, §2.2 and §2.3.
    static let password = "VOkJxbRl1RmTxUk/WvJxBt"
    /// The transaction ID of §2.1, §2.2 and §2.3.
    static let transactionID = STUNTransactionID(high: 0xB7E7_A701, low: 0xBC34_D686_FA87_DFAE)

    /// §2.1 Sample Request: SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME (padded with 0x20),
    /// MESSAGE-INTEGRITY, FINGERPRINT.
    static let request = hexBytes("""
        00 01 00 58 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 10 53 54 55 4e 20 74 65 73 74 20 63 6c 69 65 6e 74
        00 24 00 04 6e 00 01 ff
        80 29 00 08 93 2f f9 b1 51 26 3b 36
        00 06 00 09 65 76 74 6a 3a 68 36 76 59 20 20 20
        00 08 00 14 9a ea a7 0c bf d8 cb 56 78 1e f2 b5 b2 d3 f2 49 c1 b5 71 a2
        80 28 00 04 e5 7a 3b cf
        """)

    /// §2.2 Sample IPv4 Response: SOFTWARE "test vector" (padded with 0x20), XOR-MAPPED-ADDRESS
    /// 192.0.2.1:32853, MESSAGE-INTEGRITY, FINGERPRINT.
    static let ipv4Response = hexBytes("""
        01 01 00 3c 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 08 00 01 a1 47 e1 12 a6 43
        00 08 00 14 2b 91 f5 99 fd 9e 90 c3 8c 74 89 f9 2a f9 ba 53 f0 6b e7 d7
        80 28 00 04 c0 7d 4c 96
        """)

    /// §2.3 Sample IPv6 Response: XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853.
    static let ipv6Response = hexBytes("""
        01 01 00 48 21 12 a4 42 b7 e7 a7 01 bc 34 d6 86 fa 87 df ae
        80 22 00 0b 74 65 73 74 20 76 65 63 74 6f 72 20
        00 20 00 14 00 02 a1 47 01 13 a9 fa a5 d3 f1 79 bc 25 f4 b5 be d2 b9 d9
        00 08 00 14 a3 82 95 4e 4b e6 7b f1 17 84 c9 7c 82 92 c2 75 bf e3 ed 41
        80 28 00 04 c8 fb 0b 4c
        """)

    /// §2.4 Sample Request with Long-Term Authentication: USERNAME "マトリックス", NONCE, REALM
    /// "example.org" (padded with 0x00), MESSAGE-INTEGRITY; no FINGERPRINT.
    static let longTermRequest = hexBytes("""
        00 01 00 60 21 12 a4 42 78 ad 34 33 c6 ad 72 c0 29 da 41 2e
        00 06 00 12 e3 83 9e e3 83 88 e3 83 aa e3 83 83 e3 82 af e3 82 b9 00 00
        00 15 00 1c 66 2f 2f 34 39 39 6b 39 35 34 64 36 4f 4c 33 34 6f 4c 39 46 53 54 76 79 36 34 73 41
        00 14 00 0b 65 78 61 6d 70 6c 65 2e 6f 72 67 00
        00 08 00 14 f6 70 24 65 6d d6 4a 3e 02 b8 e0 71 2e 85 c9 a2 8c a8 96 66
        """)

    /// §2.4's username, realm and password after SASLprep ("The\u{AD}M\u{AA}tr\u{2168}").
    static let longTermUsername = "\u{30DE}\u{30C8}\u{30EA}\u{30C3}\u{30AF}\u{30B9}"
    static let longTermRealm = "example.org"
    static let longTermPreparedPassword = "TheMatrIX"
    static let longTermNonce = Array("f//499k954d6OL34oL9FSTvy64sA".utf8)

    /// Every vector with the key that verifies it.
    static var all: [(name: String, bytes: [UInt8], key: STUNIntegrityKey)] {
        let shortTerm = STUNIntegrityKey.shortTerm(password: password)
        let longTerm = STUNIntegrityKey.longTerm(
            username: longTermUsername, realm: longTermRealm, password: longTermPreparedPassword
        ) ?? shortTerm
        return [
            ("RFC 5769 §2.1", request, shortTerm),
            ("RFC 5769 §2.2", ipv4Response, shortTerm),
            ("RFC 5769 §2.3", ipv6Response, shortTerm),
            ("RFC 5769 §2.4", longTermRequest, longTerm),
        ]
    }
}

/// Messages built by this module, as an ICE-lite host sends and receives them.
enum BuiltMessages {
    /// The host's ICE credentials (ours) and the browser's.
    static let hostUfrag = "hostufrag"
    static let hostPassword = "hostpasswordhostpassword"
    static let peerUfrag = "peerufrag"
    static let checkTransactionID = STUNTransactionID(high: 0x0102_0304, low: 0x0506_0708_090A_0B0C)
    static let chromeTieBreaker: UInt64 = 0x1A2B_3C4D_5E6F_7081
    static let chromePriority: UInt32 = 1_853_817_087  // host UDP candidate, as peer-reflexive (RFC 8445 §7.1.1)

    /// GOOG-NETWORK-INFO (0xC057): network id 1, cost 10. Comprehension-optional, unknown to us.
    static let googleNetworkInfo = STUNAttribute.other(type: STUNAttributeType(rawValue: 0xC057), value: [0x00, 0x01, 0x00, 0x0A])

    /// An ICE connectivity check in the order Chrome writes it (webrtc's Connection::Ping):
    /// USERNAME, GOOG-NETWORK-INFO, ICE-CONTROLLING, USE-CANDIDATE, PRIORITY,
    /// MESSAGE-INTEGRITY, FINGERPRINT. USERNAME is "receiver-ufrag:sender-ufrag" (RFC 8445
    /// §7.2.2) and the key is the receiver's (our) password.
    static let chromeAttributes: [STUNAttribute] = [
        .username("\(hostUfrag):\(peerUfrag)"),
        googleNetworkInfo,
        .iceControlling(tieBreaker: chromeTieBreaker),
        .useCandidate,
        .priority(chromePriority),
    ]

    static func chromeCheck() throws -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: checkTransactionID)
        try builder.append(contentsOf: chromeAttributes)
        return builder.finish(integrityKey: .shortTerm(password: hostPassword), fingerprint: true)
    }

    /// The success response the host answers with (RFC 8445 §7.3.1.4).
    static func successResponse(to address: TransportAddress) throws -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: checkTransactionID)
        try builder.append(.xorMappedAddress(address))
        return builder.finish(integrityKey: .shortTerm(password: hostPassword), fingerprint: true)
    }

    /// A 420 answer to a request with an unknown comprehension-required attribute (RFC 8489 §6.3.1.1).
    static func unknownAttributeResponse() throws -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingErrorResponse, transactionID: checkTransactionID)
        try builder.append(.errorCode(.unknownAttribute))
        try builder.append(.unknownAttributes([STUNAttributeType(rawValue: 0x7F01), STUNAttributeType(rawValue: 0x0003)]))
        try builder.append(.software("Tessera"))
        return builder.finish(integrityKey: .shortTerm(password: hostPassword), fingerprint: true)
    }

    /// Every message this suite builds, with the key that verifies it.
    static func all() throws -> [(name: String, bytes: [UInt8], key: STUNIntegrityKey)] {
        let key = STUNIntegrityKey.shortTerm(password: hostPassword)
        return [
            ("Chrome check", try chromeCheck(), key),
            ("IPv4 success", try successResponse(to: TransportAddress(ipv4: 203, 0, 113, 7, port: 50_000)), key),
            ("IPv6 success", try successResponse(to: TransportAddress(ip: .v6(high: 0x2001_0DB8_0000_0000, low: 1), port: 443)), key),
            ("420 error", try unknownAttributeResponse(), key),
        ]
    }
}
