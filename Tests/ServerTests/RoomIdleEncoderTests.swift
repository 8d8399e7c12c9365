import Foundation
import Media
import Sockets
import Testing
import Wire
@testable import Server

/// A room nobody receives the composite of encodes nothing: a real host, guests on its media
/// port, read through `/metrics` as an operator would.
@Suite struct RoomIdleEncoderTests {
    /// Sends each participant's pictures for `duration`, servicing every client.
    private func run(_ participants: [VideoParticipant], for duration: Duration) throws {
        let clock = MonotonicClock()
        let start = clock.now()
        var next = start
        while clock.now() - start < duration {
            for participant in participants { try participant.sendFrame() }
            next = next + .milliseconds(66)
            EchoLoopbackClient.service(participants.map(\.client), until: next)
            for participant in participants { try participant.decodeArrivals() }
        }
    }

    private func metric(_ text: String, _ name: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Two sendonly guests: their cameras are decoded, no composite frame is encoded and no
    /// encoder thread runs. A guest that receives starts one; when it leaves the encoder stops
    /// and the count of frames encoded stays where it was.
    @Test func sendonlyGuestsStartNoEncoderAndTheLastReceiverLeavingStopsIt() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        config.video.width = 320
        config.video.height = 180
        config.video.fps = 15
        config.video.bitrate = 300_000
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let port = host.http.address.port
        let http = HTTPTestClient(port: port)
        var senders: [VideoParticipant] = []
        for (name, colour) in [("a", YUVColor(red: 220, green: 30, blue: 30)), ("b", YUVColor(red: 30, green: 200, blue: 30))] {
            let client = try EchoLoopbackClient(httpPort: port, name: name)
            let sendonly: [EchoLoopbackClient.Section] = [.opus(mid: client.audio.mid, ssrc: client.audio.ssrc, direction: .sendonly),
                                                          .vp8(mid: client.video.mid, ssrc: client.video.ssrc, rtxSSRC: client.video.rtxSSRC,
                                                               direction: .sendonly)]
            try client.connect(timeout: .seconds(3), path: "/v1/rooms/idle/participants?identity=\(name)", offer: client.offer(sendonly))
            senders.append(try VideoParticipant(name: name, client: client, colour: colour))
        }
        try run(senders, for: .seconds(2))
        var text = try http.send("GET", "/metrics").text
        #expect((metric(text, #"tessera_camera_frames{result="decoded"}"#) ?? 0) > 10, "the cameras arrive")
        #expect(metric(text, "tessera_video_frames_encoded") == 0)
        #expect(metric(text, "tessera_video_frames_composed") == 0)
        #expect(metric(text, "tessera_video_encoders_running") == 0)

        let client = try EchoLoopbackClient(httpPort: port, name: "c")
        try client.connect(timeout: .seconds(3), path: "/v1/rooms/idle/participants?identity=c")
        let receiver = try VideoParticipant(name: "c", client: client, colour: YUVColor(red: 30, green: 30, blue: 220))
        try run(senders + [receiver], for: .seconds(2))
        text = try http.send("GET", "/metrics").text
        #expect(metric(text, "tessera_video_encoders_running") == 1)
        #expect((metric(text, "tessera_video_frames_encoded") ?? 0) > 10)
        #expect(receiver.picturesDecoded > 5)

        #expect(try receiver.client.delete() == 204)
        try run(senders, for: .milliseconds(500))
        text = try http.send("GET", "/metrics").text
        let encoded = metric(text, "tessera_video_frames_encoded")
        #expect(metric(text, "tessera_video_encoders_running") == 0)
        try run(senders, for: .seconds(1))
        text = try http.send("GET", "/metrics").text
        #expect(metric(text, "tessera_video_frames_encoded") == encoded, "no frame encoded for nobody")
        #expect(metric(text, "tessera_video_encoders_running") == 0)
    }
}
