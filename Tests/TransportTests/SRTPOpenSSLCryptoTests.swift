import COpenSSL
import CSRTP
import CSRTPCrypto
import Testing
import Transport
import WireTesting

/// CSRTPCrypto's cipher and auth types, run as libsrtp2 runs them, through its public cipher and
/// auth interfaces (cipher.h, auth.h).
enum OpenSSLTypes {
    /// One packet's worth of a cipher: init with `key`, set_iv, set_aad (GCM), then encrypt and
    /// get_tag, or decrypt. `splitAt` encrypts in two calls, as libsrtp does for a keystream prefix.
    static func cipher(_ id: Int32, key: [UInt8], iv: [UInt8], aad: [UInt8] = [], tagLength: Int32 = 0,
                       _ data: [UInt8], decrypt: Bool = false, splitAt: Int? = nil) -> (status: srtp_err_status_t, bytes: [UInt8]) {
        guard let type = tessera_srtp_openssl_cipher_type(id) else { return (srtp_err_status_bad_param, []) }
        var allocated: UnsafeMutablePointer<srtp_cipher_t>?
        var status = srtp_cipher_type_alloc(type, &allocated, Int32(key.count), tagLength)
        guard status == srtp_err_status_ok, let cipher = allocated else { return (status, []) }
        defer { srtp_cipher_dealloc(cipher) }
        var iv = iv
        let direction = decrypt ? srtp_direction_decrypt : srtp_direction_encrypt
        var buffer = data + [UInt8](repeating: 0, count: 16)
        var length = UInt32(data.count)
        status = buffer.withUnsafeMutableBufferPointer { bytes -> srtp_err_status_t in
            guard let base = bytes.baseAddress else { return srtp_err_status_bad_param }
            var status = srtp_cipher_init(cipher, key)
            if status == srtp_err_status_ok { status = srtp_cipher_set_iv(cipher, &iv, Int32(direction.rawValue)) }
            if status == srtp_err_status_ok, !aad.isEmpty { status = srtp_cipher_set_aad(cipher, aad, UInt32(aad.count)) }
            guard status == srtp_err_status_ok else { return status }
            if decrypt { return srtp_cipher_decrypt(cipher, base, &length) }
            if let splitAt {
                var first = UInt32(splitAt), second = length - UInt32(splitAt)
                status = srtp_cipher_encrypt(cipher, base, &first)
                if status == srtp_err_status_ok { status = srtp_cipher_encrypt(cipher, base + splitAt, &second) }
            } else {
                status = srtp_cipher_encrypt(cipher, base, &length)
            }
            guard status == srtp_err_status_ok, tagLength > 0 else { return status }
            var tagged: UInt32 = 0
            status = srtp_cipher_get_tag(cipher, base + Int(length), &tagged)
            length += tagged
            return status
        }
        return (status, Array(buffer[..<Int(length)]))
    }

    /// The SRTP key derivation of RFC 3711 §4.3.1 (key_derivation_rate 0): the AES-CM keystream
    /// under the master key, its IV the master salt (a GCM salt padded to 14 octets, RFC 7714 §11)
    /// with the label in octet 7.
    static func derive(masterKey: [UInt8], masterSalt: [UInt8], label: UInt8, length: Int) -> [UInt8] {
        let id = masterKey.count == 16 ? SRTP_AES_ICM_128 : masterKey.count == 24 ? SRTP_AES_ICM_192 : SRTP_AES_ICM_256
        var iv = [UInt8](repeating: 0, count: 16)
        iv[7] = label
        let salt = masterSalt + [UInt8](repeating: 0, count: 14 - masterSalt.count)
        return cipher(id, key: masterKey + salt, iv: iv, [UInt8](repeating: 0, count: length)).bytes
    }

    /// The HMAC-SHA1 type: init with `key`, start, update with all chunks but the last, compute
    /// over the last, cut to `tagLength` octets.
    static func hmac(key: [UInt8], _ chunks: [[UInt8]], tagLength: Int32) -> (status: srtp_err_status_t, tag: [UInt8]) {
        guard let type = tessera_srtp_openssl_auth_type(), let alloc = type.pointee.alloc, let dealloc = type.pointee.dealloc
        else { return (srtp_err_status_bad_param, []) }
        var allocated: UnsafeMutablePointer<srtp_auth_t>?
        var status = alloc(&allocated, Int32(key.count), tagLength)
        guard status == srtp_err_status_ok, let auth = allocated else { return (status, []) }
        defer { _ = dealloc(auth) }
        guard let initialize = type.pointee.`init`, let start = type.pointee.start, let update = type.pointee.update,
              let compute = type.pointee.compute else { return (srtp_err_status_bad_param, []) }
        var tag = [UInt8](repeating: 0, count: 20)
        status = initialize(auth.pointee.state, key, Int32(key.count))
        if status == srtp_err_status_ok { status = start(auth.pointee.state) }
        for chunk in chunks.dropLast() where status == srtp_err_status_ok {
            status = update(auth.pointee.state, chunk, Int32(chunk.count))
        }
        let last = chunks.last ?? []
        if status == srtp_err_status_ok { status = compute(auth.pointee.state, last, Int32(last.count), tagLength, &tag) }
        return (status, Array(tag.prefix(Int(tagLength))))
    }

    /// HMAC-SHA1 by OpenSSL's one-shot HMAC(), to check the type against.
    static func referenceHMAC(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard HMAC(EVP_sha1(), key, Int32(key.count), message, message.count, &digest, &length) != nil else { return [] }
        return Array(digest.prefix(Int(length)))
    }

    /// The AES-CM counter block's SRTP part (RFC 3711 §4.1.1): SSRC at octets 4-7, the 48-bit
    /// packet index at 8-13; libsrtp's set_iv XORs it with the session salt.
    static func countingBlock(ssrc: UInt32, index: UInt64) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: 16)
        for octet in 0..<4 { block[4 + octet] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * octet)) }
        for octet in 0..<6 { block[8 + octet] = UInt8(truncatingIfNeeded: index >> (40 - 8 * octet)) }
        return block
    }

    /// The AEAD IV of RFC 7714 §8.1 (SRTP: ROC and sequence number as the 48-bit index) and §9.1
    /// (SRTCP: the 31-bit index in the last four octets): 0x0000, SSRC, index, XORed with the salt.
    static func gcmIV(salt: [UInt8], ssrc: UInt32, index: UInt64) -> [UInt8] {
        var iv = [UInt8](repeating: 0, count: 12)
        for octet in 0..<4 { iv[2 + octet] = UInt8(truncatingIfNeeded: ssrc >> (24 - 8 * octet)) }
        for octet in 0..<6 { iv[6 + octet] = UInt8(truncatingIfNeeded: index >> (40 - 8 * octet)) }
        return zip(iv, salt).map { $0 ^ $1 }
    }
}

/// The libsrtp2 cipher and auth types on OpenSSL (CSRTPCrypto) that SRTPSession installs: their
/// RFC test vectors, whole packets through SRTPSession, and hostile input on the HMAC-SHA1 path.
@Suite struct SRTPOpenSSLCryptoTests {
    typealias Types = OpenSSLTypes

    @Test func theOpenSSLTypesAreInstalledAndSessionsUseThem() throws {
        #expect(SRTPSession.crypto == .openssl, "TESSERA_SRTP_CRYPTO=libsrtp is set, or installing the OpenSSL types failed")
        let before = tessera_srtp_openssl_allocations()
        for profile in SRTPProfile.allCases {
            let keys = [UInt8](repeating: 7, count: profile.masterKeyLength + profile.masterSaltLength)
            _ = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys)
        }
        // Each session allocates its key derivation cipher, SRTP and SRTCP ciphers (and, for
        // AES-CM, authenticators) from the installed types.
        #expect(tessera_srtp_openssl_allocations() >= before + 6)
    }

    // MARK: Known answers of each type

    /// RFC 3711 Appendix B.2: session key 2B7E…, salt F0F1…FD, SSRC 0 and index 0: the keystream's
    /// first three and last three blocks (counters 0000 to 0002 and FEFF to FF01).
    @Test func aesCMKeystreamIsRFC3711AppendixB2() {
        let key = hexBytes("2B7E151628AED2A6ABF7158809CF4F3C F0F1F2F3F4F5F6F7F8F9FAFBFCFD")
        let zeros = [UInt8](repeating: 0, count: 0xFF02 * 16)
        let (status, keystream) = Types.cipher(SRTP_AES_ICM_128, key: key, iv: Types.countingBlock(ssrc: 0, index: 0), zeros)
        #expect(status == srtp_err_status_ok)
        #expect(Array(keystream.prefix(48)) == hexBytes("""
            E03EAD0935C95E80E166B16DD92B4EB4 D23513162B02D0F72A43A2FE4A5F97AB 41E95B3BB0A2E8DD477901E4FCA894C0
            """))
        #expect(Array(keystream.suffix(48)) == hexBytes("""
            EC8CDF7398607CB0F2D21675EA9EA1E4 362B7C3C6773516318A077D7FC5073AE 6A2CC3787889374FBEB4C81B17BA6C44
            """))
        // In two calls (libsrtp draws a keystream prefix, then encrypts) the keystream continues.
        let split = Types.cipher(SRTP_AES_ICM_128, key: key, iv: Types.countingBlock(ssrc: 0, index: 0),
                                 [UInt8](repeating: 0, count: 48), splitAt: 21)
        #expect(split.bytes == Array(keystream.prefix(48)))
    }

    /// RFC 3711 Appendix B.3 (AES-128) and RFC 6188 §7.2 (AES-256) and §7.4 (AES-192): the
    /// session keys the AES-CM PRF derives for labels 0 (cipher key), 1 (auth key), 2 (salt).
    @Test func keyDerivationIsRFC3711AppendixB3AndRFC6188() {
        let cases: [(key: String, salt: String, cipherKey: String, authKey: String, sessionSalt: String)] = [
            ("E1F97A0D3E018BE0D64FA32C06DE4139", "0EC675AD498AFEEBB6960B3AABE6", "C61E7A93744F39EE10734AFE3FF7A087",
             """
             CEBE321F6FF7716B6FD4AB49AF256A156D38BAA48F0A0ACF3C34E2359E6CDBCEE049646C43D9327AD175578EF7227098
             6371C10C9A369AC2F94A8C5FBCDDDC256D6E919A48B610EF17C2041E474035766B68642C59BBFC2F34DB60DBDFB2
             """, "30CBBC08863D8C85D49DB34A9AE1"),
            ("f0f04914b513f2763a1b1fa130f10e2998f6f6e43e4309d1e622a0e332b9f1b6", "3b04803de51ee7c96423ab5b78d2",
             "5ba1064e30ec51613cad926c5a28ef731ec7fb397f70a960653caf06554cd8c4", "fd9c32d39ed5fbb5a9dc96b30818454d1313dc05",
             "fa31791685ca444a9e07c6c64e93"),
            ("73edc66c4fa15776fb57f9505c17136550ffda71f3e8e5f1", "c8522f3acd4ce86d5add78edbb11",
             "31874736a8f1143870c26e4857d8a5b2c4a354407faadabb", "355b10973cd95b9eacf4061c7e1a7151e7cfbfcb",
             "2372b82d639b6d8503a47adc0a6c"),
        ]
        for vector in cases {
            let (key, salt) = (hexBytes(vector.key), hexBytes(vector.salt))
            for (label, expected) in [(UInt8(0), vector.cipherKey), (1, vector.authKey), (2, vector.sessionSalt)] {
                let wanted = hexBytes(expected)
                #expect(Types.derive(masterKey: key, masterSalt: salt, label: label, length: wanted.count) == wanted,
                        "key \(vector.key.prefix(8))…, label \(label)")
            }
        }
    }

    /// RFC 7714 §16 (SRTP) and §17 (SRTCP), AEAD_AES_128_GCM and AEAD_AES_256_GCM with the session
    /// key and salt given there: sealed, opened, and refused when the tag or the AAD changes.
    @Test func aeadAESGCMIsRFC7714() {
        let salt = hexBytes("517569642070726f2071756f")  // "Quid pro quo"
        let key128 = hexBytes("000102030405060708090a0b0c0d0e0f"), key256 = key128 + hexBytes("101112131415161718191a1b1c1d1e1f")
        let rtpIV = Types.gcmIV(salt: salt, ssrc: 0x5501_A0B2, index: 0xF17B)
        let rtcpIV = Types.gcmIV(salt: salt, ssrc: 0x4D61_7273, index: 0x5D4)
        #expect(rtpIV == hexBytes("51753c6580c2726f20718414"))
        #expect(rtcpIV == hexBytes("517524055203726f207170bb"))
        let rtpHeader = hexBytes("8040f17b 8041f8d3 5501a0b2"), rtpPayload = Array("Gallia est omnis divisa in partes tres".utf8)
        let rtcp = hexBytes("""
            81c8000d 4d617273 4e545031 4e545032 52545020 0000042a 0000e930 4c756e61 deadbeef deadbeef deadbeef deadbeef deadbeef
            """)
        let (rtcpHeader, rtcpPayload) = (Array(rtcp.prefix(8)), Array(rtcp.dropFirst(8)))
        let cases: [(name: String, id: Int32, key: [UInt8], iv: [UInt8], aad: [UInt8], plain: [UInt8], sealed: String)] = [
            ("§16.1 SRTP AES-128", SRTP_AES_GCM_128, key128, rtpIV, rtpHeader, rtpPayload, """
             f24de3a3 fb34de6c acba861c 9d7e4bca be633bd5 0d294e6f 42a5f47a 51c7d19b 36de3adf 8833
             899d7f27 beb16a91 52cf765e e4390cce
             """),
            ("§16.2 SRTP AES-256", SRTP_AES_GCM_256, key256, rtpIV, rtpHeader, rtpPayload, """
             32b1de78 a822fe12 ef9f78fa 332e33aa b1801238 9a58e2f3 b50b2a02 76ffae0f 1ba63799 b87b
             7aa3db36 dfffd6b0 f9bb7878 d7a76c13
             """),
            ("§17.1 SRTCP AES-128", SRTP_AES_GCM_128, key128, rtcpIV, rtcpHeader + hexBytes("800005d4"), rtcpPayload, """
             63e94885 dcdab67c a727d766 2f6b7e99 7ff5c0f7 6c06f32d c676a5f1 730d6fda 4ce09b46 86303ded 0bb9275b
             c84aa458 96cf4d2f c5abf872 45d9eade
             """),
            ("§17.2 SRTCP AES-256", SRTP_AES_GCM_256, key256, rtcpIV, rtcpHeader + hexBytes("800005d4"), rtcpPayload, """
             d50ae4d1 f5ce5d30 4ba297e4 7d470c28 2c3ece5d bffe0a50 a2eaa5c1 110555be 8415f658 c61de047
             6f1b6fad 1d1eb30c 4446839f 57ff6f6c b26ac3be
             """),
            ("§17.3 SRTCP AES-128, not encrypted", SRTP_AES_GCM_128, key128, rtcpIV, rtcp + hexBytes("000005d4"), [],
             "841dd968 3dd78ec9 2ae58790 125f62b3"),
            ("§17.4 SRTCP AES-256, not encrypted", SRTP_AES_GCM_256, key256, rtcpIV, rtcp + hexBytes("000005d4"), [],
             "91db4afb feee5a97 8fab4393 ed2615fe"),
        ]
        for vector in cases {
            let key = vector.key + salt, sealed = hexBytes(vector.sealed)
            let encrypted = Types.cipher(vector.id, key: key, iv: vector.iv, aad: vector.aad, tagLength: 16, vector.plain)
            #expect(encrypted.status == srtp_err_status_ok, "\(vector.name)")
            #expect(encrypted.bytes == sealed, "\(vector.name)")
            let opened = Types.cipher(vector.id, key: key, iv: vector.iv, aad: vector.aad, tagLength: 16, sealed, decrypt: true)
            #expect(opened.status == srtp_err_status_ok && opened.bytes == vector.plain, "\(vector.name)")
            var badTag = sealed
            badTag[badTag.count - 1] ^= 0x80
            #expect(Types.cipher(vector.id, key: key, iv: vector.iv, aad: vector.aad, tagLength: 16, badTag, decrypt: true).status
                    == srtp_err_status_auth_fail, "\(vector.name)")
            var badAAD = vector.aad
            badAAD[3] ^= 0x01
            #expect(Types.cipher(vector.id, key: key, iv: vector.iv, aad: badAAD, tagLength: 16, sealed, decrypt: true).status
                    == srtp_err_status_auth_fail, "\(vector.name)")
            // Shorter than a tag: refused, not read past.
            #expect(Types.cipher(vector.id, key: key, iv: vector.iv, aad: vector.aad, tagLength: 16, Array(sealed.prefix(15)), decrypt: true).status
                    != srtp_err_status_ok, "\(vector.name)")
        }
    }

    /// RFC 2202 §3, HMAC-SHA1 test cases 1 to 7, whole and cut to SRTP's 80 and 32 bits, in one
    /// piece and in several; the same as OpenSSL's one-shot HMAC.
    @Test func hmacSHA1IsRFC2202() {
        let cases: [(key: [UInt8], data: [UInt8], digest: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8), "b617318655057264e28bc0b6fb378c8ef146be00"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50), "125d7342b9ac11cd91a39af48aa17b4f63f175d3"),
            (Array(1...25), [UInt8](repeating: 0xcd, count: 50), "4c9007f4026250c6bc8414f9bf50c86c2d7235da"),
            ([UInt8](repeating: 0x0c, count: 20), Array("Test With Truncation".utf8), "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04"),
            ([UInt8](repeating: 0xaa, count: 80), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "aa4ae5e15272d00e95705637ce8a3b55ed402112"),
            ([UInt8](repeating: 0xaa, count: 80),
             Array("Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data".utf8),
             "e8e99d0f45237d786d6bbaa7965c7808bbff1a91"),
        ]
        for (number, vector) in zip(1..., cases) {
            let digest = hexBytes(vector.digest)
            #expect(Types.referenceHMAC(key: vector.key, vector.data) == digest, "case \(number)")
            for tagLength: Int32 in [20, 10, 4] {
                let whole = Types.hmac(key: vector.key, [vector.data], tagLength: tagLength)
                #expect(whole.status == srtp_err_status_ok && whole.tag == Array(digest.prefix(Int(tagLength))), "case \(number), \(tagLength) octets")
            }
            // As SRTP feeds it: the packet, then the ROC in compute.
            let pieces = [Array(vector.data.prefix(5)), Array(vector.data.dropFirst(5).prefix(3)), Array(vector.data.dropFirst(8))]
            #expect(Types.hmac(key: vector.key, pieces, tagLength: 20).tag == digest, "case \(number) in pieces")
        }
        #expect(Types.hmac(key: [1], [[]], tagLength: 21).status == srtp_err_status_bad_param, "longer than SHA-1's 20 octets")
    }

    // MARK: Whole packets through SRTPSession

    /// libsrtp's reference packets (test/srtp_driver.c, srtp_validate): RTP and RTCP of SSRC
    /// 0xcafebabe protected with RFC 3711 B.3's master key and salt.
    static let referenceRTP = hexBytes("800f1234 decafbad cafebabe abababab abababab abababab abababab")
    static let referenceRTCP = hexBytes("81c8000b cafebabe abababab abababab abababab abababab")

    /// AES128_CM_HMAC_SHA1_80: what SRTPSession protects is the packet RFC 3711 describes with the
    /// session keys B.3 lists (AES-CM under the cipher key and salt, HMAC-SHA1-80 under the auth
    /// key over the packet and the ROC), and is libsrtp's reference packet; the other side opens it.
    @Test func aesCMPacketsAreRFC3711WithTheKeysOfAppendixB3() throws {
        let master = hexBytes("E1F97A0D3E018BE0D64FA32C06DE4139 0EC675AD498AFEEBB6960B3AABE6")
        let sender = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .outbound, masterKeyAndSalt: master)
        let receiver = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .inbound, masterKeyAndSalt: master)
        let protected = try sender.protectRTP(Self.referenceRTP)

        let (cipherKey, authKey) = (hexBytes("C61E7A93744F39EE10734AFE3FF7A087"), hexBytes("CEBE321F6FF7716B6FD4AB49AF256A156D38BAA4"))
        let sessionSalt = hexBytes("30CBBC08863D8C85D49DB34A9AE1")
        let header = Array(Self.referenceRTP.prefix(12))
        let encrypted = Types.cipher(SRTP_AES_ICM_128, key: cipherKey + sessionSalt, iv: Types.countingBlock(ssrc: 0xCAFE_BABE, index: 0x1234),
                                     Array(Self.referenceRTP.dropFirst(12))).bytes
        let tag = Types.referenceHMAC(key: authKey, header + encrypted + [0, 0, 0, 0]).prefix(10)
        #expect(protected == header + encrypted + tag)
        #expect(protected == hexBytes("""
            800f1234 decafbad cafebabe 4e55dc4c e79978d8 8ca4d215 949d2402 b78d6acc 99ea179b 8dbb
            """))
        #expect(try receiver.unprotectRTP(protected) == Self.referenceRTP)

        let protectedRTCP = try sender.protectRTCP(Self.referenceRTCP)
        #expect(protectedRTCP == hexBytes("""
            81c8000b cafebabe 7128035b e487b9bd bef89041 f977a5a8 80000001 993e08cd 54d6c123 0798
            """))
        #expect(try receiver.unprotectRTCP(protectedRTCP) == Self.referenceRTCP)
    }

    /// AEAD_AES_128_GCM: what SRTPSession protects is the packet of RFC 7714 §8 under the session
    /// key and salt that RFC 3711's PRF derives (RFC 7714 §11), and is libsrtp's reference packet
    /// (srtp_validate_gcm); the other side opens it.
    @Test func aesGCMPacketsAreRFC7714WithTheDerivedKeys() throws {
        let (masterKey, masterSalt) = (hexBytes("000102030405060708090a0b0c0d0e0f"), hexBytes("a0a1a2a3a4a5a6a7a8a9aaab"))
        let sender = try SRTPSession(profile: .aeadAES128GCM, direction: .outbound, masterKeyAndSalt: masterKey + masterSalt)
        let receiver = try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: masterKey + masterSalt)
        let protected = try sender.protectRTP(Self.referenceRTP)

        let cipherKey = Types.derive(masterKey: masterKey, masterSalt: masterSalt, label: 0, length: 16)
        let sessionSalt = Types.derive(masterKey: masterKey, masterSalt: masterSalt, label: 2, length: 12)
        let header = Array(Self.referenceRTP.prefix(12))
        let sealed = Types.cipher(SRTP_AES_GCM_128, key: cipherKey + sessionSalt, iv: Types.gcmIV(salt: sessionSalt, ssrc: 0xCAFE_BABE, index: 0x1234),
                                  aad: header, tagLength: 16, Array(Self.referenceRTP.dropFirst(12))).bytes
        #expect(protected == header + sealed)
        #expect(protected == hexBytes("""
            800f1234 decafbad cafebabe c5002ede 04cfdd2e b91159e0 880aa06e d2976826 f796b201 df3131a1 27e8a392
            """))
        #expect(try receiver.unprotectRTP(protected) == Self.referenceRTP)

        let protectedRTCP = try sender.protectRTCP(Self.referenceRTCP)
        #expect(protectedRTCP == hexBytes("""
            81c8000b cafebabe c98b8b5d f0392a55 852b6c21 ac8e7025 c52c6fbe a2b3b446 ea31123b a88ce61e 80000001
            """))
        #expect(try receiver.unprotectRTCP(protectedRTCP) == Self.referenceRTCP)
    }

    // MARK: The HMAC-SHA1-80 path under abuse

    private func rtpPacket(seq: UInt16, payloadLength: Int = 160) -> [UInt8] {
        [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x03, 0xC0, 0x11, 0x22, 0x33, 0x44]
            + (0..<payloadLength).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seq)) }
    }
    private let cmKeys = (0..<30).map { UInt8($0 * 5 + 3) }

    @Test func aesCMRoundTripsAcrossTheSequenceNumberWrap() throws {
        let sender = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .outbound, masterKeyAndSalt: cmKeys)
        let receiver = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .inbound, masterKeyAndSalt: cmKeys)
        for (step, seq) in zip(0..., [UInt16(65_530)...65_535, 0...6].joined()) {
            let plain = rtpPacket(seq: seq, payloadLength: [0, 1, 15, 16, 17, 160, 1_188][step % 7])
            let protected = try sender.protectRTP(plain)
            #expect(protected.count == plain.count + 10, "an 80-bit tag")
            #expect(try receiver.unprotectRTP(protected) == plain)
        }
        let rtcp: [UInt8] = [0x80, 201, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44]
        let protectedRTCP = try sender.protectRTCP(rtcp)
        #expect(protectedRTCP.count == rtcp.count + 4 + 10, "E and the SRTCP index, then the tag")
        #expect(try receiver.unprotectRTCP(protectedRTCP) == rtcp)
    }

    @Test func aesCMRefusesEveryTamperedTagBitAndReplays() throws {
        let sender = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .outbound, masterKeyAndSalt: cmKeys)
        let receiver = try SRTPSession(profile: .aes128CMHMACSHA1_80, direction: .inbound, masterKeyAndSalt: cmKeys)
        let protected = try sender.protectRTP(rtpPacket(seq: 100))
        for bit in 0..<80 {
            var tampered = protected
            tampered[protected.count - 10 + bit / 8] ^= 1 << UInt8(bit % 8)
            #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(tampered) }
        }
        #expect(try receiver.unprotectRTP(protected) == rtpPacket(seq: 100), "the failures left the context as it was")
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(protected) }

        let rtcp: [UInt8] = [0x80, 201, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44]
        let protectedRTCP = try sender.protectRTCP(rtcp)
        var tamperedRTCP = protectedRTCP
        tamperedRTCP[tamperedRTCP.count - 1] ^= 0x01
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTCP(tamperedRTCP) }
        #expect(try receiver.unprotectRTCP(protectedRTCP) == rtcp)
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTCP(protectedRTCP) }
    }

    /// Every truncation and thousands of seeded mutations of protected RTP and RTCP, for both
    /// profiles: each is an error, never a trap, and only the original bytes ever open.
    @Test(arguments: SRTPProfile.allCases)
    func mutatedAndTruncatedInputIsRefused(profile: SRTPProfile) throws {
        let keys = [UInt8](cmKeys.prefix(profile.masterKeyLength + profile.masterSaltLength))
        let sender = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys)
        let receiver = try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys)
        let rtp = try sender.protectRTP(rtpPacket(seq: 5_000))
        let rtcp = try sender.protectRTCP([0x81, 200, 0x00, 0x06, 0x11, 0x22, 0x33, 0x44] + [UInt8](repeating: 0x5A, count: 20))
        for truncated in Mutator.truncations(of: rtp) {
            #expect(throws: SRTPError.self) { try receiver.unprotectRTP(truncated) }
        }
        for truncated in Mutator.truncations(of: rtcp) {
            #expect(throws: SRTPError.self) { try receiver.unprotectRTCP(truncated) }
        }
        var mutator = Mutator(seed: 0x5127_0000 + UInt64(profile == .aeadAES128GCM ? 1 : 2))
        for _ in 0..<3_000 {
            let mutantRTP = mutator.mutate(rtp), mutantRTCP = mutator.mutate(rtcp)
            if (try? receiver.unprotectRTP(mutantRTP)) != nil { #expect(mutantRTP == rtp) }
            if (try? receiver.unprotectRTCP(mutantRTCP)) != nil { #expect(mutantRTCP == rtcp) }
        }
    }
}
