import Compositing
import Foundation
import Media
import RTP
import Testing
import Transport
import Wire
@testable import Server

/// One participant of the low bandwidth test: sends VP8 pictures of its colour, decodes the
/// composite the host sends on its video SSRC, and can report loss about that SSRC.
private final class LowBandwidthParticipant {
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
    private var consumed = 0
    private var rtcpSeen = 0
    private var keyFrameWanted = false
    /// Loss (1/256 units) reported about the host video SSRC in an RR every `reportInterval`;
    /// nil sends none.
    var reportedLoss: UInt8?
    private var lastReport: Instant?
    static let reportInterval: Duration = .milliseconds(200)

    init(name: String, client: EchoLoopbackClient, colour: YUVColor) throws {
        self.name = name
        self.client = client
        self.colour = colour
        encoder = try VP8Encoder(.init(width: 320, height: 180, framesPerSecond: 15, bitrate: 300_000, cpuUsed: -8))
        sender = try #require(VideoSender(payloadType: PayloadType(client.video.payloadType), ssrc: SSRC(client.video.ssrc)))
        receiver = try VideoReceiver()
        hostVideo = try #require(client.answer?.hostSSRCs[client.video.mid])
        receiver.onKeyFrameNeeded = { [unowned self] in keyFrameWanted = true }
    }

    /// Encodes and sends one picture of the participant's colour (a key frame if the host asked),
    /// and its loss report when one is due.
    func sendFrame() throws {
        for packet in client.rtcp[rtcpSeen...] {
            let packets = (try? RTCPPacket.parseCompound(packet)) ?? []
            for case .pictureLossIndication(let pli) in packets where pli.mediaSSRC.rawValue == client.video.ssrc {
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
            let block = ReceptionReport(ssrc: SSRC(hostVideo), fractionLost: reportedLoss)
            client.sendRTCP(try RTCPPacket.serializeCompound([.receiverReport(ReceiverReport(ssrc: SSRC(client.video.ssrc), reports: [block]))]))
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
            client.sendRTCP(try RTCPPacket.serializeCompound([
                .receiverReport(ReceiverReport(ssrc: me)),
                .pictureLossIndication(PictureLossIndication(senderSSRC: me, mediaSSRC: SSRC(hostVideo))),
            ]))
        }
    }

    /// Whether the latest composite is `width` wide and shows `expected` colours at their points.
    func shows(width: Int, _ expected: [(x: Double, y: Double, colour: YUVColor)]) -> Bool {
        guard let latest, latest.width == width else { return false }
        return expected.allSatisfy { point in
            let pixel = latest.pixel(x: min(latest.width - 1, Int(point.x * Double(latest.width))),
                                     y: min(latest.height - 1, Int(point.y * Double(latest.height))))
            return pixel.isClose(to: point.colour, tolerance: 24)
        }
    }

    var describe: String {
        "\(name): \(picturesDecoded) pictures, latest \(latest.map { "\($0.width)x\($0.height)" } ?? "none"), "
            + "\(receiver.statistics.keyFramesDecoded) key frames, \(receiver.statistics.decodeErrors) decode errors"
    }
}

/// The lower encoding end to end over loopback: two participants send their colours; b reports
/// 30 % loss about its host video SSRC, its bandwidth estimate falls under the threshold, and b
/// gets the composite from the lower encoding while a keeps the canvas size; both still see
/// both colours where the grid puts them, and b's switch decodes without errors (it starts at a
/// key frame of the lower encoding, on b's own SSRC and sequence numbering).
@Suite struct RoomVideoLowBandwidthTests {
    /// Sends pictures at 15 fps from both and decodes until `done` holds or `timeout` passes;
    /// the time it took, or nil.
    private func run(_ participants: [LowBandwidthParticipant], timeout: Duration, minimum: Duration = .zero,
                     until done: () -> Bool) throws -> Duration? {
        let clock = MonotonicClock()
        let start = clock.now()
        var next = start
        while clock.now() - start < timeout {
            for participant in participants { try participant.sendFrame() }
            next = next + .milliseconds(66)
            EchoLoopbackClient.service(participants.map(\.client), until: next)
            for participant in participants { try participant.decodeArrivals() }
            if clock.now() - start >= minimum, done() { return clock.now() - start }
        }
        return nil
    }

    private func metric(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix("\(name) ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func aLossyReceiverGetsTheLowerEncodingWhileTheOtherKeepsTheCanvasSize() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        // Small sizes keep the test light on a loaded machine; the pipeline is the same.
        config.video.width = 640
        config.video.height = 360
        config.video.fps = 15
        config.video.bitrate = 800_000
        config.video.lowWidth = 320
        config.video.lowHeight = 180
        config.video.lowBitrate = 300_000
        let host = try ConferenceHost(config: config)
        defer { host.stop() }
        let port = host.http.address.port
        let clock = MonotonicClock()
        let began = clock.now()
        var participants: [LowBandwidthParticipant] = []
        for (name, colour) in [("a", YUVColor(red: 220, green: 30, blue: 30)), ("b", YUVColor(red: 30, green: 200, blue: 30))] {
            let client = try EchoLoopbackClient(httpPort: port, name: name)
            try client.connect(timeout: .seconds(3), path: "/v1/rooms/lb/participants?identity=\(name)")
            participants.append(try LowBandwidthParticipant(name: name, client: client, colour: colour))
        }
        let (a, b) = (participants[0], participants[1])
        let grid = [(x: 0.25, y: 0.5, colour: a.colour), (x: 0.75, y: 0.5, colour: b.colour)]

        // Both on the main encoding first.
        let fullTime = try run(participants, timeout: .seconds(3), minimum: .milliseconds(500)) {
            a.shows(width: 640, grid) && b.shows(width: 640, grid)
        }
        #expect(fullTime != nil, "full size: \(a.describe); \(b.describe)")

        // b reports 30 % loss every 200 ms: its estimate (1 Mbit/s at first, 15 % less per
        // 300 ms) goes under 700 kbit/s within a second, and it switches to the lower encoding.
        b.reportedLoss = 77
        let lowTime = try run(participants, timeout: .seconds(4), minimum: .milliseconds(300)) {
            b.shows(width: 320, grid) && a.shows(width: 640, grid)
        }
        #expect(lowTime != nil, "b low: \(a.describe); \(b.describe)")
        for participant in participants {
            #expect(participant.receiver.statistics.decodeErrors == 0, "\(participant.describe)")
        }

        let metrics = try HTTPTestClient(port: port).send("GET", "/metrics").text
        #expect(metric("tessera_video_low_receivers", in: metrics) == 1, "\(metrics)")
        #expect((metric("tessera_video_low_frames_encoded", in: metrics) ?? 0) > 0)
        for participant in participants { #expect(try participant.client.delete() == 204) }
        let total = Double((clock.now() - began).nanosecondsClamped) / 1e9
        print("RoomVideoLowBandwidth: full \(fullTime.map { "\($0)" } ?? "timed out"), low \(lowTime.map { "\($0)" } ?? "timed out"); "
              + "\(a.describe); \(b.describe); whole test \(String(format: "%.2f", total)) s")
    }

    /// The detector's hysteresis on a manual clock: low under 700 kbit/s, back only above
    /// 1.2 Mbit/s, and never two changes within the dwell time.
    @Test func theDetectorSwitchesWithHysteresisAndDwell() {
        let host = SSRC(rawValue: 42)
        var detector = LowBandwidthDetector(hostVideo: host)
        let start = Instant(nanoseconds: 10_000_000_000)
        func report(_ loss: UInt8) -> [RTCPPacket] {
            [.receiverReport(ReceiverReport(ssrc: SSRC(rawValue: 7), reports: [ReceptionReport(ssrc: host, fractionLost: loss)]))]
        }
        // Reports about another SSRC change nothing.
        detector.receive([.receiverReport(ReceiverReport(ssrc: SSRC(rawValue: 7), reports: [ReceptionReport(ssrc: SSRC(rawValue: 9), fractionLost: 200)]))],
                         now: start)
        #expect(!detector.isLow)
        var now = start
        var becameLowAt: Instant?
        for _ in 0..<20 {
            now = now + .milliseconds(200)
            detector.receive(report(77), now: now)
            if detector.isLow, becameLowAt == nil { becameLowAt = now }
        }
        let lowAt = becameLowAt
        #expect(lowAt.map { $0 - start <= .seconds(2) } == true, "low at \(String(describing: lowAt))")
        // Clean reports: the estimate climbs 8 %/s; back on main only once above 1.2 Mbit/s.
        var backAt: Instant?
        for _ in 0..<300 {
            now = now + .milliseconds(200)
            detector.receive(report(0), now: now)
            if !detector.isLow {
                backAt = now
                break
            }
            #expect(detector.estimate.estimate(now: now).bitsPerSecond <= LowBandwidthDetector.highAbove)
        }
        #expect(backAt != nil)
        if let backAt, let lowAt { #expect(backAt - lowAt >= LowBandwidthDetector.minimumDwell) }
        // Loss right after going back: held for the dwell time.
        let back = now
        for _ in 0..<5 {
            now = now + .milliseconds(200)
            detector.receive(report(200), now: now)
        }
        #expect(!detector.isLow && now - back < LowBandwidthDetector.minimumDwell)
    }
}
