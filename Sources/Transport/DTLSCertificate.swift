private import COpenSSL

/// What went wrong in DTLS: certificate creation, the handshake, or the peer's identity.
public enum DTLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// OpenSSL refused an operation; `reason` is its error queue as text.
    case openssl(operation: String, reason: String)
    /// The peer's certificate does not match any fingerprint in its SDP (RFC 8122 §5).
    case fingerprintMismatch
    /// The peer negotiated no SRTP profile we offered (RFC 5764 §4.1.3).
    case noSRTPProfile
    /// The handshake did not complete in time.
    case handshakeTimedOut
    /// The peer sent a fatal alert or closed the association.
    case closedByPeer

    public var description: String {
        switch self {
        case .openssl(let operation, let reason): "\(operation) failed: \(reason)"
        case .fingerprintMismatch: "the peer's certificate does not match the fingerprint in its SDP"
        case .noSRTPProfile: "the peer negotiated no SRTP profile we offered"
        case .handshakeTimedOut: "the DTLS handshake did not complete in time"
        case .closedByPeer: "the peer closed the DTLS association"
        }
    }

    /// Drains OpenSSL's thread-local error queue into an error.
    static func fromQueue(_ operation: String) -> DTLSError {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return .openssl(operation: operation, reason: reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; "))
    }
}

/// A certificate fingerprint as SDP carries it (RFC 8122 §5): `a=fingerprint:sha-256 AB:CD:…`.
public struct CertificateFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The hash function's name as SDP writes it: `sha-1`, `sha-256`, `sha-384`, `sha-512`.
    public let algorithm: String
    public let digest: [UInt8]

    public init(algorithm: String, digest: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.digest = digest
    }

    /// Parses the attribute's two fields; nil when the hex is not `XX:XX:…`.
    public init?(algorithm: String, sdpValue: String) {
        var digest: [UInt8] = []
        for pair in sdpValue.split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else { return nil }
            digest.append(byte)
        }
        guard !digest.isEmpty, digest.count <= 64 else { return nil }
        self.init(algorithm: algorithm, digest: digest)
    }

    /// Upper-case hex pairs joined by colons, as RFC 8122 §5 writes them.
    public var sdpValue: String {
        digest.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    public var description: String { "\(algorithm) \(sdpValue)" }

    /// The OpenSSL digest for this algorithm, when it is one RFC 8122 allows.
    var evpDigest: OpaquePointer? { Self.evpDigest(for: algorithm) }

    static func evpDigest(for algorithm: String) -> OpaquePointer? {
        switch algorithm {
        case "sha-1": EVP_sha1()
        case "sha-224": EVP_sha224()
        case "sha-256": EVP_sha256()
        case "sha-384": EVP_sha384()
        case "sha-512": EVP_sha512()
        default: nil
        }
    }
}

/// A self-signed certificate and its private key, made when the host starts (WebRTC peers
/// authenticate each other by the fingerprint in SDP, not by a CA).
public final class DTLSCertificate: @unchecked Sendable {
    public enum KeyType: Sendable { case ecdsaP256, rsa2048 }

    // Immutable after init; OpenSSL allows concurrent reads of a key and a certificate.
    let key: OpaquePointer
    let x509: OpaquePointer
    /// The sha-256 fingerprint the host announces in its SDP.
    public let fingerprint: CertificateFingerprint

    /// Makes a fresh key pair and a certificate valid from a day ago for `validityDays`.
    public init(keyType: KeyType = .ecdsaP256, commonName: String = "tessera", validityDays: Int = 30) throws(DTLSError) {
        let generated: OpaquePointer? = switch keyType {
        case .ecdsaP256: tessera_EVP_EC_gen("P-256")
        case .rsa2048: tessera_EVP_RSA_gen(2048)
        }
        guard let key = generated else { throw .fromQueue("key generation") }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw .fromQueue("X509_new")
        }
        var serial = [UInt8](repeating: 0, count: 8)
        RAND_bytes(&serial, Int32(serial.count))
        let built = X509_set_version(x509, 2) == 1  // X.509 v3
            && ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial.withUnsafeBytes { $0.load(as: UInt64.self) } >> 1) == 1
            && X509_gmtime_adj(X509_getm_notBefore(x509), -86_400) != nil
            && X509_gmtime_adj(X509_getm_notAfter(x509), Int(validityDays) * 86_400) != nil
            && X509_set_pubkey(x509, key) == 1
            && Self.setName(x509, commonName: commonName)
            && X509_sign(x509, key, EVP_sha256()) > 0
        guard built, let fingerprint = Self.fingerprint(of: x509, algorithm: "sha-256") else {
            X509_free(x509)
            EVP_PKEY_free(key)
            throw .fromQueue("certificate creation")
        }
        self.key = key
        self.x509 = x509
        self.fingerprint = fingerprint
    }

    deinit {
        X509_free(x509)
        EVP_PKEY_free(key)
    }

    /// The certificate in PEM, for logs and for peers that want to pin it.
    public var pem: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        PEM_write_bio_X509(bio, x509)
        var data: UnsafeMutablePointer<CChar>?
        let length = tessera_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    private static func setName(_ x509: OpaquePointer, commonName: String) -> Bool {
        guard let name = X509_get_subject_name(x509) else { return false }
        let bytes = Array(commonName.utf8)
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else { return false }
        return X509_set_issuer_name(x509, name) == 1
    }

    /// The digest of a certificate's DER encoding (RFC 8122 §5).
    static func fingerprint(of x509: OpaquePointer, algorithm: String) -> CertificateFingerprint? {
        guard let evp = CertificateFingerprint.evpDigest(for: algorithm) else { return nil }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, evp, &digest, &length) == 1 else { return nil }
        return CertificateFingerprint(algorithm: algorithm, digest: Array(digest[..<Int(length)]))
    }
}
