import RTP
import SDP

/// The m= sections a peer sends on, and which one an arriving packet belongs to: by SSRC when
/// known (from `a=ssrc` or learned), else by the mid header extension (RFC 8843 §15), else by
/// payload type. A packet that places a new SSRC teaches it, so offers without `a=ssrc` work.
public struct InboundSections {
    public struct Section {
        public let mid: String
        public let isVideo: Bool
        public let clockRate: UInt32
        public let codecPayloadType: PayloadType
        public let rtxPayloadType: PayloadType?
        /// Whether `a=rtcp-fb:* nack` was agreed (RFC 4585 §4.2).
        public let nack: Bool
        /// Whether `a=rtcp-fb:* goog-remb` was agreed: the host may cap the sender with REMB.
        public let remb: Bool
        /// What the host sends on this section, if anything.
        public let hostSender: HostSender?
        /// Whether the peer sends on it (its direction `sendrecv` or `sendonly`).
        public let peerSends: Bool
        public var mediaSSRC: SSRC?
        public var rtxSSRC: SSRC?
    }

    public private(set) var sections: [Section]
    public let extensions: HeaderExtensionMap

    /// The sections of `negotiated`; a section whose mid was in `previous` keeps the SSRCs
    /// learned there (a renegotiation's offer may leave out `a=ssrc`).
    public init(_ negotiated: NegotiatedSession, previous: InboundSections? = nil) {
        var map = HeaderExtensionMap()
        for media in negotiated.media {
            for ext in media.headerExtensions where ext.id <= 255 {
                map.set(HeaderExtensionURI(rawValue: ext.uri), id: UInt8(ext.id))
            }
        }
        extensions = map
        sections = negotiated.media.map { media in
            let mediaSSRC = media.peerSSRCs.first
            return Section(mid: media.mid, isVideo: media.kind == .video, clockRate: media.codec.clockRate,
                           codecPayloadType: PayloadType(rawValue: media.codec.payloadType),
                           rtxPayloadType: media.codec.rtxPayloadType.map { PayloadType(rawValue: $0) },
                           nack: media.codec.feedback.contains { $0.type == "nack" && $0.parameter == nil },
                           remb: media.codec.feedback.contains { $0.type == "goog-remb" },
                           hostSender: media.hostSender,
                           peerSends: media.peerDirection == .sendrecv || media.peerDirection == .sendonly,
                           mediaSSRC: mediaSSRC.map { SSRC(rawValue: $0) },
                           rtxSSRC: mediaSSRC.flatMap { media.peerRTXSSRCs[$0] }.map { SSRC(rawValue: $0) })
        }
        guard let previous else { return }
        for index in sections.indices {
            guard let before = previous.section(mid: sections[index].mid), before.isVideo == sections[index].isVideo else { continue }
            if sections[index].mediaSSRC == nil {
                sections[index].mediaSSRC = before.mediaSSRC
                sections[index].rtxSSRC = before.rtxSSRC
            }
        }
    }

    /// The section of `mid`, if negotiated.
    public func section(mid: String) -> Section? { sections.first { $0.mid == mid } }

    public subscript(index: Int) -> Section { sections[index] }

    /// The section of `packet` and whether it is a retransmission (RFC 4588), learning its SSRC.
    /// Only sections the peer sends on take packets: media on a `recvonly` or `inactive` one is
    /// not its to send (RFC 3264 §5.1) and is dropped.
    public mutating func classify(_ packet: RTPPacket) -> (index: Int, isRTX: Bool)? {
        if let index = sections.firstIndex(where: { $0.mediaSSRC == packet.ssrc && $0.peerSends }) { return (index, false) }
        if let index = sections.firstIndex(where: { $0.rtxSSRC == packet.ssrc && $0.peerSends }) { return (index, true) }
        let byMid = (try? packet.headerExtension(MediaIdentification.self, in: extensions))?.flatMap { mid in
            sections.firstIndex { $0.mid == mid.value }
        }
        if let byMid, !sections[byMid].peerSends { return nil }
        let byPayloadType = sections.firstIndex {
            $0.peerSends && ($0.codecPayloadType == packet.payloadType || $0.rtxPayloadType == packet.payloadType)
        }
        guard let index = byMid ?? byPayloadType else { return nil }
        let isRTX = sections[index].rtxPayloadType == packet.payloadType
        if isRTX { sections[index].rtxSSRC = packet.ssrc } else { sections[index].mediaSSRC = packet.ssrc }
        return (index, isRTX)
    }

    /// The section the host sends `ssrc` on.
    public func section(sendingHostSSRC ssrc: SSRC) -> Section? {
        sections.first { $0.hostSender.map { SSRC(rawValue: $0.ssrc) } == ssrc }
    }
}
