// FINGERPRINT (RFC 8489 §14.7): CRC-32 (ISO 3309, the one zlib computes) of the message up to
// the attribute, XORed with 0x5354554E, so that STUN is told apart from other protocols on the
// same port (RFC 7983 demux, RFC 8445 §7.2.2).
private import CZlib

/// The FINGERPRINT value of bytes.
enum STUNFingerprint {
    /// "STUN" in ASCII, XORed into the CRC (RFC 8489 §14.7).
    static let xorValue: UInt32 = 0x5354_554E

    /// CRC-32 of `bytes` XOR 0x5354554E.
    static func value(of bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        // A STUN message is at most 65,555 bytes, far below zlib's `uInt` limit.
        let crc = crc32(0, bytes.baseAddress, UInt32(truncatingIfNeeded: bytes.count))
        return UInt32(truncatingIfNeeded: crc) ^ xorValue
    }
}

extension STUNMessage {
    /// Checks FINGERPRINT over the exact received bytes (RFC 8489 §14.7): the CRC-32 of
    /// everything before the attribute, whose header length already counts FINGERPRINT because
    /// it is last. False when the attribute is absent.
    public func verifyFingerprint() -> Bool {
        guard let offset = fingerprintOffset, offset >= Self.headerSize, offset + 8 == bytes.count else { return false }
        let received = UInt32(bytes[offset + 4]) << 24 | UInt32(bytes[offset + 5]) << 16
            | UInt32(bytes[offset + 6]) << 8 | UInt32(bytes[offset + 7])
        let computed = bytes.withUnsafeBufferPointer { message in
            STUNFingerprint.value(of: UnsafeBufferPointer(rebasing: message[0..<offset]))
        }
        return computed == received
    }
}
