import SDP
import Transport
import Wire

/// Why an offer could not be answered, in the contract's terms (docs/api.md: 400 for unreadable SDP
/// and for no usable codec).
public struct OfferRejection: Error, Sendable, CustomStringConvertible {
    public let error: String
    public let detail: String
    /// 400 for an offer that cannot be used; 409 for one that conflicts with the session.
    public var status = 400
    public var description: String { "\(error): \(detail)" }
    public var response: HTTPResponse { .error(status, error, detail: detail) }
}

/// An offer turned into the host's answer, with what the transport needs to start.
struct AcceptedOffer: Sendable {
    let negotiated: NegotiatedSession
    let localICE: ICECredentials
    let remoteICE: ICECredentials
    let remoteFingerprints: [CertificateFingerprint]

    /// Which of an offer's sections the host sends on.
    enum SendingRule {
        /// Every audio and video section (the echo).
        case everySection
        /// The first live audio and the first live video section: a composite viewer's mix and composite.
        case firstOfEachKind
        /// The first live audio section (the mix) and every live video section: a participant's
        /// composite on the first, subscriptions on the others.
        case firstAudioEveryVideo
        /// Every live video section, no audio: a viewer of one participant's track.
        case everyVideo

        /// The mids the host sends on (it sends only where the peer receives). A section the
        /// offer disabled (port 0 without `a=bundle-only`, RFC 8843 §6) gets nothing.
        func mids(in offer: SessionDescription) -> [String] {
            var kinds: Set<String> = []
            return offer.media.compactMap { section in
                guard section.kind == .audio || section.kind == .video, section.port != 0 || section.hasAttribute("bundle-only"),
                      let mid = section.mid else { return nil }
                let first = kinds.insert(section.kind.name).inserted
                switch self {
                case .everySection: return mid
                case .firstOfEachKind: return first ? mid : nil
                case .firstAudioEveryVideo: return first || section.kind == .video ? mid : nil
                case .everyVideo: return section.kind == .video ? mid : nil
                }
            }
        }
    }

    /// What the host sends on the sections `rule` picks: a sender kept from `previous` for a mid
    /// it had, else a new SSRC (and an RTX SSRC for video, RFC 4588, announced only when the
    /// offer has RTX).
    private static func senders(for offer: SessionDescription, rule: SendingRule, previous: [String: HostSender] = [:],
                                using generator: inout some RandomNumberGenerator) -> [String: HostSender] {
        let cname = previous.values.first?.cname ?? "tessera-" + String(UInt32.random(in: 1...UInt32.max, using: &generator), radix: 36)
        let sending = Set(rule.mids(in: offer))
        var senders: [String: HostSender] = [:]
        for section in offer.media {
            guard let mid = section.mid, sending.contains(mid) else { continue }
            // A sender is kept for the same mid and kind (a stopped m-line reused keeps neither).
            senders[mid] = previous[mid].flatMap { $0.trackID == "\(section.kind.name)-\(mid)" ? $0 : nil } ?? HostSender(
                ssrc: UInt32.random(in: 1...UInt32.max, using: &generator),
                rtxSSRC: section.kind == .video ? UInt32.random(in: 1...UInt32.max, using: &generator) : nil,
                cname: cname, streamID: cname, trackID: "\(section.kind.name)-\(mid)")
        }
        return senders
    }

    /// Reads an offer and answers it, sending on the sections `rule` picks (each gets its own SSRC).
    init(offer body: [UInt8], host: MediaHost, feedback: [RTCPFeedback], headerExtensions: [String] = AcceptedOffer.headerExtensions,
         sending rule: SendingRule) throws(OfferRejection) {
        let offer: SessionDescription
        do { offer = try SessionDescription(parsing: body) } catch {
            throw OfferRejection(error: "unreadable SDP", detail: error.description)
        }
        var generator = SystemRandomNumberGenerator()
        let localICE = ICECredentials.random(using: &generator)
        let senders = Self.senders(for: offer, rule: rule, using: &generator)
        let parameters = HostParameters(
            iceUsernameFragment: localICE.ufrag, icePassword: localICE.password,
            fingerprintSHA256: host.certificate.fingerprint.sdpValue, candidateAddresses: host.candidateAddresses,
            feedback: feedback, headerExtensionURIs: headerExtensions, senders: senders,
            sessionID: UInt64.random(in: 1...UInt64(Int64.max), using: &generator),
            receivesSimulcast: rule != .everySection)  // the echo sends back on one SSRC
        let negotiated: NegotiatedSession
        do { negotiated = try negotiate(offer: offer, host: parameters) } catch {
            let unusable: Set<SDPError.Kind> = [.noUsableCodec, .noUsableMedia]
            throw OfferRejection(error: unusable.contains(error.kind) ? "no usable codec" : "unusable offer", detail: error.description)
        }
        let fingerprints = Self.fingerprints(of: negotiated)
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

    /// A renegotiation (`PATCH …/participants/{pid}` with an SDP offer) of a session answered
    /// before, under the same DTLS certificate, answered with the same session id (its version
    /// one up). Its m-lines are the session's, in order (RFC 8829 §5.2.2): it may add m-lines at
    /// the end, stop one (port 0), or reuse a stopped one for a new mid, never drop or change a
    /// live one. The host's streams on the sections that stay keep their SSRCs. New ICE
    /// credentials in the offer are an ICE restart (RFC 8445 §9): the host answers with new ones too.
    init(reoffer body: [UInt8], previous: AcceptedOffer, host: MediaHost, feedback: [RTCPFeedback]) throws(OfferRejection) {
        let offer: SessionDescription
        do { offer = try SessionDescription(parsing: body) } catch {
            throw OfferRejection(error: "unreadable SDP", detail: error.description)
        }
        let before = previous.negotiated.answer.media
        guard offer.media.count >= before.count else {
            throw OfferRejection(error: "m-lines removed", detail: "the session has \(before.count) m-lines and the offer \(offer.media.count): an offer keeps every m-line (RFC 8829 §5.2.2); stop one with port 0 instead", status: 409)
        }
        for (index, (old, new)) in zip(before, offer.media).enumerated() where old.port != 0 {
            guard new.mid == old.mid, new.kind == old.kind else {
                throw OfferRejection(error: "m-lines changed", detail: "m-line \(index) is \(old.kind.name) mid \(old.mid ?? "-") in the session and \(new.kind.name.prefix(16)) mid \((new.mid ?? "-").prefix(64)) in the offer: a live m-line keeps its place, kind and mid (RFC 8829 §5.2.2)", status: 409)
            }
        }
        var generator = SystemRandomNumberGenerator()
        let previousSenders = Dictionary(previous.negotiated.media.compactMap { media in media.hostSender.map { (media.mid, $0) } },
                                         uniquingKeysWith: { first, _ in first })
        let senders = Self.senders(for: offer, rule: .firstAudioEveryVideo, previous: previousSenders, using: &generator)
        let sessionID = UInt64(previous.negotiated.answer.origin.sessionID) ?? 1
        let version = (UInt64(previous.negotiated.answer.origin.sessionVersion) ?? 1) &+ 1
        func answer(localICE: ICECredentials) throws(OfferRejection) -> NegotiatedSession {
            let parameters = HostParameters(
                iceUsernameFragment: localICE.ufrag, icePassword: localICE.password,
                fingerprintSHA256: host.certificate.fingerprint.sdpValue, candidateAddresses: host.candidateAddresses,
                feedback: feedback, headerExtensionURIs: Self.headerExtensions, senders: senders,
                sessionID: sessionID, sessionVersion: version)
            do { return try negotiate(offer: offer, host: parameters) } catch {
                throw OfferRejection(error: "unusable offer", detail: error.description)
            }
        }
        var negotiated = try answer(localICE: previous.localICE)
        var localICE = previous.localICE
        if negotiated.peerTransport.iceUsernameFragment != previous.remoteICE.ufrag
            || negotiated.peerTransport.icePassword != previous.remoteICE.password {
            localICE = ICECredentials.random()
            negotiated = try answer(localICE: localICE)
        }
        let fingerprints = Self.fingerprints(of: negotiated)
        guard Set(fingerprints.map(\.sdpValue)) == Set(previous.remoteFingerprints.map(\.sdpValue)) else {
            throw OfferRejection(error: "certificate changed", detail: "a new DTLS certificate needs a new session: leave and join again", status: 409)
        }
        self.negotiated = negotiated
        self.localICE = localICE
        self.remoteICE = ICECredentials(ufrag: negotiated.peerTransport.iceUsernameFragment, password: negotiated.peerTransport.icePassword)
        self.remoteFingerprints = fingerprints
    }

    /// The peer's certificate fingerprints (RFC 8122) from its offer.
    private static func fingerprints(of negotiated: NegotiatedSession) -> [CertificateFingerprint] {
        negotiated.peerTransport.fingerprints.map { CertificateFingerprint(algorithm: $0.hashFunction, digest: $0.bytes) }
    }

    /// Whether this answer restarted ICE against `previous`.
    func restartsICE(from previous: AcceptedOffer) -> Bool { localICE != previous.localICE }

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
