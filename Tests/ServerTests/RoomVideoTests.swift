import Sockets
import Compositing
import Foundation
import Media
import RTP
import Conference
import Testing
import Transport
import Wire
import WireTesting
@testable import Server

/// The room composite end to end over real UDP on 127.0.0.1: three participants join with
/// Tessera's own client stack, each sends VP8 pictures of its own solid colour, and each decodes
/// the composite the host sends on its video SSRC and finds the colours where the layout puts
/// them: the grid, then a custom template, then a leaver's placeholder, then a grid of two.
/// Every wait is bounded by a deadline; the clients are driven by `poll(2)`, nothing sleeps.
@Suite struct RoomVideoTests {
    /// Sends pictures at 15 fps from every participant and decodes the composite until every
    /// participant in `watching` shows `expected` (after at least `minimum`), or `timeout` passes;
    /// the time it took, or nil.
    private func run(_ participants: [VideoParticipant], watching: [VideoParticipant],
                     until expected: [(x: Double, y: Double, colour: YUVColor)], timeout: Duration,
                     minimum: Duration = .zero) throws -> Duration? {
        let clock = MonotonicClock()
        let start = clock.now()
        var next = start
        while clock.now() - start < timeout {
            for participant in participants {
                try participant.sendFrame()
                try participant.sendAudio()
            }
            next = next + .milliseconds(66)
            EchoLoopbackClient.service(participants.map(\.client), until: next)
            for participant in participants { try participant.decodeArrivals() }
            if clock.now() - start >= minimum, watching.allSatisfy({ $0.shows(expected) }) { return clock.now() - start }
        }
        return nil
    }

    private static func milliseconds(_ duration: Duration?) -> String {
        duration.map { String(format: "%.0f ms", Double($0.nanosecondsClamped) / 1e6) } ?? "timed out"
    }

    @Test func threeParticipantsSeeTheirColoursWhereTheLayoutPutsThem() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        // A small canvas keeps the test light on a loaded machine; the pipeline is the same.
        config.video.width = 640
        config.video.height = 360
        config.video.fps = 15
        config.video.bitrate = 600_000
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let port = host.http.address.port
        let clock = MonotonicClock()
        let began = clock.now()
        let colours = [("a", YUVColor(red: 220, green: 30, blue: 30)), ("b", YUVColor(red: 30, green: 200, blue: 30)),
                       ("c", YUVColor(red: 30, green: 30, blue: 220))]
        var participants: [VideoParticipant] = []
        for (name, colour) in colours {
            let client = try EchoLoopbackClient(httpPort: port, name: name)
            try client.connect(timeout: .seconds(3), path: "/v1/rooms/r/participants?identity=\(name)")
            participants.append(try VideoParticipant(name: name, client: client, colour: colour))
        }
        let (a, b, c) = (participants[0], participants[1], participants[2])

        // The grid of three: two on top, the third centred below.
        let grid3 = [(x: 0.25, y: 0.25, colour: a.colour), (x: 0.75, y: 0.25, colour: b.colour), (x: 0.5, y: 0.75, colour: c.colour)]
        // A second and a half of media first, so the pipeline runs in its steady state.
        let gridTime = try run(participants, watching: participants, until: grid3, timeout: .seconds(4), minimum: .milliseconds(1500))
        #expect(gridTime != nil, "grid of 3: \(participants.map { $0.describe(grid3.map { ($0.x, $0.y) }) })")
        for participant in participants {
            #expect(participant.picturesDecoded >= 10, "\(participant.name) decoded \(participant.picturesDecoded) composite pictures")
            #expect(participant.receiver.statistics.decodeErrors == 0)
        }

        // Eleven PLIs and a FIR from the three at once: one key frame answers them all (the
        // room's pacer grants one per 500 ms, so twelve requests cannot make twelve), and every
        // receiver decodes it.
        let keyFramesBefore = participants.map(\.receiver.statistics.keyFramesDecoded)
        for participant in participants { try participant.requestKeyFrames(plis: participant === a ? 5 : 3, fir: participant === a) }
        _ = try run(participants, watching: participants, until: grid3, timeout: .seconds(2), minimum: .milliseconds(400))
        let keyFramesAfter = participants.map(\.receiver.statistics.keyFramesDecoded)
        for (before, after) in zip(keyFramesBefore, keyFramesAfter) {
            // One, or two when the requests straddled a tick (the second held for 500 ms).
            #expect((1...2).contains(after - before), "key frames decoded by each: before \(keyFramesBefore), after \(keyFramesAfter)")
        }

        // The room as GET shows it: each participant's microphone and camera (live, rendering,
        // at the size it sends), the main encoding with three receivers, the grid in use.
        let http = HTTPTestClient(port: port)
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(http.send("GET", "/v1/rooms/r").body)) as? [String: Any])
        let members = try #require(shown["participants"] as? [[String: Any]])
        #expect(members.map { $0["identity"] as? String } == ["a", "b", "c"])
        for member in members {
            let tracks = try #require(member["tracks"] as? [[String: Any]])
            #expect(tracks.map { $0["source"] as? String } == ["microphone", "camera"])
            let camera = tracks[1]
            #expect(camera["state"] as? String == "live" && camera["rendering"] as? Bool == true && camera["muted"] as? Bool == false)
            #expect(camera["width"] as? Int == 320 && camera["height"] as? Int == 180 && (camera["fps"] as? Int ?? 0) > 0, "\(camera)")
            #expect(camera["subscribers"] as? [String] == [])
            #expect(member["speaking"] is Bool)
        }
        let outputs = try #require(shown["outputs"] as? [[String: Any]])
        #expect(outputs.first?["encoding"] as? String == "main" && outputs.first?["receivers"] as? Int == 3, "\(outputs)")
        #expect((shown["layout"] as? [String: Any])?["positions"] != nil && shown["recordings"] as? [Any] != nil)
        #expect(shown["preset"] as? String == "grid")

        // Subscriptions refused with the reason: a's session has no m-line besides the
        // composite's (409), no such participant or subscription (404), a body or source that
        // makes no sense (400).
        let subscriptions = try #require(a.client.answer?.location) + "/subscriptions"
        func subscribe(_ body: String) throws -> HTTPTestClient.Response {
            try http.send("POST", subscriptions, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        }
        let full = try subscribe(#"{"participant": "b", "source": "camera"}"#)
        #expect(full.status == 409 && full.text.contains("no free m-line"), "\(full.text)")
        #expect(try subscribe(#"{"participant": "zed", "source": "camera"}"#).status == 404)
        #expect(try subscribe(#"{"participant": "b", "source": "screen"}"#).status == 404)
        #expect(try subscribe(#"{"participant": "b", "source": "feet"}"#).status == 400)
        #expect(try subscribe(#"{"participant": "b"}"#).status == 400)
        #expect(try subscribe(#"{"participant": "b", "source": "camera", "extra": 1}"#).status == 400)
        #expect(try http.send("DELETE", subscriptions + "/b/camera").status == 404)
        let noTrack = try http.send("POST", "/v1/rooms/r/viewers?participant=zed&source=camera", headers: ["Content-Type": "application/sdp"],
                                    body: a.client.offer().serializedBytes())
        #expect(noTrack.status == 404, "\(noTrack.text)")

        // b's placeholder picture (a PNG), shown while its camera is muted; the colour again after.
        let yellow = YUVColor(red: 230, green: 220, blue: 20)
        let bLocation = try #require(b.client.answer?.location)
        let png = try stillPicture(codec: "png", pixelFormat: "rgb24", rgb: "E6DC14", width: 160, height: 90)
        let putPicture = try http.send("PUT", bLocation + "/placeholder", headers: ["Content-Type": "image/png"], body: png)
        #expect(putPicture.status == 204, "\(putPicture.text)")
        #expect(try http.send("PUT", bLocation + "/placeholder", headers: ["Content-Type": "image/png"], body: Array("not a picture".utf8)).status == 415)
        #expect(try http.send("PUT", bLocation + "/placeholder", headers: ["Content-Type": "image/png"], body: Array(png.prefix(40))).status == 400)
        let mute = try http.send("PATCH", bLocation, headers: ["Content-Type": "application/json"], body: Array(#"{"muted": {"video": true}}"#.utf8))
        #expect(mute.status == 200)
        let placeholderShown = try run(participants, watching: [a], until: [(x: 0.75, y: 0.25, colour: yellow), (x: 0.25, y: 0.25, colour: a.colour)],
                                       timeout: .seconds(3))
        #expect(placeholderShown != nil, "b muted: \(a.describe([(0.75, 0.25)]))")
        _ = try http.send("PATCH", bLocation, headers: ["Content-Type": "application/json"], body: Array(#"{"muted": {"video": false}}"#.utf8))
        #expect(try run(participants, watching: [a], until: grid3, timeout: .seconds(3)) != nil, "b unmuted: \(a.describe([(0.75, 0.25)]))")
        #expect(try http.send("DELETE", bLocation + "/placeholder").status == 204)

        // A custom template swaps a and b.
        let swapped = #"""
            {"canvas": {"width": 640, "height": 360, "fps": 15},
             "positions": [
               {"participant": "a", "rect": {"x": 0.5, "y": 0, "width": 0.5, "height": 0.5}},
               {"participant": "b", "rect": {"x": 0, "y": 0, "width": 0.5, "height": 0.5}},
               {"participant": "c", "rect": {"x": 0.25, "y": 0.5, "width": 0.5, "height": 0.5}}]}
            """#
        let put = try http.send("PUT", "/v1/rooms/r/layout", headers: ["Content-Type": "application/json"], body: Array(swapped.utf8))
        #expect(put.status == 200, "\(put.text)")
        let answered = try JSONDecoder().decode(TemplateDescription.self, from: Data(put.body))
        #expect(answered.positions.map(\.participant) == ["a", "b", "c"])
        let swap = [(x: 0.75, y: 0.25, colour: a.colour), (x: 0.25, y: 0.25, colour: b.colour), (x: 0.5, y: 0.75, colour: c.colour)]
        let swapTime = try run(participants, watching: participants, until: swap, timeout: .seconds(2))
        #expect(swapTime != nil, "swapped: \(participants.map { $0.describe(swap.map { ($0.x, $0.y) }) })")

        // c leaves: its tile shows its placeholder (the custom template stays).
        #expect(try c.client.delete() == 204)
        let placeholder = [(x: 0.75, y: 0.25, colour: a.colour), (x: 0.25, y: 0.25, colour: b.colour),
                           (x: 0.5, y: 0.75, colour: Room.placeholderColor)]
        let leaveTime = try run([a, b], watching: [a, b], until: placeholder, timeout: .seconds(2))
        #expect(leaveTime != nil, "c left: \([a, b].map { $0.describe(placeholder.map { ($0.x, $0.y) }) })")

        // Back to the grid preset: a grid of two, side by side.
        let preset = try http.send("PUT", "/v1/rooms/r/layout", headers: ["Content-Type": "application/json"],
                                   body: Array(#"{"preset": "grid"}"#.utf8))
        #expect(preset.status == 200, "\(preset.text)")
        let grid2 = [(x: 0.25, y: 0.5, colour: a.colour), (x: 0.75, y: 0.5, colour: b.colour)]
        let grid2Time = try run([a, b], watching: [a, b], until: grid2, timeout: .seconds(2))
        #expect(grid2Time != nil, "grid of 2: \([a, b].map { $0.describe(grid2.map { ($0.x, $0.y) }) })")
        let layout = try http.send("GET", "/v1/rooms/r/layout")
        let current = try JSONDecoder().decode(TemplateDescription.self, from: Data(layout.body))
        #expect(current.positions.map(\.participant) == ["a", "b"])
        #expect(current.positions.map(\.rect) == [.init(x: 0, y: 0, width: 0.5, height: 1), .init(x: 0.5, y: 0, width: 0.5, height: 1)])

        // The speaker preset: the first to join (a) in the main tile until someone speaks; then b
        // talks, the detector picks b, and b takes the main tile with a in the strip below.
        let speakerPreset = try http.send("PUT", "/v1/rooms/r/layout", headers: ["Content-Type": "application/json"],
                                          body: Array(#"{"preset": "speaker"}"#.utf8))
        #expect(speakerPreset.status == 200, "\(speakerPreset.text)")
        b.talks = true
        let speaker = [(x: 0.5, y: 0.375, colour: b.colour), (x: 0.5, y: 0.875, colour: a.colour)]
        let speakerTime = try run([a, b], watching: [a, b], until: speaker, timeout: .seconds(3))
        #expect(speakerTime != nil, "b speaks: \([a, b].map { $0.describe(speaker.map { ($0.x, $0.y) }) })")
        let speakerLayout = try JSONDecoder().decode(TemplateDescription.self, from: Data(try http.send("GET", "/v1/rooms/r/layout").body))
        #expect(speakerLayout.positions.map(\.participant) == ["b", "a"])

        let metrics = try http.send("GET", "/metrics").text
        let encoded = metrics.split(separator: "\n").first { $0.hasPrefix("tessera_video_frames_encoded ") } ?? "none"
        let dropped = metrics.split(separator: "\n").first { $0.hasPrefix("tessera_video_pictures_dropped ") } ?? "none"
        let encodeSeconds = metrics.split(separator: "\n").first { $0.hasPrefix("tessera_video_encode_seconds ") } ?? "none"
        for participant in [a, b] { #expect(try participant.client.delete() == 204) }
        let total = Double((clock.now() - began).nanosecondsClamped) / 1e9
        print("RoomVideo: grid \(Self.milliseconds(gridTime)), swap \(Self.milliseconds(swapTime)), leave \(Self.milliseconds(leaveTime)), "
              + "grid of 2 \(Self.milliseconds(grid2Time)), speaker \(Self.milliseconds(speakerTime)); \(encoded), \(encodeSeconds), \(dropped); PLIs to clients "
              + "\(participants.map(\.plisReceived)); key frames decoded \(participants.map(\.receiver.statistics.keyFramesDecoded)); whole test \(String(format: "%.2f", total)) s")
    }

    @Test func layoutCallsRefuseBadTemplatesUnknownParticipantsAndPresetsAndMissingRooms() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let port = host.http.address.port
        let client = try EchoLoopbackClient(httpPort: port, name: "alice")
        try client.post(path: "/v1/rooms/r/participants?identity=alice")
        let http = HTTPTestClient(port: port)
        func put(_ room: String, _ body: String, type: String = "application/json") throws -> HTTPTestClient.Response {
            try http.send("PUT", "/v1/rooms/\(room)/layout", headers: ["Content-Type": type], body: Array(body.utf8))
        }
        func template(_ participant: String, x: Double = 0) -> String {
            #"{"canvas": {"width": 1280, "height": 720}, "positions": [{"participant": "\#(participant)", "rect": {"x": \#(x), "y": 0, "width": 0.5, "height": 1}}]}"#
        }

        let outside = try put("r", template("alice", x: 1.5))
        #expect(outside.status == 400 && outside.text.contains("positions[0].rect.x"), "\(outside.text)")
        let stranger = try put("r", template("zed"))
        #expect(stranger.status == 400 && stranger.text.contains("zed"), "\(stranger.text)")
        let preset = try put("r", #"{"preset": "mosaic"}"#)
        #expect(preset.status == 400 && preset.text.contains("mosaic"), "\(preset.text)")
        let missing = try put("nowhere", #"{"preset": "grid"}"#)
        #expect(missing.status == 404, "\(missing.text)")
        #expect(try http.send("GET", "/v1/rooms/nowhere/layout").status == 404)
        #expect(try put("r", "{not json").status == 400)
        #expect(try put("r", #"{"preset": "grid"}"#, type: "text/plain").status == 415)

        // What works: a template naming alice, then a preset; GET tells what is in use.
        let good = try put("r", template("alice"))
        #expect(good.status == 200, "\(good.text)")
        let speaker = try put("r", #"{"preset": "speaker"}"#)
        #expect(speaker.status == 200, "\(speaker.text)")
        let shown = try http.send("GET", "/v1/rooms/r/layout")
        let description = try JSONDecoder().decode(TemplateDescription.self, from: Data(shown.body))
        #expect(description.positions.map(\.participant) == ["alice"])
        #expect(description.positions.first?.rect == .full)
    }
}
