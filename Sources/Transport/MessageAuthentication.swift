private import COpenSSL

/// HMAC-SHA256 and a constant-time comparison through OpenSSL, for what the host signs outside
/// STUN (join tokens: JWS HS256, RFC 7518 §3.2).
public enum MessageAuthentication {
    /// HMAC-SHA256(key, message): 32 bytes, or nil if OpenSSL fails.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: STUNHMAC.maximumLength)
        let succeeded = message.withUnsafeBufferPointer { data in
            output.withUnsafeMutableBufferPointer { out in
                guard let base = out.baseAddress else { return false }
                return STUNHMAC.compute(.sha256, key: key, data: data, into: base)
            }
        }
        return succeeded ? output : nil
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }
}
