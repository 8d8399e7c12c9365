#if canImport(Glibc)
import Glibc
#endif
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

/// A self-signed certificate and its private key: the host's DTLS identity, made when it starts
/// (WebRTC peers authenticate each other by the fingerprint in SDP, not by a CA), or a TLS
/// server certificate for trials on a LAN (`tessera cert`).
public final class DTLSCertificate: @unchecked Sendable {
    public enum KeyType: Sendable { case ecdsaP256, rsa2048 }

    // Immutable after init; OpenSSL allows concurrent reads of a key and a certificate.
    let key: OpaquePointer
    let x509: OpaquePointer
    /// The sha-256 fingerprint the host announces in its SDP.
    public let fingerprint: CertificateFingerprint

    /// Makes a fresh key pair and a certificate valid from a day ago for `validityDays`.
    /// `serverNames` (DNS names or IP addresses) make it a TLS server certificate for them
    /// (subjectAltName, extendedKeyUsage serverAuth), as browsers require.
    public init(keyType: KeyType = .ecdsaP256, commonName: String = "tessera", validityDays: Int = 30,
                serverNames: [String] = []) throws(DTLSError) {
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
            && Self.addServerExtensions(x509, names: serverNames)
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

    /// The private key in PEM (PKCS #8, unencrypted), for `tessera cert`.
    public var privateKeyPEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { return "" }
        var data: UnsafeMutablePointer<CChar>?
        let length = tessera_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    private static func addServerExtensions(_ x509: OpaquePointer, names: [String]) -> Bool {
        guard !names.isEmpty else { return true }
        let alternatives = names.map { isIPAddress($0) ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
        return tessera_X509_add_ext_text(x509, NID_subject_alt_name, alternatives) == 1
            && tessera_X509_add_ext_text(x509, NID_basic_constraints, "critical,CA:FALSE") == 1
            && tessera_X509_add_ext_text(x509, NID_key_usage, "critical,digitalSignature") == 1
            && tessera_X509_add_ext_text(x509, NID_ext_key_usage, "serverAuth") == 1
    }

    private static func setName(_ x509: OpaquePointer, commonName: String) -> Bool {
        guard let name = X509_get_subject_name(x509) else { return false }
        let bytes = Array(commonName.utf8)
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else { return false }
        return X509_set_issuer_name(x509, name) == 1
    }

    /// Why a PEM certificate and key cannot serve TLS together, or nil when they can: each must
    /// parse, and the key must be the certificate's. An encrypted key is refused (the host has
    /// no one to ask for its pass phrase).
    public static func problem(certificatePEM: String, keyPEM: String) -> String? {
        guard let certificate = readPEM(certificatePEM, { PEM_read_bio_X509($0, nil, nil, nil) }) else {
            return "the certificate is not a PEM certificate"
        }
        defer { X509_free(certificate) }
        guard let key = readPEM(keyPEM, { PEM_read_bio_PrivateKey($0, nil, { _, _, _, _ in 0 }, nil) }) else {
            return "the key is not an unencrypted PEM private key"
        }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(certificate, key) == 1 else { return "the key is not the certificate's" }
        return nil
    }

    private static func readPEM(_ text: String, _ read: (OpaquePointer) -> OpaquePointer?) -> OpaquePointer? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress, let bio = BIO_new_mem_buf(base, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
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
