import SDP
import Transport
import Wire

/// Why an offer could not be answered, in the contract's terms (docs/api.md: 400 for unreadable SDP
/// and for no usable codec).
public struct OfferRejection: Error, Sendable, CustomStringConvertible {
    public let error: String
    public let detail: String
    public var description: String { "\(error): \(detail)" }
    public var response: HTTPResponse { .error(400, error, detail: detail) }
}

/// An offer turned into the host's answer, with what the transport needs to start.
struct AcceptedOffer: Sendable {
    let negotiated: NegotiatedSession
    let localICE: ICECredentials
    let remoteICE: ICECredentials
    let remoteFingerprints: [CertificateFingerprint]

    /// Reads an offer and answers it. `sends(kind)` says whether the host sends media of that kind
    /// on the sections of that kind (each gets its own SSRC).
    init(offer body: [UInt8], host: MediaHost, feedback: [RTCPFeedback], headerExtensions: [String] = AcceptedOffer.headerExtensions,
         sends: (MediaKind) -> Bool) throws(OfferRejection) {
        let offer: SessionDescription
        do { offer = try SessionDescription(parsing: body) } catch {
            throw OfferRejection(error: "unreadable SDP", detail: error.description)
        }
        var generator = SystemRandomNumberGenerator()
        let localICE = ICECredentials.random(using: &generator)
        let cname = "tessera-" + String(UInt32.random(in: 1...UInt32.max, using: &generator), radix: 36)
        var senders: [String: HostSender] = [:]
        for section in offer.media where sends(section.kind) {
            guard let mid = section.mid else { continue }
            // Video gets an RTX stream too (RFC 4588), announced only when the offer has RTX.
            senders[mid] = HostSender(ssrc: UInt32.random(in: 1...UInt32.max, using: &generator),
                                      rtxSSRC: section.kind == .video ? UInt32.random(in: 1...UInt32.max, using: &generator) : nil,
                                      cname: cname, streamID: cname, trackID: "\(section.kind.name)-\(mid)")
        }
        let parameters = HostParameters(
            iceUsernameFragment: localICE.ufrag, icePassword: localICE.password,
            fingerprintSHA256: host.certificate.fingerprint.sdpValue, candidateAddresses: host.candidateAddresses,
            feedback: feedback, headerExtensionURIs: headerExtensions, senders: senders,
            sessionID: UInt64.random(in: 1...UInt64(Int64.max), using: &generator))
        let negotiated: NegotiatedSession
        do { negotiated = try negotiate(offer: offer, host: parameters) } catch {
            let unusable: Set<SDPError.Kind> = [.noUsableCodec, .noUsableMedia]
            throw OfferRejection(error: unusable.contains(error.kind) ? "no usable codec" : "unusable offer", detail: error.description)
        }
        let fingerprints = negotiated.peerTransport.fingerprints.compactMap {
            CertificateFingerprint(algorithm: $0.hashFunction, digest: $0.bytes) as CertificateFingerprint?
        }
        guard !fingerprints.isEmpty else {
            throw OfferRejection(error: "unusable offer", detail: "the offer has no a=fingerprint (RFC 8122)")
        }
        self.negotiated = negotiated
        self.localICE = localICE
        self.remoteICE = ICECredentials(ufrag: negotiated.peerTransport.iceUsernameFragment,
                                        password: negotiated.peerTransport.icePassword)
        self.remoteFingerprints = fingerprints
    }

    /// Header extensions the host reads: mid for demux, the audio level for the active speaker,
    /// the orientation for rotation, and the transport-wide sequence number, answered with
    /// transport-cc feedback so that a browser's send-side estimator works for its camera.
    static let headerExtensions = [
        "urn:ietf:params:rtp-hdrext:sdes:mid",
        "urn:ietf:params:rtp-hdrext:ssrc-audio-level",
        "urn:3gpp:video-orientation",
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
    ]

    /// Feedback the host answers and sends: NACK, PLI, FIR, transport-cc (it sends feedback on
    /// what peers send), and goog-remb (peers' estimates of what the host sends them choose
    /// their composite encoding).
    static let feedback: [RTCPFeedback] = [
        RTCPFeedback(payloadType: nil, type: "nack"),
        RTCPFeedback(payloadType: nil, type: "nack", parameter: "pli"),
        RTCPFeedback(payloadType: nil, type: "ccm", parameter: "fir"),
        RTCPFeedback(payloadType: nil, type: "goog-remb"),
        RTCPFeedback(payloadType: nil, type: "transport-cc"),
    ]

    /// What the echo answers: repair only. It sends a peer its own packets back and estimates
    /// nothing, so it offers no transport-cc or REMB that the peer would wait on in vain.
    static let echoFeedback = feedback.filter { $0.type != "transport-cc" && $0.type != "goog-remb" }
    static let echoHeaderExtensions = headerExtensions.filter { !$0.contains("transport-wide-cc") }

    /// The peer's transport engine: lite ICE, DTLS in the role the answer took.
    func makeTransport(host: MediaHost, now: Instant) throws(DTLSError) -> PeerTransport {
        let dtls = try DTLSTransport(context: host.dtlsContext, role: negotiated.hostDTLSRole == .server ? .server : .client,
                                     remoteFingerprints: remoteFingerprints, now: now)
        return PeerTransport(ice: .lite(ICELiteAgent(local: localICE, remote: remoteICE)), dtls: dtls, now: now)
    }
}
