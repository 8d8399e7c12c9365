import RTP
import SDP
import Streams
import Transport
import Wire

/// `POST /v1/echo`: sends a peer back what it sends, so a user can check that a peer
/// interoperates with the transport before anything is decoded. Each received stream goes back
/// on the host's own SSRC for the same m= line with its sequence numbers and timestamps kept,
/// so the peer's NACKs and PLIs about the echo map one to one onto the peer's own stream and are
/// forwarded to it; what the peer retransmits (RTX unwrapped) is echoed again. Lives on the
/// media loop thread.
final class EchoSession: PeerEventSink {
    /// One m= line: what the peer sends on it and what the host sends back.
    struct EchoedSection {
        let mid: String
        let codecPayloadType: PayloadType
        let peerRTXPayloadType: PayloadType?
        let hostSSRC: SSRC
        let cname: String
        var peerSSRC: SSRC?
        var peerRTXSSRC: SSRC?
    }

    let id: String
    private let port: MediaPort
    private var peerID: MediaPort.PeerID?
    private var sections: [EchoedSection]
    private let extensions: HeaderExtensionMap
    private let onEnd: (String) -> Void
    private(set) var packetsEchoed = 0

    init(id: String, negotiated: NegotiatedSession, port: MediaPort, onEnd: @escaping (String) -> Void) {
        self.id = id
        self.port = port
        self.onEnd = onEnd
        var map = HeaderExtensionMap()
        for media in negotiated.media {
            for ext in media.headerExtensions where ext.id <= 255 {
                map.set(HeaderExtensionURI(rawValue: ext.uri), id: UInt8(ext.id))
            }
        }
        extensions = map
        sections = negotiated.media.compactMap { media in
            guard let sender = media.hostSender else { return nil }
            let rtx = media.peerSSRCs.first.flatMap { media.peerRTXSSRCs[$0] }
            return EchoedSection(mid: media.mid, codecPayloadType: PayloadType(rawValue: media.codec.payloadType),
                                 peerRTXPayloadType: media.codec.rtxPayloadType.map { PayloadType(rawValue: $0) },
                                 hostSSRC: SSRC(rawValue: sender.ssrc), cname: sender.cname,
                                 peerSSRC: media.peerSSRCs.first.map { SSRC(rawValue: $0) },
                                 peerRTXSSRC: rtx.map { SSRC(rawValue: $0) })
        }
    }

    func attach(_ transport: PeerTransport, localUfrag: String) {
        peerID = port.add(transport, localUfrag: localUfrag, sink: self)
    }

    func end() {
        guard let peerID else { return }
        self.peerID = nil
        port.remove(peerID)
        onEnd(id)
    }

    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        switch event {
        case .rtp(let bytes): echo(bytes)
        case .rtcp(let bytes): forwardFeedback(bytes)
        case .failed: end()
        case .iceConnected, .secure: break
        }
    }

    /// Which section a packet belongs to, and whether it is a retransmission; learns SSRCs the
    /// offer did not signal from the mid extension or the payload type.
    private func section(for packet: RTPPacket) -> (index: Int, isRTX: Bool)? {
        if let index = sections.firstIndex(where: { $0.peerSSRC == packet.ssrc }) { return (index, false) }
        if let index = sections.firstIndex(where: { $0.peerRTXSSRC == packet.ssrc }) { return (index, true) }
        let byMid = (try? packet.headerExtension(MediaIdentification.self, in: extensions))?.flatMap { mid in
            sections.firstIndex { $0.mid == mid.value }
        }
        let byPayloadType = sections.firstIndex {
            $0.codecPayloadType == packet.payloadType || $0.peerRTXPayloadType == packet.payloadType
        }
        guard let index = byMid ?? byPayloadType else { return nil }
        let isRTX = sections[index].peerRTXPayloadType == packet.payloadType
        if isRTX { sections[index].peerRTXSSRC = packet.ssrc } else { sections[index].peerSSRC = packet.ssrc }
        return (index, isRTX)
    }

    private func echo(_ bytes: [UInt8]) {
        guard let peerID, var packet = try? RTPPacket.parse(bytes), let (index, isRTX) = section(for: packet) else { return }
        let echoed = sections[index]
        if isRTX {
            guard let mediaSSRC = echoed.peerSSRC, let rtxPayloadType = echoed.peerRTXPayloadType,
                  let original = try? RTXPacket.unwrap(packet, configuration: RTXConfiguration(
                      ssrc: packet.ssrc, payloadType: rtxPayloadType, associatedPayloadType: echoed.codecPayloadType),
                      mediaSSRC: mediaSSRC) else { return }  // padding-only probes carry nothing to echo
            packet = original
        }
        packet.ssrc = echoed.hostSSRC
        // The peer's transport-wide sequence numbers and send times describe its own sending.
        let midID = extensions.midID
        packet.extensions.removeAll { $0.id != midID }
        guard let out = try? packet.serialized() else { return }
        if port.sendRTP(out, to: peerID) { packetsEchoed += 1 }
    }

    /// The peer's NACK, PLI and FIR about the echo become the same requests about its own stream;
    /// its sender reports describe the echo too, since timestamps are kept.
    private func forwardFeedback(_ bytes: [UInt8]) {
        guard let peerID, let packets = try? RTCPPacket.parseCompound(bytes) else { return }
        for packet in packets {
            switch packet {
            case .nack(let nack):
                guard let section = sections.first(where: { $0.hostSSRC == nack.mediaSSRC }), let peerSSRC = section.peerSSRC else { continue }
                send([.nack(GenericNACK(senderSSRC: section.hostSSRC, mediaSSRC: peerSSRC, pairs: nack.pairs))], as: section, to: peerID)
            case .pictureLossIndication(let pli):
                guard let section = sections.first(where: { $0.hostSSRC == pli.mediaSSRC }), let peerSSRC = section.peerSSRC else { continue }
                send([.pictureLossIndication(PictureLossIndication(senderSSRC: section.hostSSRC, mediaSSRC: peerSSRC))], as: section, to: peerID)
            case .fullIntraRequest(let fir):
                for entry in fir.entries {
                    guard let section = sections.first(where: { $0.hostSSRC == entry.ssrc }), let peerSSRC = section.peerSSRC else { continue }
                    send([.pictureLossIndication(PictureLossIndication(senderSSRC: section.hostSSRC, mediaSSRC: peerSSRC))], as: section, to: peerID)
                }
            case .senderReport(let report):
                guard let section = sections.first(where: { $0.peerSSRC == report.ssrc }) else { continue }
                var echoed = report
                echoed.ssrc = section.hostSSRC
                echoed.reports = []
                port.sendRTCP((try? RTCPPacket.serializeCompound([
                    .senderReport(echoed),
                    .sourceDescription(SourceDescription(chunks: [SDESChunk(source: section.hostSSRC, cname: section.cname)])),
                ])) ?? [], to: peerID)
            default:
                continue
            }
        }
    }

    /// Feedback in a compound packet that starts with an empty receiver report and carries the
    /// CNAME (RFC 3550 §6.1), for peers that did not negotiate reduced-size RTCP.
    private func send(_ feedback: [RTCPPacket], as section: EchoedSection, to peerID: MediaPort.PeerID) {
        guard let compound = try? RTCPPacket.serializeCompound(
            [.receiverReport(ReceiverReport(ssrc: section.hostSSRC)),
             .sourceDescription(SourceDescription(chunks: [SDESChunk(source: section.hostSSRC, cname: section.cname)]))]
                + feedback) else { return }
        port.sendRTCP(compound, to: peerID)
    }
}
