import Testing
import Transport
import Wire

@Suite("STUN: RFC 5769 test vectors")
struct STUNVectorTests {
    let shortTermKey = STUNIntegrityKey.shortTerm(password: RFC5769.password)

    @Test("RFC 5769 §2.1 sample request parses, verifies, and is rebuilt byte for byte")
    func sampleRequest() throws {
        let message = try STUNMessage(parsing: RFC5769.request)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.software == "STUN test client")
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil)
        #expect(message.username == "evtj:h6vY")
        #expect(message.unknownComprehensionRequired.isEmpty)
        #expect(message.verifyIntegrity(key: shortTermKey))
        #expect(message.verifyFingerprint())

        // RFC 5769 pads USERNAME with spaces (0x20); padding is "any value" (RFC 8489 §14),
        // so the builder takes the padding byte as a parameter and reproduces the vector.
        var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID, paddingByte: 0x20)
        try builder.append(contentsOf: message.attributes)
        #expect(builder.finish(integrityKey: shortTermKey, fingerprint: true) == RFC5769.request)
    }

    @Test("RFC 5769 §2.2 IPv4 response decodes XOR-MAPPED-ADDRESS 192.0.2.1:32853")
    func ipv4Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv4Response)
        #expect(message.type == .bindingSuccessResponse)
        #expect(message.transactionID == RFC5769.transactionID)
        #expect(message.software == "test vector")
        #expect(message.xorMappedAddress == TransportAddress(ipv4: 192, 0, 2, 1, port: 32853))
        #expect(message.xorMappedAddress?.description == "192.0.2.1:32853")
        #expect(message.verifyIntegrity(key: shortTermKey))
        #expect(message.verifyFingerprint())

        var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID, paddingByte: 0x20)
        try builder.append(contentsOf: message.attributes)
        #expect(builder.finish(integrityKey: shortTermKey, fingerprint: true) == RFC5769.ipv4Response)
    }

    @Test("RFC 5769 §2.3 IPv6 response decodes XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853")
    func ipv6Response() throws {
        let message = try STUNMessage(parsing: RFC5769.ipv6Response)
        let address = try #require(message.xorMappedAddress)
        #expect(address.description == "[2001:db8:1234:5678:11:2233:4455:6677]:32853")
        #expect(address.addressBytes == hexBytes("20 01 0d b8 12 34 56 78 00 11 22 33 44 55 66 77"))
        #expect(address.port == 32853)
        #expect(message.verifyIntegrity(key: shortTermKey))
        #expect(message.verifyFingerprint())

        var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID, paddingByte: 0x20)
        try builder.append(contentsOf: message.attributes)
        #expect(builder.finish(integrityKey: shortTermKey, fingerprint: true) == RFC5769.ipv6Response)
    }

    @Test("RFC 5769 §2.4 long-term request: structure, MD5(username:realm:password) key, rebuilt byte for byte")
    func longTermRequest() throws {
        let message = try STUNMessage(parsing: RFC5769.longTermRequest)
        #expect(message.type == .bindingRequest)
        #expect(message.transactionID == STUNTransactionID(high: 0x78AD_3433, low: 0xC6AD_72C0_29DA_412E))
        #expect(message.attributes == [
            .username(RFC5769.longTermUsername),
            .nonce(RFC5769.longTermNonce),
            .realm(RFC5769.longTermRealm),
        ])
        #expect(message.hasMessageIntegrity)
        #expect(!message.hasFingerprint)
        #expect(!message.verifyFingerprint())
        #expect(message.messageIntegrityOffset == RFC5769.longTermRequest.count - 24)

        let key = try #require(STUNIntegrityKey.longTerm(
            username: RFC5769.longTermUsername, realm: RFC5769.longTermRealm, password: RFC5769.longTermPreparedPassword))
        #expect(message.verifyIntegrity(key: key))
        #expect(!message.verifyIntegrity(key: shortTermKey))

        // This vector pads with zeros, the builder's default.
        var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID)
        try builder.append(contentsOf: message.attributes)
        #expect(builder.finish(integrityKey: key) == RFC5769.longTermRequest)
    }

    @Test("Every RFC 5769 vector passes the RFC 7983 demux test; RTP, DTLS and short datagrams do not")
    func demux() {
        for vector in RFC5769.all { #expect(STUNMessage.isSTUN(vector.bytes), "\(vector.name)") }
        #expect(STUNMessage.isSTUN(RFC5769.request[...]))
        #expect(!STUNMessage.isSTUN(RFC5769.request[1...]))  // a slice that starts elsewhere
        var rtp = RFC5769.request
        rtp[0] = 0x80
        #expect(!STUNMessage.isSTUN(rtp))
        var dtls = RFC5769.request
        dtls[0] = 0x16
        #expect(!STUNMessage.isSTUN(dtls))
        var classicSTUN = RFC5769.request
        classicSTUN[4] = 0  // RFC 3489 had no cookie
        #expect(!STUNMessage.isSTUN(classicSTUN))
        #expect(!STUNMessage.isSTUN(Array(RFC5769.request.prefix(7))))
        #expect(!STUNMessage.isSTUN([UInt8]()))
    }
}

@Suite("STUN: building, verifying and rejecting messages")
struct STUNMessageTests {
    let hostKey = STUNIntegrityKey.shortTerm(password: BuiltMessages.hostPassword)

    @Test("A Chrome-style ICE check parses to its username, priority, role, nomination, and verifies")
    func chromeConnectivityCheck() throws {
        let bytes = try BuiltMessages.chromeCheck()
        // The layout up to MESSAGE-INTEGRITY, as Chrome puts it on the wire.
        let expectedPrefix = hexBytes("""
            00 01 00 58 21 12 a4 42 01 02 03 04 05 06 07 08 09 0a 0b 0c
            00 06 00 13 68 6f 73 74 75 66 72 61 67 3a 70 65 65 72 75 66 72 61 67 00
            c0 57 00 04 00 01 00 0a
            80 2a 00 08 1a 2b 3c 4d 5e 6f 70 81
            00 25 00 00
            00 24 00 04 6e 7f 00 ff
            00 08 00 14
            """)
        #expect(Array(bytes.prefix(expectedPrefix.count)) == expectedPrefix)
        #expect(bytes.count == expectedPrefix.count + 20 + 8)
        #expect(Array(bytes.suffix(8).prefix(4)) == [0x80, 0x28, 0x00, 0x04])

        let message = try STUNMessage(parsing: bytes)
        #expect(message.type == .bindingRequest)
        #expect(message.username == "hostufrag:peerufrag")
        #expect(message.priority == BuiltMessages.chromePriority)
        #expect(message.iceControlling == BuiltMessages.chromeTieBreaker)
        #expect(message.iceControlled == nil)
        #expect(message.useCandidate)
        #expect(message.attributes == BuiltMessages.chromeAttributes)
        #expect(message.unknownComprehensionRequired.isEmpty)  // GOOG-NETWORK-INFO is optional
        #expect(message.verifyIntegrity(key: hostKey))
        #expect(message.verifyFingerprint())
    }

    @Test("A binding response built by us parses back to the same XOR-MAPPED-ADDRESS, IPv4 and IPv6")
    func bindingResponseRoundTrip() throws {
        let addresses = [
            TransportAddress(ipv4: 198, 51, 100, 23, port: 61_000),
            TransportAddress(ip: .v6(high: 0x2001_0DB8_85A3_0000, low: 0x0000_8A2E_0370_7334), port: 9),
            TransportAddress(ip: .v6(high: 0, low: 1), port: 0xFFFF),
        ]
        for address in addresses {
            let message = try STUNMessage(parsing: try BuiltMessages.successResponse(to: address))
            #expect(message.type == .bindingSuccessResponse)
            #expect(message.transactionID == BuiltMessages.checkTransactionID)
            #expect(message.xorMappedAddress == address)
            #expect(message.verifyIntegrity(key: hostKey))
            #expect(message.verifyFingerprint())
        }
        #expect(TransportAddress(ip: .v6(high: 0, low: 1), port: 1).description == "[::1]:1")
        #expect(TransportAddress(ip: .v6(high: 0x2001_0DB8_0000_0000, low: 0x0000_0000_0000_0001), port: 1).description
            == "[2001:db8::1]:1")
        #expect(TransportAddress(addressBytes: [10, 0, 0, 1], port: 5) == TransportAddress(ipv4: 10, 0, 0, 1, port: 5))
        #expect(TransportAddress(addressBytes: [10, 0, 0], port: 5) == nil)
    }

    @Test("A binding request built by us parses back with every attribute, MAPPED-ADDRESS included")
    func bindingRequestRoundTrip() throws {
        let attributes: [STUNAttribute] = [
            .username("a:b"),
            .mappedAddress(TransportAddress(ipv4: 127, 0, 0, 1, port: 1)),
            .priority(1),
            .iceControlled(tieBreaker: 42),
            .realm("realm"),
            .nonce([1, 2, 3]),
            .software("Tessera 0.1"),
            .other(type: STUNAttributeType(rawValue: 0x8055), value: [9]),
        ]
        let transactionID = STUNTransactionID.random()
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: transactionID)
        try builder.append(contentsOf: attributes)
        let message = try STUNMessage(parsing: builder.finish())
        #expect(message.attributes == attributes)
        #expect(message.transactionID == transactionID)
        #expect(!message.hasMessageIntegrity && !message.hasFingerprint)
        #expect(!message.verifyIntegrity(key: hostKey))
        #expect(!message.verifyFingerprint())
    }

    @Test("MESSAGE-INTEGRITY fails with a wrong password, an empty one, or one byte of the message changed")
    func wrongPasswordFailsIntegrity() throws {
        let bytes = try BuiltMessages.chromeCheck()
        let message = try STUNMessage(parsing: bytes)
        #expect(message.verifyIntegrity(key: hostKey))
        #expect(!message.verifyIntegrity(key: .shortTerm(password: "hostpasswordhostpassworD")))
        #expect(!message.verifyIntegrity(key: .shortTerm(password: "")))
        #expect(!message.verifyIntegrity(key: .shortTerm(password: BuiltMessages.peerUfrag)))

        // A changed PRIORITY under the original MAC.
        var tampered = try STUNMessage(parsing: bytes).attributes
        tampered[4] = .priority(BuiltMessages.chromePriority + 1)
        var forged = STUNMessageBuilder(type: .bindingRequest, transactionID: BuiltMessages.checkTransactionID)
        try forged.append(contentsOf: tampered)
        var forgedBytes = forged.finish(integrityKey: hostKey, fingerprint: true)
        let original = try STUNMessage(parsing: bytes)
        let integrityRange = try #require(original.messageIntegrityOffset).advanced(by: 4)..<(bytes.count - 8)
        forgedBytes.replaceSubrange(integrityRange, with: bytes[integrityRange])  // the old MAC
        #expect(!(try STUNMessage(parsing: forgedBytes)).verifyIntegrity(key: hostKey))
    }

    @Test("Any single flipped bit before FINGERPRINT fails the fingerprint or the parse")
    func flippedBitFailsFingerprint() throws {
        let bytes = try BuiltMessages.chromeCheck()
        for bit in 0..<((bytes.count - 8) * 8) {
            var mutant = bytes
            mutant[bit / 8] ^= 1 << (bit % 8)
            if let message = try? STUNMessage(parsing: mutant) {
                #expect(!message.verifyFingerprint(), "bit \(bit)")
            }
        }
        var flippedCRC = bytes
        flippedCRC[bytes.count - 1] ^= 0x01
        #expect(!(try STUNMessage(parsing: flippedCRC)).verifyFingerprint())
    }

    @Test("An unknown comprehension-required attribute is reported once; the 420 answer round-trips")
    func unknownComprehensionRequired() throws {
        let unknownRequired = STUNAttributeType(rawValue: 0x7F01)
        let unknownOptional = STUNAttributeType(rawValue: 0xC001)
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: BuiltMessages.checkTransactionID)
        try builder.append(.other(type: unknownRequired, value: [1, 2, 3, 4, 5]))
        try builder.append(.other(type: unknownOptional, value: []))
        try builder.append(.other(type: unknownRequired, value: []))
        let request = try STUNMessage(parsing: builder.finish(integrityKey: hostKey, fingerprint: true))
        #expect(request.unknownComprehensionRequired == [unknownRequired])
        #expect(request.attributes.count == 3)
        #expect(unknownRequired.isComprehensionRequired && !unknownOptional.isComprehensionRequired)

        let response = try STUNMessage(parsing: try BuiltMessages.unknownAttributeResponse())
        #expect(response.type == .bindingErrorResponse)
        #expect(response.errorCode == .unknownAttribute)
        #expect(response.attributes.contains(.unknownAttributes([unknownRequired, STUNAttributeType(rawValue: 0x0003)])))
        #expect(response.software == "Tessera")
        #expect(response.verifyIntegrity(key: hostKey) && response.verifyFingerprint())
    }

    @Test("Attributes after MESSAGE-INTEGRITY are dropped and do not break integrity (RFC 8489 §14.5)")
    func attributesAfterIntegrityIgnored() throws {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: BuiltMessages.checkTransactionID)
        try builder.append(.username("hostufrag:peerufrag"))
        var bytes = builder.finish(integrityKey: hostKey)
        bytes += [0x00, 0x25, 0x00, 0x00]  // USE-CANDIDATE injected after the MAC
        bytes[3] += 4
        let message = try STUNMessage(parsing: bytes)
        #expect(message.attributes == [.username("hostufrag:peerufrag")])
        #expect(!message.useCandidate)
        #expect(message.verifyIntegrity(key: hostKey))
    }

    @Test("Message type packs method and class bits as RFC 8489 §5 draws them")
    func messageTypeBits() throws {
        #expect(STUNMessageType.bindingRequest.rawValue == 0x0001)
        #expect(STUNMessageType.bindingIndication.rawValue == 0x0011)
        #expect(STUNMessageType.bindingSuccessResponse.rawValue == 0x0101)
        #expect(STUNMessageType.bindingErrorResponse.rawValue == 0x0111)
        #expect(STUNMessageType(rawValue: 0x0111) == .bindingErrorResponse)
        #expect(STUNMethod(rawValue: 0x1000) == nil)
        for methodNumber: UInt16 in [0x000, 0x001, 0x003, 0x00F, 0x010, 0x07F, 0x080, 0xABC, 0xFFF] {
            for messageClass in STUNClass.allCases {
                let type = STUNMessageType(method: try #require(STUNMethod(rawValue: methodNumber)), messageClass: messageClass)
                #expect(type.rawValue & 0xC000 == 0)
                #expect(STUNMessageType(rawValue: type.rawValue) == type)
            }
        }
        #expect(STUNMessageType.bindingRequest.description == "Binding request")
    }

    @Test("The builder refuses values past their limits and positional attributes, writing nothing")
    func builderRefusals() throws {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: BuiltMessages.checkTransactionID)
        #expect(throws: STUNEncodeError.valueTooLong(.username, length: 514)) {
            try builder.append(.username(String(repeating: "u", count: 514)))
        }
        try builder.append(.username(String(repeating: "u", count: 513)))
        #expect(throws: STUNEncodeError.positionalAttribute(.messageIntegrity)) {
            try builder.append(.other(type: .messageIntegrity, value: Array(repeating: 0, count: 20)))
        }
        #expect(throws: STUNEncodeError.invalidErrorCode(700)) {
            try builder.append(.errorCode(STUNErrorCode(code: 700, reason: "")))
        }
        #expect(throws: STUNEncodeError.messageTooLong) {
            try builder.append(.other(type: STUNAttributeType(rawValue: 0x8100), value: Array(repeating: 0, count: 0xFFFF)))
        }
        #expect(builder.count == 20 + 4 + 516)
        let message = try STUNMessage(parsing: builder.finish(fingerprint: true))
        #expect(message.username?.utf8.count == 513)
        #expect(message.verifyFingerprint())
    }

    /// Malformed messages and the typed error each must give.
    static let malformed: [(name: String, bytes: [UInt8], error: STUNParseError)] = {
        let header = hexBytes("00 01 00 00 21 12 a4 42 00 00 00 00 00 00 00 00 00 00 00 00")
        func message(_ attributes: String) -> [UInt8] {
            var bytes = header + hexBytes(attributes)
            let length = bytes.count - 20
            bytes[2] = UInt8(length >> 8)
            bytes[3] = UInt8(length & 0xFF)
            return bytes
        }
        let mac = "00 08 00 14" + String(repeating: " 00", count: 20)
        let sha256 = "00 1c 00 20" + String(repeating: " 00", count: 32)
        let fingerprint = "80 28 00 04 00 00 00 00"
        return [
            ("RTP", hexBytes("80 60 00 01"), .notSTUN(firstByte: 0x80)),
            ("empty", [], .truncated(Truncated(needed: 2, offset: 0))),
            ("short header", Array(header.prefix(19)), .truncated(Truncated(needed: 4, offset: 16))),
            ("RFC 3489 cookie", hexBytes("00 01 00 00 00 00 00 00") + Array(repeating: 0, count: 12), .wrongMagicCookie(0)),
            ("odd length", hexBytes("00 01 00 03 21 12 a4 42") + Array(repeating: 0, count: 15), .lengthNotMultipleOfFour(3)),
            ("length past datagram", hexBytes("00 01 00 08 21 12 a4 42") + Array(repeating: 0, count: 16),
             .lengthPastDatagram(declared: 8, available: 4)),
            ("trailing bytes", header + [0, 0, 0, 0], .trailingBytes(4)),
            ("attribute past message", message("80 22 00 08 41 41 41 41"), .attributePastMessage(.software, offset: 20)),
            ("padding past message", message("80 22 00 05 41 41 41 41"), .attributePastMessage(.software, offset: 20)),
            ("3-byte PRIORITY", message("00 24 00 03 00 00 00 00"), .badAttributeLength(.priority, length: 3)),
            ("USE-CANDIDATE with a value", message("00 25 00 04 00 00 00 00"), .badAttributeLength(.useCandidate, length: 4)),
            ("short tie breaker", message("80 2a 00 04 00 00 00 00"), .badAttributeLength(.iceControlling, length: 4)),
            ("21-byte MESSAGE-INTEGRITY", message("00 08 00 15" + String(repeating: " 00", count: 24)),
             .badAttributeLength(.messageIntegrity, length: 21)),
            ("12-byte MESSAGE-INTEGRITY-SHA256", message("00 1c 00 0c" + String(repeating: " 00", count: 12)),
             .badAttributeLength(.messageIntegritySHA256, length: 12)),
            ("IPv4 address of IPv6 length", message("00 20 00 14 00 01" + String(repeating: " 00", count: 18)),
             .badAttributeLength(.xorMappedAddress, length: 20)),
            ("address family 3", message("00 01 00 08 00 03 00 00 00 00 00 00"), .unknownAddressFamily(3)),
            ("invalid UTF-8 USERNAME", message("00 06 00 02 c3 28 00 00"), .invalidUTF8(.username)),
            ("USERNAME of 516 bytes", message("00 06 02 04" + String(repeating: " 61", count: 516)),
             .valueTooLong(.username, length: 516)),
            ("ERROR-CODE class 7", message("00 09 00 04 00 00 07 00"), .invalidErrorCode(errorClass: 7, number: 0)),
            ("ERROR-CODE number 100", message("00 09 00 04 00 00 04 64"), .invalidErrorCode(errorClass: 4, number: 100)),
            ("odd UNKNOWN-ATTRIBUTES", message("00 0a 00 03 00 01 00 00"), .badAttributeLength(.unknownAttributes, length: 3)),
            ("two MESSAGE-INTEGRITY", message(mac + mac), .duplicateIntegrity(.messageIntegrity)),
            ("two MESSAGE-INTEGRITY-SHA256", message(sha256 + sha256), .duplicateIntegrity(.messageIntegritySHA256)),
            ("MESSAGE-INTEGRITY after -SHA256", message(sha256 + mac), .misplacedIntegrity(.messageIntegrity)),
            ("MESSAGE-INTEGRITY after FINGERPRINT", message(fingerprint + mac), .attributeAfterFingerprint(.messageIntegrity)),
            ("two FINGERPRINT", message(fingerprint + fingerprint), .attributeAfterFingerprint(.fingerprint)),
            ("5-byte FINGERPRINT", message("80 28 00 05 00 00 00 00 00 00 00 00"), .badAttributeLength(.fingerprint, length: 5)),
        ]
    }()

    @Test("Each kind of malformed message gives its typed error", arguments: 0..<malformed.count)
    func malformedMessage(index: Int) {
        let (name, bytes, expected) = Self.malformed[index]
        #expect(throws: expected, "\(name)") { try STUNMessage(parsing: bytes) }
    }

    @Test("MESSAGE-INTEGRITY-SHA256 is parsed and checked; a MAC from another key fails")
    func integritySHA256ParsedOnly() throws {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: BuiltMessages.checkTransactionID)
        try builder.append(.username("a:b"))
        var bytes = builder.finish(integrityKey: hostKey)
        bytes += hexBytes("00 1c 00 10") + Array(repeating: 0xAB, count: 16)
        bytes[3] += 20
        let message = try STUNMessage(parsing: bytes)
        #expect(message.hasMessageIntegrity && message.hasMessageIntegritySHA256)
        #expect(message.verifyIntegrity(key: hostKey))
        #expect(!message.verifyIntegritySHA256(key: hostKey))
        #expect(message.attributes == [.username("a:b")])
    }
}
