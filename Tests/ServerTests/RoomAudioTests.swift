import Sockets
import Foundation
import Media
import RTP
import Conference
import MediaTesting
import Testing
import WireTesting
import Transport
import Wire
@testable import Server

/// A room's audio end to end over real UDP on 127.0.0.1: three participants join with Tessera's
/// own client stack (`EchoLoopbackClient`), each sends 20 ms Opus packets of its own tone, and
/// each decodes what the host sends on its audio SSRC: the other two tones, never its own. Every
/// wait is bounded by a deadline; the clients are driven by `poll(2)`, nothing sleeps.
@Suite struct RoomAudioTests {
    @Test func threeParticipantsEachHearTheOtherTwoTonesAndNotTheirOwn() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("recordings-\(UUID().uuidString)")
        config.recordings.folder = folder.path
        defer { try? FileManager.default.removeItem(at: folder) }
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let names = ["a", "b", "c"]
        let clients = try names.map { try EchoLoopbackClient(httpPort: host.http.address.port, name: $0) }
        for (name, client) in zip(names, clients) {
            try client.connect(timeout: .seconds(3), path: "/v1/rooms/r/participants?identity=\(name)")
        }
        // Two recordings of the room's whole mix: one stopped with DELETE, one left for the host
        // to finish when it stops (as SIGTERM does).
        let api = HTTPTestClient(port: host.http.address.port)
        let json = ["Content-Type": "application/json"]
        let asked = Date()
        let recording = try api.send("POST", "/v1/rooms/r/recordings", headers: json, body: Array(#"{"file": "mix.webm"}"#.utf8))
        let answered = Date()
        #expect(recording.status == 201)
        let started = try #require(try JSONSerialization.jsonObject(with: Data(recording.body)) as? [String: String])
        let recordingID = try #require(started["id"])
        // `start`: the wall-clock time the file's time zero stands for, to the millisecond.
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let fileZero = try #require(started["start"].flatMap(iso.date(from:)), "\(started)")
        #expect(fileZero >= asked.addingTimeInterval(-0.002) && fileZero <= answered.addingTimeInterval(0.002), "\(fileZero) not within \(asked)…\(answered)")
        #expect(try api.send("POST", "/v1/rooms/r/recordings", headers: json, body: Array(#"{"file": "left-open.webm"}"#.utf8)).status == 201)
        #expect(try api.send("POST", "/v1/rooms/r/recordings", headers: json, body: Array(#"{"file": "../escape.webm"}"#.utf8)).status == 400)
        #expect(try api.send("POST", "/v1/rooms/nobody/recordings", headers: json, body: []).status == 404)
        let hostAudio = try clients.map { try #require($0.answer?.hostSSRCs[$0.audio.mid]) }
        let encoders = try clients.map { _ in try OpusEncoder(.init(channels: 1, bitrate: 32_000)) }

        // 1.5 s of packets per client, paced at 20 ms by the service loop (a late round sends
        // late with the right timestamps: the host's jitter buffers play by the host's tick).
        let clock = MonotonicClock()
        let start = clock.now()
        let rounds = 75, analyzeFrom = 30
        var receivedAt: [Int] = []
        for round in 0..<rounds {
            EchoLoopbackClient.service(clients, until: start + .milliseconds(20 * round))
            if round == analyzeFrom { receivedAt = zip(clients, hostAudio).map { $0.echoes(on: $1).count } }
            for (name, (client, encoder)) in zip(names, zip(clients, encoders)) {
                let frequency = try #require(roomTones[name])
                let payload = try encoder.encode(toneFrame(frequency, frame: round))
                client.send(RTPPacket(payloadType: PayloadType(client.audio.payloadType), sequenceNumber: UInt16(1000 + round),
                                      timestamp: UInt32(48_000 + round * 960), ssrc: SSRC(client.audio.ssrc),
                                      extensions: client.midExtension(client.audio.mid), payload: payload[...]))
            }
        }
        // The mixes of the last packets sent: two ticks plus the jitter buffer's delay.
        EchoLoopbackClient.service(clients, until: clock.now() + .milliseconds(100))
        // One encoder per distinct mix: with three talking, at least the three "all but one". Read
        // now: an idle encoder goes 2 s after its last use, and what follows may take that long
        // on a busy machine.
        let metrics = try HTTPTestClient(port: host.http.address.port).send("GET", "/metrics").text
        let encoderLine = metrics.split(separator: "\n").first { $0.hasPrefix("tessera_audio_encoders ") }
        let running = encoderLine.flatMap { Int($0.split(separator: " ").last ?? "") }
        #expect((3...8).contains(running ?? 0), "metrics: \(encoderLine ?? "no tessera_audio_encoders")")

        // The stopped recording plays in ffprobe and holds every tone.
        #expect(try api.send("DELETE", "/v1/rooms/r/recordings/\(recordingID)").status == 200)
        let mixFile = folder.appendingPathComponent("mix.webm").path
        let probe = String(decoding: try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name:format=duration", "-of", "csv=p=0", mixFile]), as: UTF8.self)
        #expect(probe.contains("opus") && probe.contains("vp8"), "the composite and the mix: \(probe)")
        let pcm = try runTool("ffmpeg", ["-v", "error", "-i", mixFile, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
        let recorded = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        #expect(recorded.count > 48_000 / 2, "at least half a second recorded")
        try expectRecordingsOverHTTP(api, mixFile: mixFile)
        for frequency in roomTones.values {
            #expect(tonePower(recorded, frequency: frequency) > 30 * tonePower(recorded, frequency: 1_250), "\(frequency) Hz is in the recording")
        }
        let elapsed = Double((clock.now() - start).nanosecondsClamped) / 1e9

        for (index, name) in names.enumerated() {
            let client = clients[index]
            let packets = client.echoes(on: hostAudio[index])
            #expect(packets.count > 50, "\(name) got \(packets.count) packets of its mix in \(elapsed) s")
            guard let first = packets.first else { continue }
            #expect(first.marker, "the first packet of a mix is marked")
            #expect(packets.dropFirst().allSatisfy { !$0.marker })
            #expect(packets.allSatisfy { $0.payloadType.rawValue == client.audio.payloadType })
            // Consecutive packets: +1 sequence number, +960 timestamp (loopback keeps the order).
            let steps = zip(packets, packets.dropFirst()).filter {
                $1.sequenceNumber == $0.sequenceNumber &+ 1 && $1.timestamp == $0.timestamp &+ 960
            }.count
            #expect(steps == packets.count - 1, "\(name): every packet follows the one before")

            // Decode it all, as the client would, and listen to what came once every tone flowed.
            let decoder = try OpusDecoder(channels: 1)
            var heard: [Int16] = []
            for (offset, packet) in packets.enumerated() {
                let frame = (try? decoder.decode(Array(packet.payload))) ?? decoder.concealLoss()
                if offset >= receivedAt[index] { heard += frame.samples }
            }
            let own = try #require(roomTones[name])
            let ownPower = tonePower(heard, frequency: own)
            var weakest = Double.infinity
            for (other, frequency) in roomTones where other != name {
                let power = tonePower(heard, frequency: frequency)
                weakest = min(weakest, power)
                #expect(ownPower * 30 < power, "\(name) hears its own \(own) Hz at \(ownPower), \(other)'s \(frequency) Hz at \(power)")
            }
            print("RoomAudio: \(name) got \(packets.count) packets; weakest other tone / own tone = "
                  + String(format: "%.0f", weakest / max(ownPower, 1e-9)) + " (\(heard.count / 960) frames analysed)")
        }
        // Everyone leaves: the room closes, its tick stops and its encoders go.
        for client in clients { #expect(try client.delete() == 204) }
        let after = try HTTPTestClient(port: host.http.address.port).send("GET", "/metrics").text
        #expect(after.contains("tessera_rooms 0\n") && after.contains("tessera_audio_encoders 0\n"), "\(after)")
        // The room's close finished the recording left open: it plays.
        let leftOpen = String(decoding: try runTool("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                                                                folder.appendingPathComponent("left-open.webm").path]), as: UTF8.self)
        #expect((Double(leftOpen.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0.5, "left-open.webm: \(leftOpen)")
        print("RoomAudio: \(rounds) packets per client; sending and hearing took \(String(format: "%.2f", elapsed)) s")
    }

    /// The room's recordings listed (the finished one with its size and duration, the open one
    /// still recording) and the finished file served whole and by byte ranges; the open one not.
    private func expectRecordingsOverHTTP(_ api: HTTPTestClient, mixFile: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: mixFile)))
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(api.send("GET", "/v1/rooms/r/recordings").body)) as? [String: Any])
        let entries = try #require(listed["recordings"] as? [[String: Any]])
        let mix = try #require(entries.first { $0["file"] as? String == "mix.webm" }, "\(entries)")
        #expect(mix["state"] as? String == "finished" && mix["size"] as? Int == bytes.count && mix["start"] is String)
        #expect((1.0...4.0).contains(mix["duration"] as? Double ?? 0), "\(mix)")
        #expect(entries.first { $0["file"] as? String == "left-open.webm" }?["state"] as? String == "recording")
        #expect(try api.send("GET", "/v1/rooms/nowhere/recordings").text == #"{"recordings":[]}"#)

        let whole = try api.send("GET", "/v1/recordings/mix.webm")
        #expect(whole.status == 200 && whole.body == bytes && whole.headers["accept-ranges"] == "bytes")
        let head = try api.send("GET", "/v1/recordings/mix.webm", headers: ["Range": "bytes=0-99"])
        #expect(head.status == 206 && head.body == Array(bytes.prefix(100)) && head.headers["content-range"] == "bytes 0-99/\(bytes.count)")
        let tail = try api.send("GET", "/v1/recordings/mix.webm", headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(bytes.suffix(10)))
        let beyond = try api.send("GET", "/v1/recordings/mix.webm", headers: ["Range": "bytes=\(bytes.count)-"])
        #expect(beyond.status == 416 && beyond.headers["content-range"] == "bytes */\(bytes.count)")
        #expect(try api.send("GET", "/v1/recordings/left-open.webm").status == 409)
        #expect(try api.send("GET", "/v1/recordings/..webm").status == 404)
        #expect(try api.send("GET", "/v1/recordings/absent.webm").status == 404)
    }

    @Test func aViewerHearsTheWholeRoomAndHasNoTile() throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let api = HTTPTestClient(port: host.http.address.port)
        let speaker = try EchoLoopbackClient(httpPort: host.http.address.port, name: "a")
        let viewer = try EchoLoopbackClient(httpPort: host.http.address.port, name: "viewer")
        // No room yet: nothing to view.
        let offer = try Array(Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/aiortc-offer.sdp")))
        #expect(try api.send("POST", "/v1/rooms/v/viewers", headers: ["Content-Type": "application/sdp"], body: offer).status == 404)
        try speaker.connect(timeout: .seconds(3), path: "/v1/rooms/v/participants?identity=a")
        try viewer.connect(timeout: .seconds(3), path: "/v1/rooms/v/viewers")
        let viewerAudio = try #require(viewer.answer?.hostSSRCs[viewer.audio.mid])
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000))
        let clock = MonotonicClock()
        let start = clock.now()
        for round in 0..<60 {
            EchoLoopbackClient.service([speaker, viewer], until: start + .milliseconds(20 * round))
            let payload = try encoder.encode(toneFrame(440, frame: round))
            speaker.send(RTPPacket(payloadType: PayloadType(speaker.audio.payloadType), sequenceNumber: UInt16(round),
                                   timestamp: UInt32(round * 960), ssrc: SSRC(speaker.audio.ssrc),
                                   extensions: speaker.midExtension(speaker.audio.mid), payload: payload[...]))
        }
        EchoLoopbackClient.service([speaker, viewer], until: clock.now() + .milliseconds(100))
        let decoder = try OpusDecoder(channels: 1)
        var heard: [Int16] = []
        for packet in viewer.echoes(on: viewerAudio) {
            heard += ((try? decoder.decode(Array(packet.payload))) ?? decoder.concealLoss()).samples
        }
        #expect(heard.count > 48_000 / 2)
        #expect(tonePower(heard, frequency: 440) > 1000 * tonePower(heard, frequency: 1_250), "the viewer hears a")
        let room = try JSONSerialization.jsonObject(with: Data(api.send("GET", "/v1/rooms/v").body)) as? [String: Any]
        #expect((room?["participants"] as? [[String: Any]])?.count == 1)
        #expect(room?["viewers"] as? Int == 1)
        let layout = try JSONSerialization.jsonObject(with: Data(api.send("GET", "/v1/rooms/v/layout").body)) as? [String: Any]
        #expect((layout?["positions"] as? [[String: Any]])?.compactMap { $0["participant"] as? String } == ["a"], "no tile for the viewer")
        #expect(try viewer.delete() == 204)
    }
}
