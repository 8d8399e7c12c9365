import Conference
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
    let id: String
    private let port: MediaPort
    private var peerID: MediaPort.PeerID?
    private var inbound: InboundSections
    private let rtcp: RTCPCompoundBuilder
    private let onEnd: (String) -> Void
    private(set) var packetsEchoed = 0

    init(id: String, negotiated: NegotiatedSession, port: MediaPort, onEnd: @escaping (String) -> Void) {
        self.id = id
        self.port = port
        self.onEnd = onEnd
        inbound = InboundSections(negotiated)
        rtcp = RTCPCompoundBuilder(cname: negotiated.media.compactMap(\.hostSender).first?.cname ?? "tessera")
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

    private func echo(_ bytes: [UInt8]) {
        guard let peerID, var packet = try? RTPPacket.parse(bytes), let (index, isRTX) = inbound.classify(packet),
              let sender = inbound[index].hostSender else { return }
        let section = inbound[index]
        if isRTX {
            guard let mediaSSRC = section.mediaSSRC, let rtxPayloadType = section.rtxPayloadType,
                  let original = try? RTXPacket.unwrap(packet, configuration: RTXConfiguration(
                      ssrc: packet.ssrc, payloadType: rtxPayloadType, associatedPayloadType: section.codecPayloadType),
                      mediaSSRC: mediaSSRC) else { return }  // padding-only probes carry nothing to echo
            packet = original
        }
        packet.ssrc = SSRC(rawValue: sender.ssrc)
        // The peer's transport-wide sequence numbers and send times describe its own sending.
        let midID = inbound.extensions.midID
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
                guard let (host, peer) = echoedPair(hostSSRC: nack.mediaSSRC) else { continue }
                send([.nack(GenericNACK(senderSSRC: host, mediaSSRC: peer, pairs: nack.pairs))], from: host, to: peerID)
            case .pictureLossIndication(let pli):
                guard let (host, peer) = echoedPair(hostSSRC: pli.mediaSSRC) else { continue }
                send([.pictureLossIndication(PictureLossIndication(senderSSRC: host, mediaSSRC: peer))], from: host, to: peerID)
            case .fullIntraRequest(let fir):
                for entry in fir.entries {
                    guard let (host, peer) = echoedPair(hostSSRC: entry.ssrc) else { continue }
                    send([.pictureLossIndication(PictureLossIndication(senderSSRC: host, mediaSSRC: peer))], from: host, to: peerID)
                }
            case .senderReport(let report):
                guard let section = inbound.sections.first(where: { $0.mediaSSRC == report.ssrc }),
                      let sender = section.hostSender else { continue }
                var echoed = report
                echoed.ssrc = SSRC(rawValue: sender.ssrc)
                if let compound = try? RTCPPacket.serializeCompound(rtcp.report(localSSRC: echoed.ssrc, senderReport: echoed, reports: [])) {
                    port.sendRTCP(compound, to: peerID)
                }
            default:
                continue
            }
        }
    }

    /// The host's SSRC of an echo and the peer's SSRC it echoes.
    private func echoedPair(hostSSRC: SSRC) -> (host: SSRC, peer: SSRC)? {
        guard let section = inbound.section(sendingHostSSRC: hostSSRC), let peer = section.mediaSSRC else { return nil }
        return (hostSSRC, peer)
    }

    private func send(_ feedback: [RTCPPacket], from host: SSRC, to peerID: MediaPort.PeerID) {
        guard let compound = try? RTCPPacket.serializeCompound(rtcp.feedback(localSSRC: host, feedback)) else { return }
        port.sendRTCP(compound, to: peerID)
    }
}
