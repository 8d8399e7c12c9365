// The host's answer to a WebRTC offer: JSEP answer rules (RFC 8829 §5.3), BUNDLE (RFC 8843),
// Unified Plan, ICE attributes (RFC 8839), DTLS roles (RFC 8842). A pure function: it reads the
// parsed offer and the host's parameters and returns the answer and what was agreed.
//
// The host is ICE-lite (RFC 8445 §2.5), requires BUNDLE when more than one section is used, and
// requires RTCP mux (RFC 8858): a usable section without `a=rtcp-mux` is rejected, and an offer
// left with nothing usable is refused with `rtcpMuxRequired`. An offer with several usable
// sections and no BUNDLE group is refused with `bundleRequired` (the host has one transport per
// peer); a section outside the offer's BUNDLE group is rejected with port 0.

/// The host's DTLS role, from the offer's `a=setup` (RFC 8842 §5.3).
public enum DTLSRole: Sendable, Equatable {
    /// The host answers `a=setup:passive` and waits for the peer's ClientHello.
    case server
    /// The peer offered `a=setup:passive`: the host answers `a=setup:active` and connects.
    case client
}

/// The offer's transport (the BUNDLE tagged section's, falling back to session level).
public struct OfferedTransport: Sendable, Equatable {
    /// The peer's `a=ice-ufrag`.
    public var iceUsernameFragment: String
    /// The peer's `a=ice-pwd`.
    public var icePassword: String
    /// The peer's `a=fingerprint` lines (aiortc offers sha-256, sha-384 and sha-512).
    public var fingerprints: [Fingerprint]
    /// The peer's `a=setup`; nil when absent (treated as actpass).
    public var setupRole: SetupRole?
    /// The peer's candidates in the tagged section, in order.
    public var candidates: [Candidate]
    /// Whether the peer said `a=end-of-candidates` there.
    public var endOfCandidates: Bool
    /// The peer's `a=ice-options` (e.g. `trickle`).
    public var iceOptions: [String]

    /// The fingerprint to check the peer's certificate with: sha-256 if offered, else the first.
    public var preferredFingerprint: Fingerprint? {
        fingerprints.first { $0.hashFunction.lowercased() == "sha-256" } ?? fingerprints.first
    }
}

/// The codec agreed on one m= line, with its RTX companion and feedback.
public struct NegotiatedCodec: Sendable, Equatable {
    /// The payload type, the offer's.
    public var payloadType: UInt8
    /// The encoding name as the offer wrote it.
    public var encodingName: String
    /// The RTP clock rate.
    public var clockRate: UInt32
    /// The channel count, if written.
    public var channels: UInt8?
    /// The RTX payload type (RFC 4588) whose `apt` is `payloadType`, when offered and accepted.
    public var rtxPayloadType: UInt8?
    /// The feedback both sides support, in the offer's order.
    public var feedback: [RTCPFeedback]
    /// The peer's `a=fmtp` parameters for the codec, if any.
    public var peerFormatParameters: String?
}

/// One accepted m= line: what the peer sends, what the host sends, how.
public struct NegotiatedMedia: Sendable, Equatable {
    /// The section's position in the offer (and the answer).
    public var index: Int
    /// The section's `a=mid`.
    public var mid: String
    /// audio or video.
    public var kind: MediaKind
    /// The direction the peer offered (from the peer's point of view).
    public var peerDirection: Direction
    /// The direction in the answer (from the host's point of view).
    public var hostDirection: Direction
    /// The agreed codec.
    public var codec: NegotiatedCodec
    /// The peer's media SSRCs (`a=ssrc`), without the RTX ones of `a=ssrc-group:FID`.
    public var peerSSRCs: [UInt32]
    /// The peer's RTX SSRC for each media SSRC (RFC 5576 §4.2, FID).
    public var peerRTXSSRCs: [UInt32: UInt32]
    /// The peer's CNAME from `a=ssrc:<n> cname:`.
    public var peerCNAME: String?
    /// The peer's `a=msid` (or the `msid` of its first `a=ssrc`).
    public var peerMSID: MSID?
    /// The header extensions agreed, with the offer's ids.
    public var headerExtensions: [ExtensionMap]
    /// Whether reduced-size RTCP (RFC 5506, `a=rtcp-rsize`) was agreed.
    public var reducedSizeRTCP: Bool
    /// What the host sends on this line, when `hostDirection` sends.
    public var hostSender: HostSender?
    /// The simulcast layers the peer sends here, by rid, in its `a=simulcast` order (RFC 8853),
    /// when the host took them; empty for one stream.
    public var peerRIDs: [String] = []

    /// The agreed id of header extension `uri`, if agreed.
    public func headerExtensionID(for uri: String) -> UInt16? {
        headerExtensions.first { $0.uri == uri }?.id
    }
}

/// Why an m= line was rejected (answered with port 0, RFC 3264 §6).
public enum RejectionReason: Sendable, Equatable {
    /// The offer itself disabled the line (port 0 without `a=bundle-only`).
    case disabledByOffer
    /// Not audio or video (for example a data channel).
    case unsupportedMedia
    /// Not DTLS-SRTP (`UDP/TLS/RTP/SAVPF`).
    case unsupportedTransport
    /// Not in the offer's BUNDLE group.
    case outsideBundle
    /// No codec in common.
    case noCommonCodec
    /// No `a=rtcp-mux`.
    case rtcpMuxMissing
}

/// One rejected m= line.
public struct RejectedMedia: Sendable, Equatable {
    /// The section's position in the offer.
    public var index: Int
    /// The section's `a=mid`.
    public var mid: String
    /// The section's media type.
    public var kind: MediaKind
    /// Why it was rejected.
    public var reason: RejectionReason

    /// A rejected line.
    public init(index: Int, mid: String, kind: MediaKind, reason: RejectionReason) {
        self.index = index
        self.mid = mid
        self.kind = kind
        self.reason = reason
    }
}

/// The outcome of `negotiate(offer:host:)`: the answer and a summary of the offer for the host.
public struct NegotiatedSession: Sendable, Equatable {
    /// The answer to send back.
    public var answer: SessionDescription
    /// The peer's ICE credentials, fingerprints, setup role and candidates.
    public var peerTransport: OfferedTransport
    /// The host's DTLS role.
    public var hostDTLSRole: DTLSRole
    /// The mids of the answer's BUNDLE group (empty when the offer had none).
    public var bundleMids: [String]
    /// The accepted lines, in offer order.
    public var media: [NegotiatedMedia]
    /// The rejected lines, in offer order.
    public var rejected: [RejectedMedia]
}

/// Builds the host's answer to `offer` (RFC 8829 §5.3.1 and §5.3.2): same mids in the same
/// order, offered payload types and extension ids, directions mirrored, unusable sections
/// rejected in place with port 0.
public func negotiate(offer: SessionDescription, host: HostParameters) throws(SDPError) -> NegotiatedSession {
    try AnswerBuilder(offer: offer, host: host).build()
}

/// One offered m= section's attributes, read in a single pass (the negotiation looks at each
/// many times).
struct OfferedSection {
    var mid: String?
    var direction: Direction?
    var rtpMaps: [RTPMap] = []
    var formatParameters: [FormatParameters] = []
    var feedback: [RTCPFeedback] = []
    var extensionMaps: [ExtensionMap] = []
    var ssrcAttributes: [SSRCAttribute] = []
    var ssrcGroups: [SSRCGroup] = []
    var msid: MSID?
    var rtcpMux = false
    var reducedSize = false
    var bundleOnly = false
    var endOfCandidates = false
    var iceUsernameFragment: String?
    var icePassword: String?
    var fingerprints: [Fingerprint] = []
    var setupRole: SetupRole?
    var candidates: [Candidate] = []
    var iceOptions: [String]?
    var rids: [RIDAttribute] = []
    var simulcast: SimulcastAttribute?

    init(_ attributes: [Attribute]) {
        for attribute in attributes {
            switch attribute.typed {
            case .mid(let value): if mid == nil { mid = value }
            case .direction(let value): if direction == nil { direction = value }
            case .rtpmap(let value): rtpMaps.append(value)
            case .fmtp(let value): formatParameters.append(value)
            case .rtcpFeedback(let value): feedback.append(value)
            case .extmap(let value): extensionMaps.append(value)
            case .ssrc(let value): ssrcAttributes.append(value)
            case .ssrcGroup(let value): ssrcGroups.append(value)
            case .msid(let value): if msid == nil { msid = value }
            case .setup(let value): if setupRole == nil { setupRole = value }
            case .iceUsernameFragment(let value): if iceUsernameFragment == nil { iceUsernameFragment = value }
            case .icePassword(let value): if icePassword == nil { icePassword = value }
            case .iceOptions(let value): if iceOptions == nil { iceOptions = value }
            case .fingerprint(let value): fingerprints.append(value)
            case .candidate(let value): candidates.append(value)
            case .group: break
            case .other:
                switch attribute.name {
                // RFC 8858: rtcp-mux-only implies rtcp-mux.
                case "rtcp-mux", "rtcp-mux-only": rtcpMux = true
                case "rtcp-rsize": reducedSize = true
                case "bundle-only": bundleOnly = true
                case "end-of-candidates": endOfCandidates = true
                // RFC 8851, RFC 8853; a malformed one is ignored (the section is answered without
                // simulcast, and the offerer sends one stream).
                case "rid": if let rid = attribute.value.flatMap(RIDAttribute.init(attributeValue:)) { rids.append(rid) }
                case "simulcast": if simulcast == nil { simulcast = attribute.value.flatMap(SimulcastAttribute.init(attributeValue:)) }
                default: break
                }
            }
        }
    }

    func rtpMap(for payloadType: UInt8) -> RTPMap? { rtpMaps.first { $0.payloadType == payloadType } }
    func parameters(for payloadType: UInt8) -> FormatParameters? { formatParameters.first { $0.payloadType == payloadType } }
}

/// The steps of `negotiate(offer:host:)`.
struct AnswerBuilder {
    let offer: SessionDescription
    let host: HostParameters
    let session: OfferedSection
    let sections: [OfferedSection]

    init(offer: SessionDescription, host: HostParameters) {
        self.offer = offer
        self.host = host
        session = OfferedSection(offer.attributes)
        sections = offer.media.map { OfferedSection($0.attributes) }
    }

    private enum Decision {
        case accept(NegotiatedCodec)
        case reject(RejectionReason)
    }

    func build() throws(SDPError) -> NegotiatedSession {
        let hostFingerprint = try validatedHostFingerprint()

        // RFC 8843 §7.2, RFC 5888 §4: every section needs a unique mid.
        var mids: [String] = []
        var seen = Set<String>()
        for (index, section) in sections.enumerated() {
            guard let mid = section.mid else { throw SDPError(.missingMid, "m= section \(index) has no a=mid") }
            guard seen.insert(mid).inserted else { throw SDPError(.duplicateMid, "a=mid:\(mid) appears twice") }
            mids.append(mid)
        }
        var owners: [UInt32: Int] = [:]
        for (index, section) in sections.enumerated() where offer.media[index].port != 0 || section.bundleOnly {
            for ssrc in Set(section.ssrcAttributes.map(\.ssrc) + section.ssrcGroups.flatMap(\.ssrcs)) {
                if let owner = owners.updateValue(index, forKey: ssrc), owner != index {
                    throw SDPError(.duplicateSSRC, "a=ssrc:\(ssrc) is in m= sections \(owner) and \(index): an SSRC names one source")
                }
            }
        }
        let bundle = offer.bundleGroups.first
        if let bundle {
            for mid in bundle.mids where !seen.contains(mid) {
                throw SDPError(.badBundleGroup, "the BUNDLE group names mid \(mid), which no m= section has")
            }
        }

        var decisions: [Decision] = []
        for index in offer.media.indices {
            decisions.append(decide(index, mid: mids[index], bundle: bundle))
        }
        let acceptedIndices = decisions.indices.filter { if case .accept = decisions[$0] { true } else { false } }
        guard !acceptedIndices.isEmpty else { throw refusal(decisions) }
        if bundle == nil, acceptedIndices.count > 1 {
            throw SDPError(.bundleRequired, "\(acceptedIndices.count) usable m= sections and no BUNDLE group")
        }

        // RFC 8843 §7.3.1: the answer's group holds the accepted mids, in the offer's group order;
        // the first (the answerer BUNDLE-tag) carries the transport.
        let acceptedMids = Set(acceptedIndices.map { mids[$0] })
        let bundleMids = bundle.map { group in group.mids.filter { acceptedMids.contains($0) } } ?? []
        let taggedIndex = bundleMids.first.flatMap { mid in mids.firstIndex(of: mid) } ?? acceptedIndices[0]
        let peerTransport = try transport(of: sections[taggedIndex])
        let hostRole: DTLSRole = peerTransport.setupRole == .passive ? .client : .server

        let hostTransport: [Attribute] = [
            .iceUsernameFragment(host.iceUsernameFragment),
            .icePassword(host.icePassword),
            .fingerprint(hostFingerprint),
            .setup(hostRole == .server ? .passive : .active),
        ]
        let candidates = hostCandidates()

        var answerMedia: [MediaDescription] = []
        var accepted: [NegotiatedMedia] = []
        var rejected: [RejectedMedia] = []
        for (index, section) in offer.media.enumerated() {
            switch decisions[index] {
            case .accept(let codec):
                let (description, negotiated) = acceptedSection(
                    index, mid: mids[index], codec: codec, transport: hostTransport, candidates: candidates)
                answerMedia.append(description)
                accepted.append(negotiated)
            case .reject(let reason):
                answerMedia.append(rejectedSection(section, mid: mids[index], transport: hostTransport))
                rejected.append(RejectedMedia(index: index, mid: mids[index], kind: section.kind, reason: reason))
            }
        }

        var sessionAttributes: [Attribute] = [.flag("ice-lite")]
        if bundle != nil { sessionAttributes.append(.group(MediaGroup(semantics: "BUNDLE", mids: bundleMids))) }
        sessionAttributes.append(.other("msid-semantic", "WMS *"))
        let answer = SessionDescription(
            origin: Origin(sessionID: String(host.sessionID), sessionVersion: String(host.sessionVersion), address: "127.0.0.1"),
            attributes: sessionAttributes, media: answerMedia)
        return NegotiatedSession(answer: answer, peerTransport: peerTransport, hostDTLSRole: hostRole,
                                 bundleMids: bundleMids, media: accepted, rejected: rejected)
    }

    private func validatedHostFingerprint() throws(SDPError) -> Fingerprint {
        let bytes: [UInt8]
        do throws(SDPError) {
            bytes = try Fingerprint.bytes(fromHex: host.fingerprintSHA256[...])
        } catch {
            throw SDPError(.invalidHostParameters, "the host fingerprint is not colon-separated hex: \(error.detail)")
        }
        guard bytes.count == 32 else { throw SDPError(.invalidHostParameters, "the host fingerprint is not 32 bytes (SHA-256)") }
        guard (4...256).contains(host.iceUsernameFragment.utf8.count), Lexical.isICEChars(host.iceUsernameFragment),
            (22...256).contains(host.icePassword.utf8.count), Lexical.isICEChars(host.icePassword)
        else { throw SDPError(.invalidHostParameters, "the host ICE ufrag/pwd break RFC 8839 §5.4") }
        return Fingerprint(hashFunction: "sha-256", bytes: bytes)
    }

    private func decide(_ index: Int, mid: String, bundle: MediaGroup?) -> Decision {
        let section = offer.media[index]
        let offered = sections[index]
        guard section.kind == .audio || section.kind == .video else { return .reject(.unsupportedMedia) }
        // RFC 8843 §7.2: port 0 with bundle-only is a live bundled section, not a disabled one.
        if section.port == 0, !offered.bundleOnly { return .reject(.disabledByOffer) }
        let proto = section.transportProtocol.uppercased()
        guard section.carriesRTP, proto.contains("SAVP"), proto.contains("TLS") else { return .reject(.unsupportedTransport) }
        if let bundle {
            guard bundle.mids.contains(mid) else { return .reject(.outsideBundle) }
        } else if offered.bundleOnly {
            return .reject(.outsideBundle)
        }
        guard let codec = selectCodec(index) else { return .reject(.noCommonCodec) }
        guard offered.rtcpMux else { return .reject(.rtcpMuxMissing) }
        return .accept(codec)
    }

    private func refusal(_ decisions: [Decision]) -> SDPError {
        let reasons = decisions.compactMap { if case .reject(let reason) = $0 { reason } else { nil } }
        if reasons.contains(.noCommonCodec) || reasons.isEmpty {
            return SDPError(.noUsableCodec, "no audio or video section offers VP8 or Opus")
        }
        if reasons.contains(.rtcpMuxMissing) {
            return SDPError(.rtcpMuxRequired, "the usable sections lack a=rtcp-mux, which the host requires")
        }
        return SDPError(.noUsableMedia, "no section of the offer is usable audio or video")
    }

    /// RFC 8829 §5.3.1: the answer uses the offer's payload types; the offerer's order is its
    /// preference, so the first offered codec the host supports wins.
    private func selectCodec(_ index: Int) -> NegotiatedCodec? {
        let section = offer.media[index]
        let offered = sections[index]
        let offeredTypes = section.payloadTypes
        for pt in offeredTypes {
            guard let map = offered.rtpMap(for: pt),
                let capability = host.codecs.first(where: { $0.kind == section.kind && $0.matches(map) })
            else { continue }
            var rtx: UInt8?
            if capability.acceptsRetransmission {
                // RFC 4588 §8.6: the RTX format whose apt= is the codec's payload type.
                rtx = offeredTypes.first { candidate in
                    guard let rtxMap = offered.rtpMap(for: candidate), rtxMap.encodingName.lowercased() == "rtx",
                        rtxMap.clockRate == map.clockRate
                    else { return false }
                    return offered.parameters(for: candidate)?.associatedPayloadType == pt
                }
            }
            // RFC 4585 §4.2: feedback for this payload type or for `*`, intersected with the host's.
            var feedback: [RTCPFeedback] = []
            for item in offered.feedback where item.payloadType == pt || item.payloadType == nil {
                guard host.feedback.contains(where: { $0.sameFeedback(as: item) }),
                    !feedback.contains(where: { $0.sameFeedback(as: item) })
                else { continue }
                feedback.append(RTCPFeedback(payloadType: pt, type: item.type, parameter: item.parameter))
            }
            return NegotiatedCodec(payloadType: pt, encodingName: map.encodingName, clockRate: map.clockRate,
                                   channels: map.channels, rtxPayloadType: rtx, feedback: feedback,
                                   peerFormatParameters: offered.parameters(for: pt)?.parameters)
        }
        return nil
    }

    /// RFC 8839 §5.4 and RFC 8842 §5: ICE credentials, fingerprints and setup of the tagged
    /// section, each falling back to the session level (where Firefox writes them).
    private func transport(of section: OfferedSection) throws(SDPError) -> OfferedTransport {
        guard let ufrag = section.iceUsernameFragment ?? session.iceUsernameFragment,
            let pwd = section.icePassword ?? session.icePassword
        else { throw SDPError(.missingICECredentials, "the offer has no a=ice-ufrag / a=ice-pwd") }
        let fingerprints = section.fingerprints.isEmpty ? session.fingerprints : section.fingerprints
        guard !fingerprints.isEmpty else { throw SDPError(.missingFingerprint, "the offer has no a=fingerprint") }
        let setup = section.setupRole ?? session.setupRole
        if setup == .holdconn { throw SDPError(.unsupportedSetupRole, "a=setup:holdconn") }
        return OfferedTransport(iceUsernameFragment: ufrag, icePassword: pwd, fingerprints: fingerprints, setupRole: setup,
                             candidates: section.candidates, endOfCandidates: section.endOfCandidates,
                             iceOptions: section.iceOptions ?? session.iceOptions ?? [])
    }

    /// RFC 8445 §5.1.2.1: priority = 2^24 × type preference (126 for host) + 2^8 × local
    /// preference (65535, minus the address's rank) + (256 − component).
    /// RFC 8445 §5.1.2.1 priorities: host type preference 126; UDP candidates rank above TCP
    /// ones (RFC 6544 §4.2: local preference 2^13 × direction preference + other preference, with
    /// 4 for passive), so a peer that can use UDP does.
    private func hostCandidates() -> [Candidate] {
        host.candidateAddresses.enumerated().map { rank, address in
            let localPreference = address.isTCP ? UInt32((1 << 13) * 4 + max(0, 8191 - rank)) : UInt32(65535 - min(rank, 65535))
            let priority = (126 << 24) + (localPreference << 8) + (256 - 1)
            return Candidate(foundation: String(rank + 1), component: 1, transport: address.isTCP ? "tcp" : "udp", priority: priority,
                             address: address.address, port: address.port, type: "host", tcpType: address.isTCP ? "passive" : nil)
        }
    }

    private func acceptedSection(
        _ index: Int, mid: String, codec: NegotiatedCodec, transport: [Attribute], candidates: [Candidate]
    ) -> (MediaDescription, NegotiatedMedia) {
        let section = offer.media[index]
        let offered = sections[index]
        // RFC 8866 §6.7: without a direction attribute, the session's, else sendrecv.
        let peerDirection = offered.direction ?? session.direction ?? .sendrecv
        let sender = host.senders[mid]
        // RFC 3264 §6.1: the host receives what the peer sends, and sends only where the peer
        // receives and the host has something to send.
        let hostDirection = Direction(sends: peerDirection.receives && sender != nil, receives: peerDirection.sends)
        let activeSender = hostDirection.sends ? sender : nil

        let simulcastLayers = peerDirection.sends ? simulcastLayers(offered, kind: section.kind) : []
        // RFC 8285 §7: the answer keeps the offer's ids, for URIs the host supports, with the
        // direction mirrored. Encrypted extensions (RFC 6904) are not supported. The rid
        // extensions are taken where simulcast is: they tell the layers apart.
        var extensions: [ExtensionMap] = []
        for item in offered.extensionMaps + session.extensionMaps
        where !item.isEncrypted && (host.headerExtensionURIs.contains(item.uri) || (!simulcastLayers.isEmpty && Self.ridURIs.contains(item.uri)))
            && !extensions.contains(where: { $0.uri == item.uri || $0.id == item.id }) {
            extensions.append(ExtensionMap(id: item.id, direction: item.direction?.reversed, uri: item.uri))
        }

        var attributes: [Attribute] = [.mid(mid)]
        attributes += transport
        attributes += extensions.map(Attribute.extmap)
        attributes.append(.direction(hostDirection))
        // RFC 8853 §5.3: the answerer receives the layers the offerer sends.
        if !simulcastLayers.isEmpty {
            attributes += simulcastLayers.map { .other("rid", RIDAttribute(id: $0.rid, direction: .recv).attributeValue) }
            attributes.append(.other("simulcast", SimulcastAttribute(receive: simulcastLayers.map { [$0] }).attributeValue))
        }
        if let activeSender { attributes.append(.msid(MSID(streamID: activeSender.streamID, trackID: activeSender.trackID))) }
        attributes.append(.flag("rtcp-mux"))
        if offered.reducedSize { attributes.append(.flag("rtcp-rsize")) }
        attributes.append(.rtpmap(RTPMap(payloadType: codec.payloadType, encodingName: codec.encodingName,
                                         clockRate: codec.clockRate, channels: codec.channels)))
        attributes += codec.feedback.map(Attribute.rtcpFeedback)
        let capability = host.codecs.first { $0.kind == section.kind && $0.name.lowercased() == codec.encodingName.lowercased() }
        if let parameters = capability?.formatParameters {
            attributes.append(.fmtp(FormatParameters(payloadType: codec.payloadType, parameters: parameters)))
        }
        var formats = [String(codec.payloadType)]
        if let rtx = codec.rtxPayloadType {
            formats.append(String(rtx))
            attributes.append(.rtpmap(RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: codec.clockRate)))
            attributes.append(.fmtp(FormatParameters(payloadType: rtx, parameters: "apt=\(codec.payloadType)")))
        }
        if let activeSender {
            var ssrcs = [activeSender.ssrc]
            if codec.rtxPayloadType != nil, let rtxSSRC = activeSender.rtxSSRC {
                ssrcs.append(rtxSSRC)
                attributes.append(.ssrcGroup(SSRCGroup(semantics: "FID", ssrcs: ssrcs)))
            }
            for ssrc in ssrcs {
                attributes.append(.ssrc(SSRCAttribute(ssrc: ssrc, attribute: "cname", value: activeSender.cname)))
                attributes.append(.ssrc(SSRCAttribute(ssrc: ssrc, attribute: "msid",
                                                      value: "\(activeSender.streamID) \(activeSender.trackID)")))
            }
        }
        attributes += candidates.map(Attribute.candidate)
        attributes.append(.flag("end-of-candidates"))

        // RFC 8839 §4.2.1.2: the m= line and c= carry the default candidate; with none, the
        // RFC 8840 §4.1.1 placeholder 0.0.0.0:9.
        let defaultCandidate = candidates.first
        let description = MediaDescription(
            kind: section.kind, port: defaultCandidate?.port ?? 9, transportProtocol: section.transportProtocol,
            formats: formats, connections: [Connection(address: defaultCandidate?.address ?? "0.0.0.0")],
            attributes: attributes)

        let (peerSSRCs, peerRTX) = Self.peerSources(of: offered)
        let cname = offered.ssrcAttributes.first { $0.attribute == "cname" }?.value
        let msid = offered.msid ?? offered.ssrcAttributes.first { $0.attribute == "msid" }?.value.flatMap {
            try? MSID(attributeValue: $0[...])
        }
        let negotiated = NegotiatedMedia(
            index: index, mid: mid, kind: section.kind, peerDirection: peerDirection, hostDirection: hostDirection,
            codec: codec, peerSSRCs: peerDirection.sends ? peerSSRCs : [], peerRTXSSRCs: peerDirection.sends ? peerRTX : [:],
            peerCNAME: cname, peerMSID: msid, headerExtensions: extensions, reducedSizeRTCP: offered.reducedSize,
            hostSender: activeSender, peerRIDs: simulcastLayers.map(\.rid))
        return (description, negotiated)
    }

    static let ridURIs: Set<String> = ["urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id",
                                       "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"]

    /// The simulcast layers the host takes from a section (RFC 8853 §5.3): a video section
    /// whose `a=simulcast` sends two or more layers, each (its first alternative) with an
    /// `a=rid:<id> send`, and the rtp-stream-id extension offered to tell them apart; else none.
    private func simulcastLayers(_ offered: OfferedSection, kind: MediaKind) -> [SimulcastAttribute.Layer] {
        guard host.receivesSimulcast, kind == .video, let simulcast = offered.simulcast, simulcast.send.count >= 2,
              (offered.extensionMaps + session.extensionMaps).contains(where: { $0.uri == "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id" && !$0.isEncrypted })
        else { return [] }
        let sent = Set(offered.rids.filter { $0.direction == .send }.map(\.id))
        let layers = simulcast.send.compactMap(\.first)
        guard layers.allSatisfy({ sent.contains($0.rid) }), Set(layers.map(\.rid)).count == layers.count else { return [] }
        return layers
    }

    /// RFC 5576: the sources of `a=ssrc` lines, minus the RTX sources of `a=ssrc-group:FID`.
    static func peerSources(of section: OfferedSection) -> ([UInt32], [UInt32: UInt32]) {
        var rtx: [UInt32: UInt32] = [:]
        var repairSources = Set<UInt32>()
        for group in section.ssrcGroups where group.semantics.uppercased() == "FID" && group.ssrcs.count >= 2 {
            if rtx[group.ssrcs[0]] == nil { rtx[group.ssrcs[0]] = group.ssrcs[1] }
            repairSources.insert(group.ssrcs[1])
        }
        var ssrcs: [UInt32] = []
        for attribute in section.ssrcAttributes where !repairSources.contains(attribute.ssrc) && !ssrcs.contains(attribute.ssrc) {
            ssrcs.append(attribute.ssrc)
        }
        return (ssrcs, rtx)
    }

    /// RFC 3264 §6 and RFC 8829 §5.3.1: a rejected section keeps its place and mid with port 0.
    /// Like Chromium, an RTP section gets format 0. The transport attributes and rtcp-mux are
    /// repeated because aiortc checks them on every section, rejected or not.
    private func rejectedSection(_ section: MediaDescription, mid: String, transport: [Attribute]) -> MediaDescription {
        var attributes: [Attribute] = [.mid(mid)]
        attributes += transport
        attributes.append(.direction(.inactive))
        if section.carriesRTP { attributes.append(.flag("rtcp-mux")) }
        let formats: [String] = section.carriesRTP ? ["0"] : Array(section.formats.prefix(1))
        return MediaDescription(
            kind: section.kind, port: 0, transportProtocol: section.transportProtocol, formats: formats,
            connections: [Connection(address: "0.0.0.0")], attributes: attributes)
    }
}
