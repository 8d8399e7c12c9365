private import COpenSSL
import Wire

/// The SRTP keys one DTLS handshake exported (RFC 5764 §4.2): what this side protects with and
/// what it unprotects the peer's packets with.
public struct SRTPKeyingMaterial: Sendable, Equatable {
    public let profile: SRTPProfile
    /// Master key followed by master salt, for `SRTPSession(direction: .outbound)`.
    public let localMasterKeyAndSalt: [UInt8]
    /// Master key followed by master salt, for `SRTPSession(direction: .inbound)`.
    public let remoteMasterKeyAndSalt: [UInt8]
}

/// An SSL_CTX for one certificate, shared by every peer's DTLS transport.
public final class DTLSContext: @unchecked Sendable {
    public let certificate: DTLSCertificate
    public let profiles: [SRTPProfile]
    // SSL_CTX is safe to share for SSL_new once configured; nothing changes it after init.
    let context: OpaquePointer

    /// ECDHE suites with ECDSA (our certificate, aiortc's, Chromium's) and RSA (GStreamer's
    /// certificate is RSA, so the client role must offer those as well).
    private static let cipherList = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        + "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:"
        + "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA"

    public init(certificate: DTLSCertificate, profiles: [SRTPProfile] = [.aeadAES128GCM, .aes128CMHMACSHA1_80]) throws(DTLSError) {
        // libsrtp's start-up runs self-tests (tens of milliseconds): do it here, at host start,
        // not on the media loop in the middle of the first peer's handshake.
        SRTPLibrary.initializeOnce()
        guard let context = SSL_CTX_new(DTLS_method()) else { throw .fromQueue("SSL_CTX_new") }
        self.certificate = certificate
        self.profiles = profiles
        self.context = context
        let profileList = profiles.map(\.opensslName).joined(separator: ":")
        guard tessera_SSL_CTX_set_min_proto_version(context, DTLS1_2_VERSION) == 1,
              SSL_CTX_use_certificate(context, certificate.x509) == 1,
              SSL_CTX_use_PrivateKey(context, certificate.key) == 1,
              SSL_CTX_check_private_key(context) == 1,
              SSL_CTX_set_cipher_list(context, Self.cipherList) == 1,
              tessera_SSL_CTX_set1_groups_list(context, "X25519:P-256:P-384") == 1,
              SSL_CTX_set_tlsext_use_srtp(context, profileList) == 0  // 0 is success here
        else { throw .fromQueue("DTLS context setup") }
        // Peers present self-signed certificates: no CA decides, the fingerprint in the SDP does
        // (RFC 8827 §6.5), checked by each transport's verify callback. Asking for the
        // certificate makes the server send CertificateRequest, which WebRTC requires.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        tessera_SSL_CTX_set_read_ahead(context, 1)
    }

    deinit { SSL_CTX_free(context) }
}

/// One peer's DTLS 1.2 association, sans-IO: datagrams and the time come in as arguments,
/// datagrams to send come out of `pollTransmit()`, and `nextTimeout()` says when to call
/// `handleTimeout(now:)`. OpenSSL writes into a BIO of ours that keeps each record flight as its
/// own datagram, and reads from a memory BIO the caller fills.
///
/// OpenSSL keeps its own clock for retransmission (RFC 6347 §4.2.4): the deadline reported here is
/// derived from `DTLSv1_get_timeout`, so the shell's real clock and OpenSSL's agree.
public final class DTLSTransport {
    public enum Role: Sendable { case server, client }
    public enum State: Sendable, Equatable {
        case handshaking
        case connected(SRTPKeyingMaterial)
        case failed(DTLSError)
    }

    public let role: Role
    public private(set) var state: State = .handshaking
    /// Datagrams that were not DTLS records we could use (counted, then dropped): empty or
    /// oversized, or after the handshake records other than alerts and handshake ones.
    public private(set) var droppedDatagrams = 0

    private let context: DTLSContext
    private let remoteFingerprints: [CertificateFingerprint]
    private let ssl: OpaquePointer
    private let incoming: OpaquePointer  // memory BIO that OpenSSL reads from
    fileprivate var outgoing = FIFOQueue<[UInt8]>()
    private let handshakeDeadline: Instant
    private var started = false

    /// `remoteFingerprints` come from the peer's SDP; the handshake fails unless its certificate
    /// matches one of them. `handshakeTimeout` bounds the whole handshake.
    /// The first retransmission interval; it doubles up to 8 s (RFC 6347 §4.2.4.1).
    public let initialRetransmitInterval: Duration

    public init(context: DTLSContext, role: Role, remoteFingerprints: [CertificateFingerprint], now: Instant,
                mtu: Int = 1200, handshakeTimeout: Duration = .seconds(30),
                initialRetransmitInterval: Duration = .milliseconds(400)) throws(DTLSError) {
        guard let ssl = SSL_new(context.context) else { throw .fromQueue("SSL_new") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoingBIO = BIO_new(DatagramOutBIO.method) else {
            SSL_free(ssl)
            throw .fromQueue("BIO_new")
        }
        tessera_BIO_set_mem_eof_return(incoming, -1)  // empty means "try again", not EOF
        self.context = context
        self.role = role
        self.remoteFingerprints = remoteFingerprints
        self.ssl = ssl
        self.incoming = incoming
        self.handshakeDeadline = now + handshakeTimeout
        self.initialRetransmitInterval = initialRetransmitInterval
        // OpenSSL holds unretained pointers to self in the BIO and the SSL; the SSL dies with self.
        BIO_set_data(outgoingBIO, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_bio(ssl, incoming, outgoingBIO)  // the SSL owns both BIOs from here
        _ = tessera_SSL_set_options(ssl, tessera_SSL_OP_NO_QUERY_MTU())
        _ = tessera_DTLS_set_link_mtu(ssl, mtu)
        DTLS_set_timer_cb(ssl, retransmitInterval)
        SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verifyPeerCertificate)
        switch role {
        case .server: SSL_set_accept_state(ssl)
        case .client: SSL_set_connect_state(ssl)
        }
    }

    deinit { SSL_free(ssl) }

    /// The client sends its ClientHello; the server waits for one. Call once.
    public func start(now: Instant) {
        guard !started else { return }
        started = true
        if role == .client { advanceHandshake(now: now) }
    }

    /// Feeds one received DTLS datagram (first byte 20...63 per RFC 7983).
    public func handleDatagram(_ datagram: [UInt8], now: Instant) {
        started = true
        guard !datagram.isEmpty, datagram.count <= 65_535 else { droppedDatagrams += 1; return }
        _ = datagram.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        switch state {
        case .handshaking: advanceHandshake(now: now)
        case .connected:
            // Once connected the host takes nothing over DTLS but alerts (a close) and handshake
            // records (the peer's last flight again, which OpenSSL answers with ours, a datagram
            // at a time): records of any other content type (application data: there are no data
            // channels; or none TLS knows) are dropped unread, and counted.
            let queued = outgoing.count
            drainAfterHandshake()
            if case .connected = state, outgoing.count == queued, !(20...22).contains(datagram[0]) { droppedDatagrams += 1 }
        case .failed: _ = tessera_BIO_reset(incoming)
        }
    }

    /// Retransmits a lost flight, or fails the handshake when its deadline has passed.
    public func handleTimeout(now: Instant) {
        guard case .handshaking = state, started else { return }
        if now >= handshakeDeadline {
            state = .failed(.handshakeTimedOut)
            return
        }
        if tessera_DTLSv1_handle_timeout(ssl) < 0 { fail(.fromQueue("DTLS retransmission")) }
    }

    /// When `handleTimeout(now:)` is next due, if anything is pending.
    public func nextTimeout(now: Instant) -> Instant? {
        guard case .handshaking = state, started else { return nil }
        var remaining = timeval()
        guard tessera_DTLSv1_get_timeout(ssl, &remaining) == 1 else { return handshakeDeadline }
        let retransmit = now + .seconds(Int64(remaining.tv_sec)) + .microseconds(Int64(remaining.tv_usec))
        return min(retransmit, handshakeDeadline)
    }

    /// The next datagram to send to the peer, oldest first.
    public func pollTransmit() -> [UInt8]? {
        outgoing.popFirst()
    }

    private func advanceHandshake(now: Instant) {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            completeHandshake()
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            ERR_clear_error()
        case SSL_ERROR_ZERO_RETURN:
            state = .failed(.closedByPeer)
        default:
            fail(refusedCertificate ? .fingerprintMismatch : .fromQueue("DTLS handshake"))
        }
    }

    /// Whether `certificate` is the one the peer's SDP named (RFC 8122 §5: any listed fingerprint).
    fileprivate func matchesRemoteFingerprint(_ certificate: OpaquePointer) -> Bool {
        remoteFingerprints.contains { expected in
            DTLSCertificate.fingerprint(of: certificate, algorithm: expected.algorithm) == expected
        }
    }

    /// Set when the verify callback refused the peer's certificate, so the failure says why.
    fileprivate var refusedCertificate = false

    private func completeHandshake() {
        // The verify callback already checked; checking the certificate the session ended up
        // with as well costs one digest per handshake.
        guard let peer = SSL_get1_peer_certificate(ssl) else { return fail(.fingerprintMismatch) }
        defer { X509_free(peer) }
        guard matchesRemoteFingerprint(peer) else { return fail(.fingerprintMismatch) }
        guard let selected = SSL_get_selected_srtp_profile(ssl), let name = selected.pointee.name,
              let profile = SRTPProfile(opensslName: String(cString: name)) else { return fail(.noSRTPProfile) }

        // RFC 5764 §4.2: client key, server key, client salt, server salt.
        let keyLength = profile.masterKeyLength, saltLength = profile.masterSaltLength
        var material = [UInt8](repeating: 0, count: 2 * (keyLength + saltLength))
        let label = "EXTRACTOR-dtls_srtp"
        guard SSL_export_keying_material(ssl, &material, material.count, label, label.utf8.count, nil, 0, 0) == 1 else {
            return fail(.fromQueue("SSL_export_keying_material"))
        }
        let clientKey = material[0..<keyLength], serverKey = material[keyLength..<2 * keyLength]
        let clientSalt = material[2 * keyLength..<2 * keyLength + saltLength]
        let serverSalt = material[(2 * keyLength + saltLength)...]
        let client = Array(clientKey + clientSalt), server = Array(serverKey + serverSalt)
        state = .connected(SRTPKeyingMaterial(
            profile: profile,
            localMasterKeyAndSalt: role == .client ? client : server,
            remoteMasterKeyAndSalt: role == .client ? server : client))
    }

    /// After the handshake the peer may still retransmit its last flight (ours was lost);
    /// reading lets OpenSSL answer it. WebRTC media carries no DTLS application data here.
    private func drainAfterHandshake() {
        var scratch = [UInt8](repeating: 0, count: 2048)
        while true {
            let read = SSL_read(ssl, &scratch, Int32(scratch.count))
            if read > 0 { continue }
            if SSL_get_error(ssl, read) == SSL_ERROR_ZERO_RETURN { state = .failed(.closedByPeer) }
            ERR_clear_error()
            return
        }
    }

    private func fail(_ error: DTLSError) {
        state = .failed(error)
        ERR_clear_error()
    }
}

/// Checks the peer's certificate during the handshake, so a peer whose certificate is not the
/// one in its SDP gets an alert instead of a finished handshake (the server's Finished comes
/// last in DTLS 1.2, so a check after it would leave the client believing it was connected).
private let verifyPeerCertificate: @convention(c) (Int32, OpaquePointer?) -> Int32 = { _, store in
    guard let store, X509_STORE_CTX_get_error_depth(store) == 0,  // the peer's own certificate, not a chain
          let certificate = X509_STORE_CTX_get_current_cert(store) else { return 1 }
    guard let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
          let owner = SSL_get_ex_data(OpaquePointer(ssl), 0) else { return 0 }
    let transport = Unmanaged<DTLSTransport>.fromOpaque(owner).takeUnretainedValue()
    guard transport.matchesRemoteFingerprint(certificate) else {
        transport.refusedCertificate = true
        X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)  // the alert says bad_certificate
        return 0
    }
    return 1
}

/// RFC 6347 §4.2.4.1: start at a short interval and double; OpenSSL passes the last interval.
/// 400 ms first by default (loopback and LAN answer well within it), at most 8 s between tries.
private let retransmitInterval: DTLS_timer_cb = { ssl, previousMicroseconds in
    guard previousMicroseconds == 0 else { return min(previousMicroseconds * 2, 8_000_000) }
    guard let owner = SSL_get_ex_data(ssl, 0) else { return 400_000 }
    let transport = Unmanaged<DTLSTransport>.fromOpaque(owner).takeUnretainedValue()
    return UInt32(clamping: max(1_000, transport.initialRetransmitInterval.nanosecondsClamped / 1_000))
}

/// A write-only BIO that turns each write OpenSSL makes into one datagram in the transport's
/// outbox (a memory BIO would run records of a flight together).
private enum DatagramOutBIO {
    // Made once and never changed; OpenSSL only reads a BIO_METHOD.
    nonisolated(unsafe) static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tessera DTLS datagrams") else { return nil }
        BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length > 0, let owner = BIO_get_data(bio) else { return 0 }
            let transport = Unmanaged<DTLSTransport>.fromOpaque(owner).takeUnretainedValue()
            data.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                transport.outgoing.append(Array(UnsafeBufferPointer(start: $0, count: Int(length))))
            }
            return length
        }
        BIO_meth_set_ctrl(method) { _, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: 1
            case BIO_CTRL_DGRAM_QUERY_MTU, BIO_CTRL_WPENDING, BIO_CTRL_PENDING: 0
            default: 0
            }
        }
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        return method
    }()
}
