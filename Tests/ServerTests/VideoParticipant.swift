import Sockets
import Foundation
import Media
import RTP
import MediaTesting
import Testing
import Transport
import Wire
@testable import Server

/// One participant of the room video tests: its client stack, the VP8 encoder of its solid
/// colour, the decoder of the composite the host sends on its video section, and (when
/// `reportedLoss` is set) receiver reports of loss about that composite.
final class VideoParticipant {
    let name: String
    let client: EchoLoopbackClient
    let colour: YUVColor
    let encoder: VP8Encoder
    var sender: VideoSender
    let receiver: VideoReceiver
    let hostVideo: UInt32
    /// The last composite picture decoded.
    private(set) var latest: I420Frame?
    private(set) var picturesDecoded = 0
    private(set) var plisReceived = 0
    private var consumed = 0
    private var rtcpSeen = 0
    private var keyFrameWanted = false
    private let start: Instant
    /// Sends a tone on its audio section while set (it becomes the active speaker).
    var talks = false
    private let opus: OpusEncoder
    private var audioStart: Instant?
    private var audioSent = 0
    /// Loss (1/256 units) reported about the host video SSRC in an RR every `reportInterval`
    /// (over 25 packets a report, in its cumulative lost); nil sends none.
    var reportedLoss: UInt8?
    private var lastReport: Instant?
    private var reportedHighest: UInt32 = 1000
    private var reportedCumulativeLoss = 0.0
    static let reportInterval: Duration = .milliseconds(200)

    init(name: String, client: EchoLoopbackClient, colour: YUVColor) throws {
        self.name = name
        self.client = client
        self.colour = colour
        encoder = try VP8Encoder(.init(width: 320, height: 180, framesPerSecond: 15, bitrate: 300_000, cpuUsed: -8))
        sender = try #require(VideoSender(payloadType: PayloadType(client.video.payloadType), ssrc: SSRC(client.video.ssrc)))
        receiver = try VideoReceiver()
        // A sendonly guest is sent no composite: no host SSRC (0 matches nothing it receives).
        hostVideo = client.answer?.hostSSRCs[client.video.mid] ?? 0
        start = client.clock.now()
        opus = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        receiver.onKeyFrameNeeded = { [unowned self] in keyFrameWanted = true }
    }

    /// Encodes and sends one picture of the participant's colour (a key frame if the host asked),
    /// and its loss report when one is due.
    func sendFrame() throws {
        for packet in client.rtcp[rtcpSeen...] {
            let packets = (try? RTCPPacket.parseCompound(packet)) ?? []
            for case .pictureLossIndication(let pli) in packets where pli.mediaSSRC.rawValue == client.video.ssrc {
                plisReceived += 1
                encoder.requestKeyFrame()
            }
        }
        rtcpSeen = client.rtcp.count
        let now = client.clock.now()
        let picture = I420Frame(width: 320, height: 180, color: colour, timestamp: now)
        for frame in try encoder.encode(picture) {
            for var packet in sender.packetize(frame) {
                packet.extensions = client.midExtension(client.video.mid)
                client.send(packet)
            }
        }
        if let reportedLoss, lastReport.map({ now - $0 >= Self.reportInterval }) ?? true {
            lastReport = now
            reportedHighest += 25
            reportedCumulativeLoss += 25 * Double(reportedLoss) / 256
            let block = ReceptionReport(ssrc: SSRC(hostVideo), fractionLost: reportedLoss, cumulativeLost: Int32(reportedCumulativeLoss),
                                        extendedHighestSequenceNumber: reportedHighest)
            client.sendRTCP(try RTCPPacket.serializeCompound([.receiverReport(ReceiverReport(ssrc: SSRC(client.video.ssrc), reports: [block]))]))
        }
    }

    /// While `talks`: sends 20 ms Opus packets of a tone, as many as wall time calls for (and
    /// 40 ms ahead, so the host's jitter buffer does not run dry between rounds).
    func sendAudio() throws {
        guard talks else { return }
        let now = client.clock.now()
        let start = audioStart ?? now
        audioStart = start
        while Duration.milliseconds(20 * audioSent) <= now - start + .milliseconds(40) {
            let payload = try opus.encode(toneFrame(660, frame: audioSent))
            client.send(RTPPacket(payloadType: PayloadType(client.audio.payloadType), sequenceNumber: UInt16(truncatingIfNeeded: 1000 + audioSent),
                                  timestamp: UInt32(48_000 + audioSent * 960), ssrc: SSRC(client.audio.ssrc),
                                  extensions: client.midExtension(client.audio.mid), payload: payload[...]))
            audioSent += 1
        }
    }

    /// Decodes what arrived of the composite; asks the host for a key frame when the decoder
    /// needs one.
    func decodeArrivals() throws {
        let now = client.clock.now()
        let arrived = client.echoes[consumed...]
        consumed = client.echoes.count
        for packet in arrived where packet.ssrc.rawValue == hostVideo {
            for picture in receiver.receive(packet, now: now) {
                latest = picture
                picturesDecoded += 1
            }
        }
        if keyFrameWanted {
            keyFrameWanted = false
            let me = SSRC(client.video.ssrc)
            let compound = try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: me)),
                .pictureLossIndication(PictureLossIndication(senderSSRC: me, mediaSSRC: SSRC(hostVideo))),
            ])
            client.sendRTCP(compound)
        }
    }

    /// Asks the host for a key frame of the composite: `plis` PLIs, and a FIR if `fir`.
    func requestKeyFrames(plis: Int, fir: Bool) throws {
        let me = SSRC(client.video.ssrc)
        for _ in 0..<plis {
            client.sendRTCP(try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: me)),
                .pictureLossIndication(PictureLossIndication(senderSSRC: me, mediaSSRC: SSRC(hostVideo))),
            ]))
        }
        if fir {
            client.sendRTCP(try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: me)),
                .fullIntraRequest(FullIntraRequest(senderSSRC: me, entries: [FIREntry(ssrc: SSRC(hostVideo), sequenceNumber: 1)])),
            ]))
        }
    }

    /// The composite's colour at (`x`, `y`), fractions of the picture; nil before any picture.
    func colour(atX x: Double, y: Double) -> YUVColor? {
        guard let latest else { return nil }
        return latest.pixel(x: min(latest.width - 1, Int(x * Double(latest.width))), y: min(latest.height - 1, Int(y * Double(latest.height))))
    }

    /// Whether the composite (`width` wide, when given) shows `expected` colours at their points.
    func shows(width: Int? = nil, _ expected: [(x: Double, y: Double, colour: YUVColor)]) -> Bool {
        if let width, latest?.width != width { return false }
        return expected.allSatisfy { colour(atX: $0.x, y: $0.y)?.isClose(to: $0.colour, tolerance: 24) == true }
    }

    func describe(_ points: [(x: Double, y: Double)]) -> String {
        "\(name) (\(picturesDecoded) pictures, \(latest.map { "\($0.width)x\($0.height)" } ?? "none")): "
            + points.map { "(\($0.x), \($0.y)) \(colour(atX: $0.x, y: $0.y).map(\.description) ?? "-")" }.joined(separator: " ")
    }

    var summary: String {
        "\(name): \(picturesDecoded) pictures, latest \(latest.map { "\($0.width)x\($0.height)" } ?? "none"), "
            + "\(receiver.statistics.keyFramesDecoded) key frames, \(receiver.statistics.decodeErrors) decode errors"
    }
}
