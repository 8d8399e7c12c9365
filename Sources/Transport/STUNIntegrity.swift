// MESSAGE-INTEGRITY (RFC 8489 §14.5) and MESSAGE-INTEGRITY-SHA256 (§14.6): HMAC over the message
// up to the attribute, with the header's length field set as if the attribute were the last one.
// HMAC through OpenSSL's one-shot `HMAC()`, comparison in constant time with `CRYPTO_memcmp`.
private import COpenSSL

/// The HMAC key of a STUN credential (RFC 8489 §9).
///
/// For ICE (RFC 8445 §7.2.2) it is always a short-term key: the password of the agent that
/// receives the check, `ice-pwd` from its SDP.
public struct STUNIntegrityKey: Sendable, Equatable {
    /// The raw HMAC key.
    public let bytes: [UInt8]

    /// A key from raw bytes.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// The short-term credential key (RFC 8489 §9.1.1): OpaqueString(password).
    ///
    /// ICE passwords are made of ice-char (ALPHA / DIGIT / "+" / "/", RFC 8839 §5.4), for which
    /// the OpaqueString profile (RFC 8265; SASLprep in RFC 5389) changes nothing, so the key is
    /// the password's UTF-8 bytes as given and no string preparation is done here.
    public static func shortTerm(password: String) -> STUNIntegrityKey {
        STUNIntegrityKey(bytes: Array(password.utf8))
    }

    /// The long-term credential key (RFC 8489 §9.2.2, MD5 algorithm):
    /// MD5(username ":" realm ":" password). The caller passes the password already prepared
    /// with OpaqueString/SASLprep (RFC 5769 §2.4's "The\u{AD}M\u{AA}tr\u{2168}" becomes
    /// "TheMatrIX"); this type does no string preparation. Nil if OpenSSL cannot compute MD5
    /// (a FIPS-only configuration).
    public static func longTerm(username: String, realm: String, password: String) -> STUNIntegrityKey? {
        let input = Array("\(username):\(realm):\(password)".utf8)
        var digest = [UInt8](repeating: 0, count: 16)
        var digestLength: UInt32 = 0
        let succeeded = input.withUnsafeBufferPointer { inputBytes in
            digest.withUnsafeMutableBufferPointer { digestBytes in
                EVP_Digest(inputBytes.baseAddress, inputBytes.count, digestBytes.baseAddress, &digestLength, EVP_md5(), nil) == 1
            }
        }
        guard succeeded, digestLength == 16 else { return nil }
        return STUNIntegrityKey(bytes: digest)
    }
}

/// The HMACs STUN uses, over contiguous bytes.
enum STUNHMAC {
    /// The hash under the HMAC.
    enum Hash {
        /// HMAC-SHA1, 20 bytes: MESSAGE-INTEGRITY.
        case sha1
        /// HMAC-SHA256, 32 bytes: MESSAGE-INTEGRITY-SHA256.
        case sha256
    }

    /// Room every output buffer must have.
    static let maximumLength = 32

    /// Writes HMAC(key, data) into `output` (at least `maximumLength` bytes); false if OpenSSL fails.
    static func compute(_ hash: Hash, key: [UInt8], data: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Bool {
        guard key.count <= Int(Int32.max) else { return false }
        var outputLength: UInt32 = 0
        var placeholder: UInt8 = 0  // a valid pointer for an empty key or empty data
        return key.withUnsafeBufferPointer { keyBytes in
            withUnsafePointer(to: &placeholder) { empty in
                HMAC(
                    hash == .sha1 ? EVP_sha1() : EVP_sha256(),
                    keyBytes.baseAddress ?? empty, Int32(keyBytes.count),
                    data.baseAddress ?? empty, data.count,
                    output, &outputLength
                ) != nil
            }
        }
    }
}

extension STUNMessage {
    /// Checks MESSAGE-INTEGRITY against `key` over the exact received bytes (RFC 8489 §14.5):
    /// HMAC-SHA1 of everything before the attribute, with the header's length field replaced by
    /// the length up to and including MESSAGE-INTEGRITY (so that a FINGERPRINT after it does not
    /// count). Constant-time comparison. False when the attribute is absent.
    public func verifyIntegrity(key: STUNIntegrityKey) -> Bool {
        guard let offset = messageIntegrityOffset else { return false }
        return verifyHMAC(.sha1, key: key, attributeOffset: offset)
    }

    /// Checks MESSAGE-INTEGRITY-SHA256 against `key` (RFC 8489 §14.6): HMAC-SHA256 truncated to
    /// the attribute's length, computed like MESSAGE-INTEGRITY. False when the attribute is absent.
    public func verifyIntegritySHA256(key: STUNIntegrityKey) -> Bool {
        guard let offset = messageIntegritySHA256Offset else { return false }
        return verifyHMAC(.sha256, key: key, attributeOffset: offset)
    }

    private func verifyHMAC(_ hash: STUNHMAC.Hash, key: STUNIntegrityKey, attributeOffset offset: Int) -> Bool {
        // The parser placed the attribute inside the message; checked again so that this code
        // stands on its own.
        guard offset >= Self.headerSize, offset + 4 <= bytes.count else { return false }
        let valueLength = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
        guard valueLength <= STUNHMAC.maximumLength, offset + 4 + valueLength <= bytes.count else { return false }
        let lengthUpToAttribute = offset + 4 + valueLength - Self.headerSize

        return bytes.withUnsafeBufferPointer { message in
            guard let messageStart = message.baseAddress else { return false }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: offset + STUNHMAC.maximumLength) { scratch in
                guard let scratchStart = scratch.baseAddress else { return false }
                // The covered bytes with the adjusted length field, then room for the HMAC.
                scratchStart.initialize(from: messageStart, count: offset)
                scratchStart[2] = UInt8(truncatingIfNeeded: lengthUpToAttribute >> 8)
                scratchStart[3] = UInt8(truncatingIfNeeded: lengthUpToAttribute)
                let mac = scratchStart + offset
                guard STUNHMAC.compute(hash, key: key.bytes, data: UnsafeBufferPointer(start: scratchStart, count: offset), into: mac) else {
                    return false
                }
                return CRYPTO_memcmp(mac, messageStart + offset + 4, valueLength) == 0
            }
        }
    }
}
