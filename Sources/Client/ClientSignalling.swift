import Wire
import Foundation
import RTP
import SDP
import Streams
import Transport

/// The offer a client of the host writes, and what it reads back from the answer: the
/// signalling half of Tessera's stack in the client role (the load generator's participants and
/// the tests' clients use it).
public struct ClientOffer: Sendable {
    /// One m= section: what the client sends on it.
    public struct Section: Sendable {
        public let mid: String
        public let kind: MediaKind
        public let payloadType: UInt8
        public let encodingName: String
        public let clockRate: UInt32
        public let channels: UInt8?
        /// The codec's a=fmtp parameters, if any.
        public let formatParameters: String?
        public let ssrc: UInt32
        public let rtxPayloadType: UInt8?
        public let rtxSSRC: UInt32?
        public let direction: Direction
        /// Simulcast layers sent here (RFC 8853), as Chrome offers them: by rid, no `a=ssrc`.
        public let layers: [SimulcastLayer]

        public init(mid: String, kind: MediaKind, payloadType: UInt8, encodingName: String, clockRate: UInt32, channels: UInt8?,
                    formatParameters: String?, ssrc: UInt32, rtxPayloadType: UInt8? = nil, rtxSSRC: UInt32? = nil,
                    direction: Direction = .sendrecv, layers: [SimulcastLayer] = []) {
            self.layers = layers
            self.mid = mid
            self.kind = kind
            self.payloadType = payloadType
            self.encodingName = encodingName
            self.clockRate = clockRate
            self.channels = channels
            self.formatParameters = formatParameters
            self.ssrc = ssrc
            self.rtxPayloadType = rtxPayloadType
            self.rtxSSRC = rtxSSRC
            self.direction = direction
        }

        /// Opus, stereo in SDP as RFC 7587 asks, with in-band FEC.
        public static func opus(mid: String, ssrc: UInt32, direction: Direction = .sendrecv) -> Section {
            Section(mid: mid, kind: .audio, payloadType: 111, encodingName: "opus", clockRate: 48000, channels: 2,
                    formatParameters: "minptime=10;useinbandfec=1", ssrc: ssrc, direction: direction)
        }

        /// VP8 in simulcast layers (smallest first, as Chrome lists them), each with its RTX stream.
        public static func vp8(mid: String, layers: [SimulcastLayer], direction: Direction = .sendrecv) -> Section {
            Section(mid: mid, kind: .video, payloadType: 96, encodingName: "VP8", clockRate: 90000, channels: nil,
                    formatParameters: nil, ssrc: layers.first?.ssrc ?? 0, rtxPayloadType: 97, rtxSSRC: nil, direction: direction, layers: layers)
        }

        /// VP8, with RTX when `rtxSSRC` is given.
        public static func vp8(mid: String, ssrc: UInt32, rtxSSRC: UInt32? = nil, direction: Direction = .sendrecv) -> Section {
            Section(mid: mid, kind: .video, payloadType: 96, encodingName: "VP8", clockRate: 90000, channels: nil,
                    formatParameters: nil, ssrc: ssrc, rtxPayloadType: rtxSSRC == nil ? nil : 97, rtxSSRC: rtxSSRC, direction: direction)
        }
    }

    /// One simulcast layer: its rid and its media and RTX SSRCs.
    public struct SimulcastLayer: Sendable, Equatable {
        public let rid: String
        public let ssrc: UInt32
        public let rtxSSRC: UInt32
        public init(rid: String, ssrc: UInt32, rtxSSRC: UInt32) {
            self.rid = rid
            self.ssrc = ssrc
            self.rtxSSRC = rtxSSRC
        }
    }

    /// The ids the offer gives the rid extensions (RFC 8852), on simulcast sections.
    public static let rtpStreamIDExtensionID: UInt16 = 4
    public static let repairedRTPStreamIDExtensionID: UInt16 = 5

    public static let midExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// The id the offer gives the sdes:mid extension.
    public static let midExtensionID: UInt16 = 1
    /// The id the offer gives the audio level extension (RFC 6464), on audio sections.
    public static let audioLevelExtensionID: UInt16 = 2
    /// The id the offer gives the video orientation extension (CVO), on video sections.
    public static let videoOrientationExtensionID: UInt16 = 3

    public let ice: ICECredentials
    public let fingerprint: CertificateFingerprint
    public let setup: SetupRole
    public let cname: String
    public let sections: [Section]
    /// Whether audio sections offer the RFC 6464 audio level extension.
    public let offersAudioLevel: Bool

    public init(ice: ICECredentials, fingerprint: CertificateFingerprint, setup: SetupRole = .actpass, cname: String, sections: [Section],
                offersAudioLevel: Bool = true) {
        self.ice = ice
        self.fingerprint = fingerprint
        self.setup = setup
        self.cname = cname
        self.sections = sections
        self.offersAudioLevel = offersAudioLevel
    }

    /// BUNDLE of the sections, rtcp-mux, the client's ICE credentials and certificate fingerprint,
    /// a=ssrc with cname, sdes:mid (and on audio the RFC 6464 level, as browsers offer it); video
    /// asks for nack, pli, fir and goog-remb.
    public var description: SessionDescription {
        let fingerprint = Fingerprint(hashFunction: fingerprint.algorithm, bytes: fingerprint.digest)
        let media = sections.map { section -> MediaDescription in
            var attributes: [Attribute] = [
                .mid(section.mid),
                .iceUsernameFragment(ice.ufrag),
                .icePassword(ice.password),
                .other("ice-options", "trickle"),
                .fingerprint(fingerprint),
                .setup(setup),
                .extmap(ExtensionMap(id: Self.midExtensionID, uri: Self.midExtensionURI)),
                .direction(section.direction),
                .msid(MSID(streamID: cname, trackID: "\(section.kind.name)-\(section.mid)")),
                .flag("rtcp-mux"),
                .flag("rtcp-rsize"),
                .rtpmap(RTPMap(payloadType: section.payloadType, encodingName: section.encodingName,
                               clockRate: section.clockRate, channels: section.channels)),
            ]
            if section.kind == .audio && offersAudioLevel {
                attributes.append(.extmap(ExtensionMap(id: Self.audioLevelExtensionID, uri: HeaderExtensionURI.audioLevel.rawValue)))
            }
            if let parameters = section.formatParameters {
                attributes.append(.fmtp(FormatParameters(payloadType: section.payloadType, parameters: parameters)))
            }
            if section.kind == .video {
                attributes += [
                    .extmap(ExtensionMap(id: Self.videoOrientationExtensionID, uri: HeaderExtensionURI.videoOrientation.rawValue)),
                    .rtcpFeedback(RTCPFeedback(payloadType: section.payloadType, type: "nack")),
                    .rtcpFeedback(RTCPFeedback(payloadType: section.payloadType, type: "nack", parameter: "pli")),
                    .rtcpFeedback(RTCPFeedback(payloadType: section.payloadType, type: "ccm", parameter: "fir")),
                    // As browsers offer it: the host caps the camera with REMB at what its tile needs.
                    .rtcpFeedback(RTCPFeedback(payloadType: section.payloadType, type: "goog-remb")),
                ]
            }
            var formats = [String(section.payloadType)]
            if let rtx = section.rtxPayloadType {
                formats.append(String(rtx))
                attributes.append(.rtpmap(RTPMap(payloadType: rtx, encodingName: "rtx", clockRate: section.clockRate)))
                attributes.append(.fmtp(FormatParameters(payloadType: rtx, parameters: "apt=\(section.payloadType)")))
            }
            if !section.layers.isEmpty {
                attributes += [
                    .extmap(ExtensionMap(id: Self.rtpStreamIDExtensionID, uri: HeaderExtensionURI.rtpStreamID.rawValue)),
                    .extmap(ExtensionMap(id: Self.repairedRTPStreamIDExtensionID, uri: HeaderExtensionURI.repairedRTPStreamID.rawValue)),
                ]
                attributes += section.layers.map { .other("rid", "\($0.rid) send") }
                attributes.append(.other("simulcast", "send " + section.layers.map(\.rid).joined(separator: ";")))
            } else {
                var ssrcs = [section.ssrc]
                if let rtxSSRC = section.rtxSSRC {
                    ssrcs.append(rtxSSRC)
                    attributes.append(.ssrcGroup(SSRCGroup(semantics: "FID", ssrcs: ssrcs)))
                }
                for ssrc in ssrcs {
                    attributes.append(.ssrc(SSRCAttribute(ssrc: ssrc, attribute: "cname", value: cname)))
                }
            }
            return MediaDescription(kind: section.kind, port: 9, transportProtocol: "UDP/TLS/RTP/SAVPF", formats: formats,
                                    connections: [Connection(address: "0.0.0.0")], attributes: attributes)
        }
        return SessionDescription(
            origin: Origin(sessionID: String(UInt32.random(in: 1...UInt32.max)), sessionVersion: "2", address: "127.0.0.1"),
            attributes: [.group(MediaGroup(semantics: "BUNDLE", mids: sections.map(\.mid))), .other("msid-semantic", " WMS \(cname)")],
            media: media)
    }
}

/// What a client needs from the host's answer.
public struct ClientAnswer: Sendable {
    public let description: SessionDescription
    /// The session's URL path, from `Location`.
    public let location: String
    public let hostICE: ICECredentials
    public let hostFingerprints: [CertificateFingerprint]
    public let setup: SetupRole?
    /// The first UDP host candidate.
    public let candidate: TransportAddress
    /// The host's SSRC for each accepted mid (its `a=ssrc` cname line).
    public let hostSSRCs: [String: UInt32]
    /// The host's RTX stream for each accepted mid that has one (RFC 4588: the `rtx` format and
    /// the `a=ssrc-group:FID` pair).
    public let hostRTX: [String: RTXConfiguration]
    /// The negotiated id of the sdes:mid header extension.
    public let midExtensionID: UInt8?
    /// The negotiated id of the audio level extension, when the host accepted it.
    public let audioLevelExtensionID: UInt8?
    /// Whether the host's Opus parameters ask for DTX (`usedtx=1`, RFC 7587 §6.1): in silence
    /// a sender then sends only a packet every 400 ms, as a browser's Opus encoder does.
    public let opusDTX: Bool

    public enum Failure: Error, CustomStringConvertible {
        case badAnswer(String)
        /// No answer: the request failed or the host refused it (its status and reason).
        case noAnswer(String)
        public var description: String {
            switch self {
            case .badAnswer(let why): "unusable answer: \(why)"
            case .noAnswer(let why): why
            }
        }
    }

    /// Reads a 201 answer: its `Content-Type` and `Location` headers (names in lower case) and body.
    public init(contentType: String?, location: String?, body: [UInt8]) throws(Failure) {
        guard contentType == "application/sdp" else { throw .badAnswer("Content-Type \(contentType ?? "none")") }
        guard let location else { throw .badAnswer("no Location") }
        let description: SessionDescription
        do { description = try SessionDescription(parsing: body) } catch { throw .badAnswer("\(error)") }
        guard let first = description.media.first(where: { $0.port != 0 }) else { throw .badAnswer("no accepted section") }
        guard let ufrag = first.iceUsernameFragment ?? description.iceUsernameFragment,
              let pwd = first.icePassword ?? description.icePassword else { throw .badAnswer("no ICE credentials") }
        let fingerprints = (first.fingerprints.isEmpty ? description.fingerprints : first.fingerprints).map {
            CertificateFingerprint(algorithm: $0.hashFunction, digest: $0.bytes)
        }
        guard !fingerprints.isEmpty else { throw .badAnswer("no fingerprint") }
        guard let candidate = first.candidates.first(where: { $0.isUDP && $0.component == 1 }),
              let address = Self.address(candidate.address, port: candidate.port) else {
            throw .badAnswer("no usable UDP host candidate")
        }
        var hostSSRCs: [String: UInt32] = [:]
        var hostRTX: [String: RTXConfiguration] = [:]
        for section in description.media where section.port != 0 {
            guard let mid = section.mid, let cnameLine = section.ssrcAttributes.first(where: { $0.attribute == "cname" }) else { continue }
            hostSSRCs[mid] = cnameLine.ssrc
            let rtxMap = section.rtpMaps.first { $0.encodingName.lowercased() == "rtx" }
            let pair = section.ssrcGroups.first { $0.semantics.uppercased() == "FID" && $0.ssrcs.count == 2 && $0.ssrcs[0] == cnameLine.ssrc }
            if let rtxMap, let pair, let media = section.rtpMaps.first(where: { $0.encodingName.lowercased() != "rtx" }) {
                hostRTX[mid] = RTXConfiguration(ssrc: SSRC(rawValue: pair.ssrcs[1]), payloadType: PayloadType(rawValue: rtxMap.payloadType),
                                                associatedPayloadType: PayloadType(rawValue: media.payloadType))
            }
        }
        self.hostRTX = hostRTX
        self.description = description
        self.location = location
        hostICE = ICECredentials(ufrag: ufrag, password: pwd)
        hostFingerprints = fingerprints
        setup = first.setupRole ?? description.setupRole
        self.candidate = address
        self.hostSSRCs = hostSSRCs
        midExtensionID = first.extensionMaps.first { $0.uri == ClientOffer.midExtensionURI }.map { UInt8(truncatingIfNeeded: $0.id) }
        let audio = description.media.first { $0.kind == .audio && $0.port != 0 }
        audioLevelExtensionID = audio?.extensionMaps.first { $0.uri == HeaderExtensionURI.audioLevel.rawValue }
            .map { UInt8(truncatingIfNeeded: $0.id) }
        let opus = audio?.rtpMaps.first { $0.encodingName.lowercased() == "opus" }
        opusDTX = opus.flatMap { map in audio?.formatParameters.first { $0.payloadType == map.payloadType } }?.value(of: "usedtx") == "1"
    }

    /// A numeric IPv4 or IPv6 candidate address (no name resolution: the host announces numbers).
    public static func address(_ text: String, port: UInt16) -> TransportAddress? {
        for (family, count) in [(AF_INET, 4), (AF_INET6, 16)] {
            var bytes = [UInt8](repeating: 0, count: count)
            let converted = bytes.withUnsafeMutableBytes { inet_pton(family, text, $0.baseAddress) }
            if converted == 1 { return TransportAddress(addressBytes: bytes, port: port) }
        }
        return nil
    }
}

extension ClientAnswer {
    /// The host's reply to a join or viewer offer read as its answer: 201 with an SDP answer,
    /// else why not (`why` names the request in the message).
    public static func read(_ result: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>, why: String = "POST")
        -> Result<(answer: ClientAnswer, reply: HostHTTPClient.Reply), ClientAnswer.Failure>
    {
        let reply: HostHTTPClient.Reply
        switch result {
        case .failure(let failure): return .failure(.noAnswer("\(why): \(failure)"))
        case .success(let value): reply = value
        }
        guard reply.status == 201 else { return .failure(.noAnswer("\(why) answered \(reply.status): \(reply.text.prefix(200))")) }
        do {
            let answer = try ClientAnswer(contentType: reply.headers["content-type"], location: reply.headers["location"], body: reply.body)
            return .success((answer, reply))
        } catch {
            return .failure(error)
        }
    }

    /// The client's side of the transport this answer asks for: an ICE controlling agent to the
    /// host's candidate (the host is ICE-lite, RFC 8445 §2.5) and DTLS in the role the answer
    /// leaves it (RFC 5763 §5: the host answering `active` makes the client the server).
    public func clientTransport(context: DTLSContext, localICE: ICECredentials, now: Instant) throws -> PeerTransport {
        let role: DTLSTransport.Role = setup == .active ? .server : .client
        let dtls = try DTLSTransport(context: context, role: role, remoteFingerprints: hostFingerprints, now: now,
                                     handshakeTimeout: .seconds(10), initialRetransmitInterval: .milliseconds(200))
        let agent = ICEControllingAgent(local: localICE, remote: hostICE, remoteAddress: candidate,
                                        tieBreaker: UInt64.random(in: 1...UInt64.max), now: now)
        return PeerTransport(ice: .controlling(agent), dtls: dtls, now: now)
    }
}
