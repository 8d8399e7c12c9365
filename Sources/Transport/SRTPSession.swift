private import CSRTP
private import CSRTPCrypto
#if canImport(Glibc)
import Glibc
#endif

/// The SRTP protection profiles the host negotiates in DTLS use_srtp (RFC 5764 §4.1.2), most
/// preferred first: AEAD GCM (RFC 7714) is about 1.8 times cheaper here than AES-CM with HMAC-SHA1
/// (both on OpenSSL: docs/architecture.md, "SRTP's crypto").
public enum SRTPProfile: Sendable, Hashable, CaseIterable {
    case aeadAES128GCM
    case aes128CMHMACSHA1_80

    /// The name OpenSSL's `SSL_CTX_set_tlsext_use_srtp` takes and reports.
    public var opensslName: String {
        switch self {
        case .aeadAES128GCM: "SRTP_AEAD_AES_128_GCM"
        case .aes128CMHMACSHA1_80: "SRTP_AES128_CM_SHA1_80"
        }
    }

    public init?(opensslName: String) {
        guard let profile = Self.allCases.first(where: { $0.opensslName == opensslName }) else { return nil }
        self = profile
    }

    /// Master key length in bytes (RFC 5764 §4.2 key material layout).
    public var masterKeyLength: Int { 16 }
    /// Master salt length in bytes: 12 for GCM (RFC 7714 §12), 14 for AES-CM (RFC 3711 §8.2).
    public var masterSaltLength: Int {
        switch self {
        case .aeadAES128GCM: 12
        case .aes128CMHMACSHA1_80: 14
        }
    }

    /// Authentication tag length in bytes: 16 for GCM (RFC 7714 §7.2), 10 for HMAC-SHA1-80
    /// (RFC 3711 §5.2).
    public var tagLength: Int {
        switch self {
        case .aeadAES128GCM: 16
        case .aes128CMHMACSHA1_80: 10
        }
    }

    fileprivate var libsrtpProfile: srtp_profile_t {
        switch self {
        case .aeadAES128GCM: srtp_profile_aead_aes_128_gcm
        case .aes128CMHMACSHA1_80: srtp_profile_aes128_cm_sha1_80
        }
    }
}

/// Why SRTP refused a packet or a key.
public enum SRTPError: Error, Equatable, Sendable {
    /// The authentication tag did not verify (RFC 3711 §3.3 step 5, RFC 7714 §9.3).
    case authenticationFailed
    /// The packet index was seen before or is too old for the replay window (RFC 3711 §3.3.2).
    case replayed
    /// Too short to be an SRTP or SRTCP packet.
    case malformed
    case badKeyLength(expected: Int, got: Int)
    case library(code: Int32)
}

/// One direction of SRTP and SRTCP for one peer, keyed from DTLS (RFC 5764 §4.2). Outbound
/// contexts protect, inbound ones unprotect with replay protection on. Not thread-safe: it lives
/// on the thread of the room that owns the peer.
public final class SRTPSession {
    public enum Direction: Sendable { case inbound, outbound }

    public let profile: SRTPProfile
    public let direction: Direction
    private let session: srtp_t

    /// `masterKeyAndSalt` is the key followed by the salt, as exported for one side.
    public init(profile: SRTPProfile, direction: Direction, masterKeyAndSalt: [UInt8], replayWindow: Int = 1024) throws(SRTPError) {
        let expected = profile.masterKeyLength + profile.masterSaltLength
        guard masterKeyAndSalt.count == expected else { throw .badKeyLength(expected: expected, got: masterKeyAndSalt.count) }
        SRTPLibrary.initializeOnce()
        var policy = srtp_policy_t()
        srtp_crypto_policy_set_from_profile_for_rtp(&policy.rtp, profile.libsrtpProfile)
        srtp_crypto_policy_set_from_profile_for_rtcp(&policy.rtcp, profile.libsrtpProfile)
        policy.ssrc.type = direction == .inbound ? ssrc_any_inbound : ssrc_any_outbound
        policy.window_size = UInt(replayWindow)
        // A NACKed packet resent as itself (no RTX negotiated) repeats its index.
        policy.allow_repeat_tx = direction == .outbound ? 1 : 0
        var key = masterKeyAndSalt
        var created: srtp_t?
        let status = key.withUnsafeMutableBufferPointer { keyBuffer in
            policy.key = keyBuffer.baseAddress
            return srtp_create(&created, &policy)
        }
        guard status == srtp_err_status_ok, let created else { throw .library(code: Int32(status.rawValue)) }
        self.profile = profile
        self.direction = direction
        self.session = created
    }

    deinit { srtp_dealloc(session) }

    /// Protects `packet` in place when the caller hands over its only reference and its storage
    /// has room for the tag (`RTPPacket.serialized` keeps it): no copy, no allocation.
    public func protectRTP(_ packet: consuming [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, grow: true) { srtp_protect($0, $1, $2) }
    }

    public func unprotectRTP(_ packet: consuming [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, grow: false) { srtp_unprotect($0, $1, $2) }
    }

    public func protectRTCP(_ packet: consuming [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, grow: true) { srtp_protect_rtcp($0, $1, $2) }
    }

    public func unprotectRTCP(_ packet: consuming [UInt8]) throws(SRTPError) -> [UInt8] {
        try transform(packet, grow: false) { srtp_unprotect_rtcp($0, $1, $2) }
    }

    /// Runs one libsrtp call in place on `packet` (copied first only when another reference to
    /// its storage remains), with room for the trailer when protecting: the tag, and SRTCP's
    /// E flag and index (RFC 3711 §3.4). No MKI is used, so nothing more is written.
    private func transform(_ packet: consuming [UInt8], grow: Bool,
                           _ call: (srtp_t, UnsafeMutableRawPointer, UnsafeMutablePointer<Int32>) -> srtp_err_status_t) throws(SRTPError) -> [UInt8] {
        var buffer = packet
        // RTP's fixed header is 12 bytes; SRTCP's smallest is 8 + the index and a tag.
        guard buffer.count >= 8, buffer.count <= 65_535 else { throw .malformed }
        var length = Int32(buffer.count)
        if grow { buffer.append(contentsOf: repeatElement(0, count: profile.tagLength + 4)) }
        let status = buffer.withUnsafeMutableBytes { raw -> srtp_err_status_t in
            guard let base = raw.baseAddress else { return srtp_err_status_bad_param }
            return call(session, base, &length)
        }
        switch status {
        case srtp_err_status_ok:
            buffer.removeLast(buffer.count - Int(max(0, min(Int32(buffer.count), length))))
            return buffer
        case srtp_err_status_auth_fail: throw .authenticationFailed
        case srtp_err_status_replay_fail, srtp_err_status_replay_old: throw .replayed
        case srtp_err_status_bad_param, srtp_err_status_parse_err: throw .malformed
        default: throw .library(code: Int32(status.rawValue))
        }
    }
}

/// What does SRTP's AES-CM, AES-GCM and HMAC-SHA1 in this process. libsrtp2 does SRTP either way;
/// by default its cipher and auth types are replaced at start-up by ones on OpenSSL's EVP (the
/// CSRTPCrypto target), which keep their keyed contexts per session: Debian's libsrtp2 does them on
/// NSS, which sets up a context per packet.
public enum SRTPCrypto: Equatable, Sendable {
    /// OpenSSL's EVP, installed into libsrtp2 (the default).
    case openssl
    /// libsrtp2's own, because the environment has `TESSERA_SRTP_CRYPTO=libsrtp` (to compare the
    /// two on one build: `TESSERA_SRTP_CRYPTO=libsrtp tessera bench srtp`).
    case libsrtp
    /// libsrtp2's own for what was not yet replaced when installing the OpenSSL types failed with
    /// this libsrtp status (a self-test failed, or OpenSSL lacks an algorithm).
    case libsrtpAfterFailure(status: Int32)

    /// The environment variable that chooses, and the value of it that keeps libsrtp2's own.
    public static let environmentVariable = "TESSERA_SRTP_CRYPTO"
    public static let libsrtpValue = "libsrtp"

    /// For `tessera version` and logs.
    public var summary: String {
        switch self {
        case .openssl: "AES-CM, AES-GCM and HMAC-SHA1 on OpenSSL EVP"
        case .libsrtp: "libsrtp2's own (\(Self.environmentVariable)=\(Self.libsrtpValue))"
        case .libsrtpAfterFailure(let status): "libsrtp2's own (installing OpenSSL's failed: libsrtp status \(status))"
        }
    }
}

extension SRTPSession {
    /// Which crypto SRTP uses in this process (initializing libsrtp2 if nothing has yet).
    public static var crypto: SRTPCrypto { SRTPLibrary.crypto }
}

/// libsrtp2 must be initialized once per process before any session is made, and its crypto
/// replaced right after, before any session exists.
enum SRTPLibrary {
    /// (When srtp_init fails, srtp_create fails too: every session reports it.)
    private static let initialized: SRTPCrypto = {
        let status = srtp_init()
        guard status == srtp_err_status_ok else { return .libsrtpAfterFailure(status: Int32(status.rawValue)) }
        if let chosen = getenv(SRTPCrypto.environmentVariable), String(cString: chosen) == SRTPCrypto.libsrtpValue {
            return .libsrtp
        }
        let replaced = tessera_srtp_use_openssl()
        return replaced == 0 ? .openssl : .libsrtpAfterFailure(status: replaced)
    }()
    static func initializeOnce() { _ = initialized }
    static var crypto: SRTPCrypto { initialized }
}
