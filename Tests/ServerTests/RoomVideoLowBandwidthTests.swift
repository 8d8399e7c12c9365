import Sockets
import Compositing
import Foundation
import Media
import RTP
import Conference
import Testing
import WireTesting
import Transport
import Wire
@testable import Server

/// The lower encoding end to end over loopback: two participants send their colours; b reports
/// 30 % loss about its host video SSRC, its bandwidth estimate falls under the threshold, and b
/// gets the composite from the lower encoding while a keeps the canvas size; both still see
/// both colours where the grid puts them, and b's switch decodes without errors (it starts at a
/// key frame of the lower encoding, on b's own SSRC and sequence numbering).
@Suite struct RoomVideoLowBandwidthTests {
    /// Sends pictures at 15 fps from both and decodes until `done` holds or `timeout` passes;
    /// the time it took, or nil.
    private func run(_ participants: [VideoParticipant], timeout: Duration, minimum: Duration = .zero,
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
        var participants: [VideoParticipant] = []
        for (name, colour) in [("a", YUVColor(red: 220, green: 30, blue: 30)), ("b", YUVColor(red: 30, green: 200, blue: 30))] {
            let client = try EchoLoopbackClient(httpPort: port, name: name)
            try client.connect(timeout: .seconds(3), path: "/v1/rooms/lb/participants?identity=\(name)")
            participants.append(try VideoParticipant(name: name, client: client, colour: colour))
        }
        let (a, b) = (participants[0], participants[1])
        let grid = [(x: 0.25, y: 0.5, colour: a.colour), (x: 0.75, y: 0.5, colour: b.colour)]

        // Both on the main encoding first.
        let fullTime = try run(participants, timeout: .seconds(3), minimum: .milliseconds(500)) {
            a.shows(width: 640, grid) && b.shows(width: 640, grid)
        }
        #expect(fullTime != nil, "full size: \(a.summary); \(b.summary)")

        // b reports 30 % loss every 200 ms: its estimate (1 Mbit/s at first, 15 % less per
        // 300 ms) goes under 700 kbit/s within a second, and it switches to the lower encoding.
        b.reportedLoss = 77
        let lowTime = try run(participants, timeout: .seconds(4), minimum: .milliseconds(300)) {
            b.shows(width: 320, grid) && a.shows(width: 640, grid)
        }
        #expect(lowTime != nil, "b low: \(a.summary); \(b.summary)")
        for participant in participants {
            #expect(participant.receiver.statistics.decodeErrors == 0, "\(participant.summary)")
        }

        let metrics = try HTTPTestClient(port: port).send("GET", "/metrics").text
        #expect(metric("tessera_video_low_receivers", in: metrics) == 1, "\(metrics)")
        #expect((metric("tessera_video_low_frames_encoded", in: metrics) ?? 0) > 0)
        for participant in participants { #expect(try participant.client.delete() == 204) }
        let total = Double((clock.now() - began).nanosecondsClamped) / 1e9
        print("RoomVideoLowBandwidth: full \(fullTime.map { "\($0)" } ?? "timed out"), low \(lowTime.map { "\($0)" } ?? "timed out"); "
              + "\(a.summary); \(b.summary); whole test \(String(format: "%.2f", total)) s")
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

/// REMB as browsers send it: GCC keeps it near 1.5 times what the receiver gets.
@Suite struct LowBandwidthREMBTests {
    static let host = SSRC(rawValue: 42)

    static func remb(_ bitrate: UInt64) -> [RTCPPacket] {
        [.receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(senderSSRC: SSRC(rawValue: 7), bitrate: bitrate, ssrcs: [host]))]
    }

    /// Sends `bitsPerSecond` of video for `seconds` in 30 frames a second, with a REMB of
    /// `rembBitrate` and a receiver report without loss after each second; the time it ends.
    static func drive(_ detector: inout LowBandwidthDetector, from start: Instant, seconds: Int, bitsPerSecond: Int,
                      rembBitrate: UInt64) -> Instant {
        var now = start
        for _ in 0..<seconds {
            for _ in 0..<30 {
                now = now + .nanoseconds(33_333_333)
                detector.videoSent(bytes: bitsPerSecond / 8 / 30, now: now)
            }
            let noLoss = RTCPPacket.receiverReport(ReceiverReport(ssrc: SSRC(rawValue: 7), reports: [ReceptionReport(ssrc: host, fractionLost: 0)]))
            detector.receive(Self.remb(rembBitrate) + [noLoss], now: now)
        }
        return now
    }

    @Test func aLowREMBAboveWhatIsSentIsNoShortfall() {
        // A still composite: 300 kbit/s sent, REMB 450 kbit/s (under the 700 kbit/s threshold).
        var detector = LowBandwidthDetector(hostVideo: Self.host)
        _ = Self.drive(&detector, from: Instant(nanoseconds: 1_000_000_000), seconds: 10, bitsPerSecond: 300_000, rembBitrate: 450_000)
        #expect(!detector.isLow)
        #expect(detector.estimate.rembBitrate == nil)
    }

    @Test func aREMBUnderWhatIsSentMovesTheReceiverToTheLowerEncoding() {
        // 1.5 Mbit/s sent, the receiver says it can take 500 kbit/s.
        var detector = LowBandwidthDetector(hostVideo: Self.host)
        _ = Self.drive(&detector, from: Instant(nanoseconds: 1_000_000_000), seconds: 3, bitsPerSecond: 1_500_000, rembBitrate: 500_000)
        #expect(detector.isLow)
        #expect(detector.estimate.rembBitrate == 500_000)
    }

    @Test func aReceiverWhoseREMBFollowsTheLowerEncodingClimbsBack() {
        var detector = LowBandwidthDetector(hostVideo: Self.host)
        let low = Self.drive(&detector, from: Instant(nanoseconds: 1_000_000_000), seconds: 3, bitsPerSecond: 1_500_000, rembBitrate: 500_000)
        #expect(detector.isLow)
        // On the lower encoding (300 kbit/s) its REMB is 1.5 times that, and nothing is lost: the
        // loss-based estimate climbs over the 1.2 Mbit/s threshold and the dwell time passes.
        let later = Self.drive(&detector, from: low, seconds: 8, bitsPerSecond: 300_000, rembBitrate: 450_000)
        #expect(!detector.isLow, "estimate \(detector.estimate.estimate(now: later).bitsPerSecond)")
    }
}
