import Client
@testable import Conference
import Load
import Media
import RTP
import SDP
import Testing
import Transport
import Wire

/// A camera sent in three simulcast layers, as the load generator and Chrome send it: the host
/// decodes one layer, the one nearest the tile, and moves to another only at its key frame. The
/// pictures that reach the decoder say which: their size.
@Suite struct SimulcastInboundTests {
    static let layers = [ClientOffer.SimulcastLayer(rid: "q", ssrc: 101, rtxSSRC: 201),
                         ClientOffer.SimulcastLayer(rid: "h", ssrc: 102, rtxSSRC: 202),
                         ClientOffer.SimulcastLayer(rid: "f", ssrc: 103, rtxSSRC: 203)]
    static let sizes = [(160, 96), (320, 192), (640, 384)]

    final class Camera {
        let inbound: ParticipantInbound
        var encoders: [VP8Encoder] = []
        var senders: [VideoSender] = []
        var sessions: [VideoDecodeStream: VideoDecodeSession] = [:]
        /// The width of each picture decoded, in order.
        var decodedWidths: [Int] = []
        var now = Instant(nanoseconds: 5_000_000_000)
        var keyFrameRequests: [UInt32] = []

        init() throws {
            let offer = ClientOffer(ice: ICECredentials.random(), fingerprint: CertificateFingerprint(algorithm: "sha-256", digest: Array(repeating: 7, count: 32)),
                                    cname: "cam", sections: [.opus(mid: "0", ssrc: 100), .vp8(mid: "1", layers: SimulcastInboundTests.layers)])
            let host = HostParameters(iceUsernameFragment: "host", icePassword: "hostpasswordhostpassword",
                                      fingerprintSHA256: Array(repeating: "AB", count: 32).joined(separator: ":"),
                                      candidateAddresses: [HostCandidateAddress(address: "127.0.0.1", port: 50_000)], senders: [:], sessionID: 1)
            let negotiated = try negotiate(offer: offer.description, host: host)
            #expect(negotiated.media.first { $0.mid == "1" }?.peerRIDs == ["q", "h", "f"])
            inbound = ParticipantInbound(negotiated: negotiated, id: "p", identity: "cam", seed: 1, now: now)
            for (index, size) in SimulcastInboundTests.sizes.enumerated() {
                encoders.append(try VP8Encoder(.init(width: size.0, height: size.1, framesPerSecond: 15, bitrate: 300_000)))
                guard let sender = VideoSender(payloadType: PayloadType(96), ssrc: SSRC(SimulcastInboundTests.layers[index].ssrc)) else {
                    throw HarnessError.setup("no packetizer")
                }
                senders.append(sender)
            }
        }

        /// One picture on every layer (key frames where asked, or on `key`), each packet with
        /// its mid and rid; then the decode jobs are decoded, and the PLIs read.
        func send(key: Bool = false) throws {
            now = now + .milliseconds(66)
            for index in encoders.indices {
                if key || keyFrameRequests.contains(SimulcastInboundTests.layers[index].ssrc) { encoders[index].requestKeyFrame() }
                let size = SimulcastInboundTests.sizes[index]
                for frame in try encoders[index].encode(I420Frame(width: size.0, height: size.1, color: YUVColor(y: 120, u: 90, v: 200), timestamp: now)) {
                    for var packet in senders[index].packetize(frame) {
                        packet.extensions = [RTPHeaderExtension(id: 1, data: Array("1".utf8)),
                                             RTPHeaderExtension(id: 4, data: Array(SimulcastInboundTests.layers[index].rid.utf8))]
                        _ = inbound.receiveRTP(try packet.serialized(), now: now)
                    }
                }
            }
            keyFrameRequests = []
            for output in inbound.takeOutputs() {
                guard case .decode(let request) = output else { continue }
                let session = try sessions[request.stream] ?? VideoDecodeSession(maximumPixels: request.maximumPixels)
                sessions[request.stream] = session
                let result = session.decode(request.job)
                if case .picture(let picture) = result.outcome { decodedWidths.append(picture.width) }
                _ = inbound.pictureDecoded(result, of: request.stream, now: now)
            }
            for compound in inbound.pollRTCP(now: now) {
                for case .pictureLossIndication(let pli) in (try? RTCPPacket.parseCompound(compound)) ?? [] {
                    keyFrameRequests.append(pli.mediaSSRC.rawValue)
                }
            }
        }
    }

    @Test func onlyTheLayerNearestTheTileIsDecodedAndSwitchesComeAtKeyFrames() throws {
        let camera = try Camera()
        // A tile 600 pixels wide: the 640 layer.
        camera.inbound.setCameraWantedWidth(600)
        try camera.send(key: true)
        for _ in 0..<10 { try camera.send() }
        #expect(camera.inbound.cameraLayers?.decodedRID == "f")
        #expect(Array(camera.decodedWidths.suffix(8)) == Array(repeating: 640, count: 8), "\(camera.decodedWidths)")

        // The grid grows: a 128-pixel tile takes the 160 layer, from its key frame, which the
        // host asks for; until it comes the 640 layer goes on (no broken picture, no gap).
        camera.decodedWidths = []
        camera.inbound.setCameraWantedWidth(128)
        try camera.send()
        #expect(camera.keyFrameRequests.contains(101) || camera.inbound.cameraLayers?.decodedRID == "q", "a PLI for the q layer")
        for _ in 0..<10 { try camera.send() }
        #expect(camera.inbound.cameraLayers?.decodedRID == "q")
        let widths = camera.decodedWidths
        let firstSmall = widths.firstIndex(of: 160) ?? widths.count
        #expect(firstSmall > 0 && firstSmall < widths.count, "the 640 layer, then the 160 one: \(widths)")
        #expect(widths[..<firstSmall].allSatisfy { $0 == 640 } && widths[firstSmall...].allSatisfy { $0 == 160 }, "\(widths)")
        #expect(camera.inbound.cameraTrack.frameSize?.width == 160 || camera.inbound.cameraTrack.frameSize == nil)
    }
}
