import RTP
import SDP

/// The m= sections a peer sends on, and which one an arriving packet belongs to: by SSRC when
/// known (from `a=ssrc` or learned), else by the mid header extension (RFC 8843 §15), else by
/// payload type. A packet that places a new SSRC teaches it, so offers without `a=ssrc` work.
/// A simulcast section (RFC 8853) has a stream per layer, each learned from the rid its packets
/// carry (RFC 8852: rtp-stream-id on media, repaired-rtp-stream-id on RTX); its `mediaSSRC`
/// stays nil.
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
        /// Its simulcast layers, in the offer's `a=simulcast` order; empty for one stream.
        public var layers: [Layer]
    }

    /// One simulcast layer of a section: its rid, and its SSRCs once learned.
    public struct Layer: Sendable, Equatable {
        public let rid: String
        public var ssrc: SSRC?
        public var rtxSSRC: SSRC?
    }

    public private(set) var sections: [Section]
    public let extensions: HeaderExtensionMap
    /// SSRCs learned from packets so far: it changes when there is a new stream to receive.
    public private(set) var ssrcsLearned = 0

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
                           mediaSSRC: media.peerRIDs.isEmpty ? mediaSSRC.map { SSRC(rawValue: $0) } : nil,
                           rtxSSRC: media.peerRIDs.isEmpty ? mediaSSRC.flatMap { media.peerRTXSSRCs[$0] }.map { SSRC(rawValue: $0) } : nil,
                           layers: media.peerRIDs.map { Layer(rid: $0) })
        }
        guard let previous else { return }
        for index in sections.indices {
            guard let before = previous.section(mid: sections[index].mid), before.isVideo == sections[index].isVideo else { continue }
            if sections[index].mediaSSRC == nil, sections[index].layers.isEmpty {
                sections[index].mediaSSRC = before.mediaSSRC
                sections[index].rtxSSRC = before.rtxSSRC
            }
            for layer in sections[index].layers.indices {
                guard let learned = before.layers.first(where: { $0.rid == sections[index].layers[layer].rid }) else { continue }
                sections[index].layers[layer] = learned
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
        if let known = layer(ssrc: packet.ssrc) { return (known.index, known.isRTX) }
        let byMid = (try? packet.headerExtension(MediaIdentification.self, in: extensions))?.flatMap { mid in
            sections.firstIndex { $0.mid == mid.value }
        }
        if let byMid, !sections[byMid].peerSends { return nil }
        let byPayloadType = sections.firstIndex {
            $0.peerSends && ($0.codecPayloadType == packet.payloadType || $0.rtxPayloadType == packet.payloadType)
        }
        guard let index = byMid ?? byPayloadType else { return nil }
        let isRTX = sections[index].rtxPayloadType == packet.payloadType
        if !sections[index].layers.isEmpty {
            // A simulcast layer is known by its rid; a packet without one cannot be placed.
            // RTX names the layer it repairs (RFC 8852 §3.2); a sender that copied the
            // original's rid instead is taken at its word too.
            let repaired = isRTX ? (try? packet.headerExtension(RepairedRTPStreamID.self, in: extensions))??.value : nil
            let rid = repaired ?? (try? packet.headerExtension(RTPStreamID.self, in: extensions))??.value
            guard let rid, let layer = sections[index].layers.firstIndex(where: { $0.rid == rid }) else { return nil }
            if isRTX { sections[index].layers[layer].rtxSSRC = packet.ssrc } else { sections[index].layers[layer].ssrc = packet.ssrc }
            ssrcsLearned += 1
            return (index, isRTX)
        }
        if isRTX { sections[index].rtxSSRC = packet.ssrc } else { sections[index].mediaSSRC = packet.ssrc }
        ssrcsLearned += 1
        return (index, isRTX)
    }

    /// The simulcast section and layer `ssrc` was learned for, and whether it is the layer's RTX.
    public func layer(ssrc: SSRC) -> (index: Int, layer: Int, isRTX: Bool)? {
        for index in sections.indices where !sections[index].layers.isEmpty && sections[index].peerSends {
            for (number, layer) in sections[index].layers.enumerated() {
                if layer.ssrc == ssrc { return (index, number, false) }
                if layer.rtxSSRC == ssrc { return (index, number, true) }
            }
        }
        return nil
    }

    /// The section the host sends `ssrc` on.
    public func section(sendingHostSSRC ssrc: SSRC) -> Section? {
        sections.first { $0.hostSender.map { SSRC(rawValue: $0.ssrc) } == ssrc }
    }
}
