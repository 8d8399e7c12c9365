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
        config.video.smallWidth = 160
        config.video.smallHeight = 90
        config.video.smallBitrate = 100_000
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
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

        // b reports 30 % loss every 200 ms: its estimate (800 kbit/s at first, 15 % less per
        // 300 ms) goes under 45 % of that within two seconds, and it switches to the lower
        // encoding. Then its reports are clean, so it stays there a while.
        b.reportedLoss = 77
        let lowTime = try run(participants, timeout: .seconds(4), minimum: .milliseconds(300)) {
            b.shows(width: 320, grid) && a.shows(width: 640, grid)
        }
        b.reportedLoss = 0
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
}
