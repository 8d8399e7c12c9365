import Compositing
import Foundation
import Conference
import Media
import Testing
import Wire
import WireTesting

/// A conference room driven in memory on a manual clock through `NetEm`: what each participant
/// hears and sees, as a user would judge it. No socket is opened.
@Suite struct RoomTests {
    static let red = YUVColor(red: 220, green: 30, blue: 30)
    static let green = YUVColor(red: 30, green: 200, blue: 30)
    static let blue = YUVColor(red: 30, green: 30, blue: 220)

    /// Three participants with distinct tones and colours, in joining order a, b, c.
    private func threeInARoom(_ impairment: NetEm<WirePacket>.Impairment = .clean(), seed: UInt64 = 1) throws
        -> (RoomHarness, MemoryPeer, MemoryPeer, MemoryPeer)
    {
        let harness = RoomHarness(impairment: impairment, seed: seed)
        let a = try harness.join("a", tone: 440, colour: Self.red)
        let b = try harness.join("b", tone: 660, colour: Self.green)
        let c = try harness.join("c", tone: 880, colour: Self.blue)
        return (harness, a, b, c)
    }

    /// Which of the room's tones `peer` heard since `start`: each tone's power against the
    /// strongest. Measured per 20 ms frame and summed, so that the phase jumps of concealed
    /// packets and jitter buffer adjustments do not cancel a tone out.
    private func tones(_ peer: MemoryPeer, since start: Instant) -> [Double: Double] {
        let frames = peer.heard.filter { $0.at >= start }.map(\.samples)
        let powers = Dictionary(uniqueKeysWithValues: [440.0, 660, 880].map { tone in
            (tone, frames.reduce(0.0) { $0 + tonePower($1, frequency: tone) })
        })
        let strongest = max(powers.values.max() ?? 1, 1e-9)
        return powers.mapValues { $0 / strongest }
    }

    /// Hears every tone in `heard` (at least 10 % of the strongest) and none in `silent` (under 3 %,
    /// the leakage of a 20 ms window from the neighbouring tones).
    private func expectHears(_ peer: MemoryPeer, since start: Instant, heard: [Double], silent: [Double],
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let shares = tones(peer, since: start)
        for tone in heard {
            #expect((shares[tone] ?? 0) > 0.1, "\(peer.identity) should hear \(tone) Hz: \(shares)", sourceLocation: sourceLocation)
        }
        for tone in silent {
            #expect((shares[tone] ?? 1) < 0.03, "\(peer.identity) should not hear \(tone) Hz: \(shares)", sourceLocation: sourceLocation)
        }
    }

    /// The colour around a point (fractions of the picture) of `peer`'s last composite.
    private func expectSees(_ peer: MemoryPeer, _ points: [(x: Double, y: Double, colour: YUVColor)], tolerance: Int = 24,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        guard let picture = peer.latest else {
            Issue.record("\(peer.identity) decoded no composite", sourceLocation: sourceLocation)
            return
        }
        for point in points {
            let seen = picture.pixel(x: Int(point.x * Double(picture.width)), y: Int(point.y * Double(picture.height)))
            #expect(seen.isClose(to: point.colour, tolerance: tolerance),
                    "\(peer.identity) sees \(seen) at \(point.x),\(point.y), not \(point.colour)", sourceLocation: sourceLocation)
        }
    }

    /// The centres of a grid of three: two tiles on top, one centred below.
    static func grid3(_ a: YUVColor, _ b: YUVColor, _ c: YUVColor) -> [(x: Double, y: Double, colour: YUVColor)] {
        [(x: 0.25, y: 0.25, colour: a), (x: 0.75, y: 0.25, colour: b), (x: 0.5, y: 0.75, colour: c)]
    }

    @Test func threeParticipantsHearTheOthersNotThemselvesAndSeeTheGrid() throws {
        let (harness, a, b, c) = try threeInARoom()
        let start = harness.now + .milliseconds(500)
        try harness.run(for: .seconds(2))
        expectHears(a, since: start, heard: [660, 880], silent: [440])
        expectHears(b, since: start, heard: [440, 880], silent: [660])
        expectHears(c, since: start, heard: [440, 660], silent: [880])
        for peer in [a, b, c] { expectSees(peer, Self.grid3(Self.red, Self.green, Self.blue)) }
        #expect(harness.events.filter { $0.type == .joined }.map(\.identity) == ["a", "b", "c"])
        #expect(Set(harness.events.filter { $0.type == .trackPublished }.compactMap(\.source)) == ["microphone", "camera"])
    }

    /// A phone held upright sends landscape pictures and a 90° CVO: its tile shows it upright
    /// (left half on top). A template's `rotation` and `mirror` override it: turned first, then
    /// mirrored, then filled.
    @Test func aCameraWithANinetyDegreeOrientationIsComposedUpright() throws {
        let harness = RoomHarness(impairment: .clean(), seed: 1)
        let phone = try harness.join("phone", tone: 440, colour: Self.red)
        phone.orientation = .degrees90
        try harness.run(for: .seconds(2))
        let white = YUVColor(y: 235, u: 128, v: 128)
        // Upright: red on top, white below, across the whole width (the tile crops the sides).
        expectSees(phone, [(x: 0.25, y: 0.25, colour: Self.red), (x: 0.75, y: 0.25, colour: Self.red),
                           (x: 0.25, y: 0.75, colour: white), (x: 0.75, y: 0.75, colour: white)])
        let canvas = TemplateDescription.Canvas(width: RoomHarness.canvas.width, height: RoomHarness.canvas.height, fps: 15)
        try harness.room.setLayout(.custom(TemplateDescription(canvas: canvas, positions: [
            .init(participant: "phone", rect: NormalizedRect(x: 0, y: 0, width: 1, height: 1), rotation: 0, mirror: true),
        ])))
        try harness.run(for: .seconds(1))
        // Not turned, then mirrored: white on the left, red on the right.
        expectSees(phone, [(x: 0.2, y: 0.5, colour: white), (x: 0.8, y: 0.5, colour: Self.red)])
    }

    /// A template that changes the canvas's size and frame rate while the room runs: the
    /// receivers decode the composite at the new size and rate (the encoder restarts at the new
    /// size with a key frame), and back at the preset's.
    @Test func theCanvasSizeAndFrameRateChangeWhileRunning() throws {
        let (harness, a, _, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        let small = TemplateDescription(canvas: .init(width: 240, height: 144, fps: 10), positions: [
            .init(participant: "a", rect: NormalizedRect(x: 0, y: 0, width: 1, height: 1)),
        ])
        try harness.room.setLayout(.custom(small))
        try harness.run(for: .milliseconds(500))
        let before = a.picturesDecoded
        try harness.run(for: .seconds(2))
        #expect(a.latest.map { ($0.width, $0.height) } ?? (0, 0) == (240, 144))
        #expect((17...21).contains(a.picturesDecoded - before), "\(a.picturesDecoded - before) pictures in 2 s at 10 fps")
        expectSees(a, [(x: 0.5, y: 0.5, colour: Self.red)])

        try harness.room.setLayout(.preset(.grid))
        try harness.run(for: .milliseconds(500))
        let again = a.picturesDecoded
        try harness.run(for: .seconds(2))
        #expect(a.latest.map { ($0.width, $0.height) } ?? (0, 0) == (RoomHarness.canvas.width, RoomHarness.canvas.height))
        #expect((27...31).contains(a.picturesDecoded - again), "\(a.picturesDecoded - again) pictures in 2 s at 15 fps")
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
    }

    @Test func aTemplateSwapMovesTheColoursAndALeaverShowsItsPlaceholder() throws {
        let (harness, a, b, c) = try threeInARoom()
        try harness.run(for: .seconds(1))
        let swapped = TemplateDescription(canvas: .init(width: RoomHarness.canvas.width, height: RoomHarness.canvas.height, fps: 15), positions: [
            .init(participant: "b", rect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 0.5)),
            .init(participant: "a", rect: NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 0.5)),
            .init(participant: "c", rect: NormalizedRect(x: 0.25, y: 0.5, width: 0.5, height: 0.5)),
        ])
        try harness.room.setLayout(.custom(swapped))
        try harness.run(for: .seconds(1))
        for peer in [a, b, c] { expectSees(peer, Self.grid3(Self.green, Self.red, Self.blue)) }
        #expect(harness.events.contains { $0.type == .layoutChanged })
        // A template stays as given: the leaver's tile shows its placeholder.
        try harness.leave(c)
        try harness.run(for: .seconds(1))
        for peer in [a, b] { expectSees(peer, Self.grid3(Self.green, Self.red, Room.placeholderColor)) }
        // c joins again (a new session, the same identity): the template's position is its again.
        let rejoined = try harness.join("c", tone: 880, colour: Self.blue)
        try harness.run(for: .seconds(1))
        for peer in [a, b, rejoined] { expectSees(peer, Self.grid3(Self.green, Self.red, Self.blue)) }
        try harness.leave(rejoined)
        try harness.run(for: .milliseconds(200))
        // Back to the grid preset: the two who are left, side by side.
        try harness.room.setLayout(.preset(.grid))
        try harness.run(for: .seconds(1))
        for peer in [a, b] { expectSees(peer, [(x: 0.25, y: 0.5, colour: Self.red), (x: 0.75, y: 0.5, colour: Self.green)]) }
    }

    /// A recording takes the frames the room's main encoder makes for its receivers, from a key
    /// frame on, at the canvas size: no second encoder runs; when it stops, none come.
    @Test func aRecordingMuxesTheMainEncodingsFrames() throws {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: YUVColor(red: 220, green: 30, blue: 30))
        _ = try harness.join("b", tone: 660, colour: YUVColor(red: 30, green: 200, blue: 30))
        try harness.run(for: .milliseconds(500))
        _ = try harness.act { room, _ in room.startRoomMix() }
        try harness.run(for: .seconds(1))
        let recorded = harness.recordedFrames
        #expect(recorded.count >= 10, "\(recorded.count) frames in a second of a 15 fps composite")
        #expect(recorded.first?.isKeyFrame == true)
        #expect(recorded.allSatisfy { VideoSize(width: $0.width, height: $0.height) == RoomHarness.canvas })
        #expect(harness.encodersRunning == 1, "the main encoder only")
        #expect(a.picturesDecoded > 0)
        try harness.act { room, _ in room.stopRoomMix() }
        try harness.run(for: .milliseconds(300))
        #expect(harness.recordedFrames.count == recorded.count)
    }

    /// A recording as the host makes it (`TrackRecorder(encodedVideo:audioTrack:)` given the
    /// main encoding's frames and the room's whole mix), through a change of the canvas's size
    /// halfway (the encoder restarts at a key frame of the new size): the file plays to its end
    /// in ffprobe, every frame of it decodes, each picture shows each guest's colour in its tile
    /// (before the change and after), its audio holds both voices, and each picture plays at
    /// the instant it was drawn for (its time in the file is its capture's since the start, as
    /// its RTP timestamp is), so it plays with the audio mixed then.
    @Test func aRecordingOfTheMainEncodingPlaysAcrossACanvasChange() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("room-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let harness = RoomHarness()
        try harness.join("a", tone: 440, colour: Self.red)
        try harness.join("b", tone: 660, colour: Self.green)
        try harness.run(for: .milliseconds(500))
        let start = harness.now
        let mix = try harness.act { room, _ in room.startRoomMix() }
        let recorder = TrackRecorder(encodedVideo: .init(width: RoomHarness.canvas.width, height: RoomHarness.canvas.height, framesPerSecond: 15),
                                     audioTrack: mix)
        try recorder.startRecording(fileName: path, now: start)
        harness.recorder = recorder
        try harness.run(for: .seconds(1))
        let small = TemplateDescription(canvas: .init(width: 240, height: 144, fps: 15), positions: [
            .init(participant: "a", rect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 1)),
            .init(participant: "b", rect: NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 1)),
        ])
        try harness.room.setLayout(.custom(small))
        try harness.run(for: .seconds(1))
        try recorder.stop()
        #expect(harness.recordedFrames.filter(\.isKeyFrame).count == 2, "the first, and the new size's")

        let probe = try Self.probeVideo(path)
        #expect(abs(probe.duration - 2.0) < 0.15 && probe.packets >= 25 && probe.frames == probe.packets, "every frame decodes: \(probe)")

        let reader = try MediaFileReader(path: path)
        let opus = try OpusDecoder(channels: try #require(reader.audio).channels)
        let vp8 = try VP8Decoder()
        var pictures: [(at: Duration, picture: I420Frame)] = []
        var heard: [Int16] = []
        while let packet = try reader.nextPacket() {
            switch packet.kind {
            case .video: if let picture = try vp8.decode(packet.data) { pictures.append((packet.timestamp, picture)) }
            case .audio: heard += try opus.decode(packet.data).samples
            }
        }
        // WebM keeps whole milliseconds.
        let captured = harness.recordedFrames.map { ($0.captureTime - start).seconds }
        #expect(pictures.allSatisfy { picture in captured.contains { abs($0 - picture.at.seconds) <= 0.001 } },
                "each picture at its capture's time since the start")
        for size in [RoomHarness.canvas, VideoSize(width: 240, height: 144)] {
            let picture = try #require(pictures.last { $0.picture.width == size.width && $0.picture.height == size.height }?.picture, "\(size)")
            for (x, colour) in [(0.25, Self.red), (0.75, Self.green)] {
                let seen = picture.pixel(x: Int(x * Double(size.width)), y: size.height / 2)
                #expect(seen.isClose(to: colour, tolerance: 24), "\(size): \(seen) at \(x), not \(colour)")
            }
        }
        let mono = reader.audio?.channels == 2 ? stride(from: 0, to: heard.count - 1, by: 2).map { heard[$0] } : heard
        let a = tonePower(mono, frequency: 440), b = tonePower(mono, frequency: 660), neither = tonePower(mono, frequency: 1_000)
        #expect(a > 100 * neither && b > 100 * neither, "440 Hz \(a), 660 Hz \(b), 1 kHz \(neither)")
    }

    /// What ffprobe makes of a file's video: its duration, and its video packets and the frames
    /// it decoded of them.
    static func probeVideo(_ path: String) throws -> (duration: Double, packets: Int, frames: Int) {
        let text = String(decoding: try runTool("ffprobe", ["-v", "error", "-select_streams", "v", "-count_frames", "-count_packets",
                                                            "-show_entries", "stream=nb_read_frames,nb_read_packets:format=duration",
                                                            "-of", "default=nw=1", path]), as: UTF8.self)
        let fields = Dictionary(text.split(separator: "\n").compactMap { line -> (String, String)? in
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }, uniquingKeysWith: { first, _ in first })
        return (Double(fields["duration"] ?? "") ?? 0, Int(fields["nb_read_packets"] ?? "") ?? 0, Int(fields["nb_read_frames"] ?? "") ?? -1)
    }

    /// Slow encodes make the room step its encoder to cheaper VP8 versions while a recording
    /// runs: each step restarts the encoder at a key frame, and the file takes the frames on
    /// either side; it plays to its end in ffprobe and every frame of it decodes.
    @Test func aRecordingPlaysAcrossTheEncodersRestarts() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("steps-\(UUID().uuidString).webm").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (harness, _, _, _) = try threeInARoom()
        try harness.run(for: .milliseconds(500))
        let mix = try harness.act { room, _ in room.startRoomMix() }
        let recorder = TrackRecorder(encodedVideo: .init(width: RoomHarness.canvas.width, height: RoomHarness.canvas.height, framesPerSecond: 15),
                                     audioTrack: mix)
        try recorder.startRecording(fileName: path, now: harness.now)
        harness.recorder = recorder
        harness.encodeTime = .milliseconds(53)  // of 67 ms at 15 fps
        try harness.run(for: .seconds(3))
        try recorder.stop()
        #expect(harness.lastProfile == 3 && harness.recordedFrames.filter(\.isKeyFrame).count >= 3, "the first key frame, and one a step")
        let probe = try Self.probeVideo(path)
        #expect(abs(probe.duration - 3.0) < 0.15 && probe.packets >= 40 && probe.frames == probe.packets, "every frame decodes: \(probe)")
    }

    @Test func hearFalseTakesOneVoiceOutOfOneMix() throws {
        let (harness, a, _, c) = try threeInARoom()
        try harness.run(for: .milliseconds(500))
        harness.room.patch(a.id, hear: ["b": false])
        let start = harness.now + .milliseconds(300)
        try harness.run(for: .milliseconds(1500))
        expectHears(a, since: start, heard: [880], silent: [440, 660])
        expectHears(c, since: start, heard: [440, 660], silent: [880])
    }

    @Test func aLeaverIsHeardNoMoreAndTheGridCloses() throws {
        let (harness, a, b, c) = try threeInARoom()
        try harness.run(for: .seconds(1))
        try harness.leave(b)
        let start = harness.now + .milliseconds(300)
        try harness.run(for: .milliseconds(1500))
        expectHears(a, since: start, heard: [880], silent: [440, 660])
        expectHears(c, since: start, heard: [440], silent: [660, 880])
        for peer in [a, c] { expectSees(peer, [(x: 0.25, y: 0.5, colour: Self.red), (x: 0.75, y: 0.5, colour: Self.blue)]) }
        let left = harness.events.filter { $0.identity == "b" && ($0.type == .left || $0.type == .trackEnded) }
        #expect(left.map(\.type) == [.trackEnded, .trackEnded, .left] && left.last?.reason == "left")
    }

    @Test func aMutedCameraShowsThePlaceholderAndComesBack() throws {
        let (harness, a, b, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        harness.room.patch(b.id, videoMuted: true)
        try harness.run(for: .seconds(1))
        expectSees(a, [(x: 0.75, y: 0.25, colour: Room.placeholderColor), (x: 0.25, y: 0.25, colour: Self.red)])
        harness.room.patch(b.id, videoMuted: false)
        try harness.run(for: .seconds(1))
        expectSees(a, [(x: 0.75, y: 0.25, colour: Self.green)])
        #expect(harness.events.filter { $0.identity == "b" }.map(\.type).suffix(2) == [.trackMuted, .trackUnmuted])
    }

    /// A camera turned off by its m-line's direction (`recvonly`, as a browser's transceiver
    /// direction): `trackMuted` with the reason, its tile shows the placeholder, b still gets
    /// the composite; turned on again (`sendrecv`): `trackUnmuted`, and its colour returns.
    @Test func aCameraTurnedOffByRenegotiationIsMutedAndComesBack() throws {
        let (harness, a, b, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        b.sendsVideo = false
        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(camera: .recvonly), now: harness.now)
        try harness.run(for: .seconds(1))
        expectSees(a, [(x: 0.75, y: 0.25, colour: Room.placeholderColor), (x: 0.25, y: 0.25, colour: Self.red)])
        let decodedByB = b.picturesDecoded
        try harness.run(for: .milliseconds(500))
        #expect(b.picturesDecoded > decodedByB, "b still receives the composite on its camera's m-line")
        #expect(harness.room.tracks(of: b.id, now: harness.now).first { $0.source == "camera" }?.muted == true)

        b.sendsVideo = true
        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(camera: .sendrecv), now: harness.now)
        try harness.run(for: .seconds(1))
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
        let camera = harness.events.filter { $0.identity == "b" && [.trackMuted, .trackUnmuted, .trackEnded].contains($0.type) }
        #expect(camera.map(\.type) == [.trackMuted, .trackUnmuted] && camera.allSatisfy { $0.source == "camera" })
        #expect(camera.first?.reason == "m-line not sending")
    }

    /// A sender that mutes its camera itself (a browser's disabled track sends black frames of
    /// Y 0): after a second of them `trackMuted` ("sender muted") and its tile shows the
    /// placeholder; its first real picture unmutes it.
    @Test func aCameraMutedByItsSenderShowsThePlaceholder() throws {
        let (harness, a, b, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        b.sendsMuteFrames = true
        try harness.run(for: .milliseconds(700))
        #expect(!harness.events.contains { $0.type == .trackMuted }, "not before a second of mute frames")
        try harness.run(for: .seconds(1))
        expectSees(a, [(x: 0.75, y: 0.25, colour: Room.placeholderColor), (x: 0.25, y: 0.25, colour: Self.red)])
        b.sendsMuteFrames = false
        try harness.run(for: .seconds(1))
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
        let camera = harness.events.filter { $0.identity == "b" && [.trackMuted, .trackUnmuted].contains($0.type) }
        #expect(camera.map(\.type) == [.trackMuted, .trackUnmuted] && camera.map(\.reason) == ["sender muted", "sender unmuted"])
    }

    /// The host's decode workers fall behind for a second (the harness holds every decode job):
    /// each camera has four frames out to its decoder, the bound, and the next is dropped with
    /// every frame after it until a key frame, which the host asks its sender for (PLI). Nothing
    /// the decoder cannot decode is handed to it, so no broken picture is shown; once the workers
    /// catch up, each guest's colour is back in its slot.
    @Test func aDecoderThatFallsBehindDropsToTheNextKeyFrameAndAsksForOne() throws {
        let (harness, a, b, c) = try threeInARoom()
        try harness.run(for: .seconds(1))
        let requestsBefore = [a, b, c].map(\.pictureLossIndications)
        harness.holdsDecodes = true
        try harness.run(for: .seconds(1))
        let held = Dictionary(grouping: harness.heldDecodes, by: \.stream)
        #expect(held.count == 3 && held.values.allSatisfy { $0.count == ParticipantInbound.decodeQueueDepth }, "\(held.mapValues(\.count))")
        for participant in harness.room.participants {
            #expect((participant.inbound.cameraStatistics?.framesDroppedDecodeQueueFull ?? 0) >= 1, "\(participant.identity)'s camera")
        }
        for (peer, before) in zip([a, b, c], requestsBefore) {
            #expect(peer.pictureLossIndications > before, "the host asked \(peer.identity) for a key frame")
        }
        harness.holdsDecodes = false
        try harness.releaseDecodes()
        try harness.run(for: .seconds(2))
        for peer in [a, b, c] { expectSees(peer, Self.grid3(Self.red, Self.green, Self.blue)) }
        for (stream, jobs) in Dictionary(grouping: harness.decodeJobs, by: \.stream) {
            // Each frame handed to the decoder once, in order; after the held ones, a key frame first.
            #expect(jobs.map(\.job.sequence) == Array(1...jobs.count), "\(stream)")
            guard let lastHeld = jobs.lastIndex(where: \.held), lastHeld + 1 < jobs.count else {
                Issue.record("\(stream): no frame decoded after the held ones")
                continue
            }
            #expect(jobs[lastHeld + 1].job.frame.isKeyFrame, "\(stream): the first frame after the drop is a key frame")
        }
        for participant in harness.room.participants {
            let camera = participant.inbound.cameraStatistics
            #expect(camera?.decodeErrors == 0, "\(participant.identity): \(String(describing: camera))")
        }
    }

    /// Renegotiation as a browser does it: b stops its camera's m-line (port 0), so its camera
    /// ends, its tile shows the placeholder, and it is sent no composite, while its voice and mix
    /// go on; then it adds a camera m-line back (a new mid), and its colour and composite return.
    @Test func aStoppedCameraMLineEndsTheCameraAndAnAddedOneBringsItBack() throws {
        let (harness, a, b, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(stop: "1"), now: harness.now)
        let stoppedAt = harness.now + .milliseconds(300)
        try harness.run(for: .milliseconds(300))
        let decodedByB = b.picturesDecoded
        try harness.run(for: .seconds(1))
        expectSees(a, [(x: 0.75, y: 0.25, colour: Room.placeholderColor), (x: 0.25, y: 0.25, colour: Self.red)])
        expectHears(a, since: stoppedAt, heard: [660, 880], silent: [440])
        expectHears(b, since: stoppedAt, heard: [440, 880], silent: [660])
        #expect(b.picturesDecoded == decodedByB, "b's composite m-line is stopped: it is sent no pictures")
        let ended = harness.events.filter { $0.identity == "b" && $0.type == .trackEnded }
        #expect(ended.map(\.source) == ["camera"] && ended.first?.reason == "m-line stopped")

        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(add: "2"), now: harness.now)
        try harness.run(for: .milliseconds(1500))
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
        expectSees(b, Self.grid3(Self.red, Self.green, Self.blue))
        #expect(b.picturesDecoded > decodedByB + 10, "the composite comes on the new m-line")
        #expect(harness.events.filter { $0.identity == "b" && $0.type == .trackPublished }.map(\.source) == ["microphone", "camera", "camera"])
    }

    /// A participant shares its screen (a second sending video m-line, by renegotiation): the
    /// grid puts the screen in the main tile and every camera, the sharer's too, in the strip
    /// below (`trackPublished` and `trackRendering` say `screen`). The share stops sending: 2 s
    /// later the grid is back. The m-line is stopped: `trackEnded` for the screen.
    @Test func aSharedScreenTakesTheMainTileAndGivesItBack() throws {
        let (harness, a, b, c) = try threeInARoom()
        try harness.run(for: .seconds(1))
        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(shareScreen: "2"), now: harness.now)
        try harness.run(for: .seconds(2))
        #expect(harness.room.screenSharer == "b")
        let white = MemoryPeer.screenColour
        // The strip's tiles are a quarter of the height and as wide, centred, in joining order.
        for peer in [a, b, c] {
            expectSees(peer, [(x: 0.5, y: 0.35, colour: white), (x: 0.25, y: 0.875, colour: Self.red),
                              (x: 0.5, y: 0.875, colour: Self.green), (x: 0.75, y: 0.875, colour: Self.blue)])
        }
        #expect(harness.events.contains { $0.type == .trackPublished && $0.identity == "b" && $0.source == "screen" })
        #expect(harness.events.contains { $0.type == .trackRendering && $0.identity == "b" && $0.source == "screen" })
        // The speaker preset shows the share the same way (not the active speaker's camera).
        try harness.room.setLayout(.preset(.speaker))
        try harness.run(for: .milliseconds(500))
        expectSees(a, [(x: 0.5, y: 0.35, colour: white), (x: 0.25, y: 0.875, colour: Self.red), (x: 0.5, y: 0.875, colour: Self.green)])
        try harness.room.setLayout(.preset(.grid))

        b.sharesScreen = false
        try harness.run(for: .seconds(3))
        #expect(harness.room.screenSharer == nil)
        for peer in [a, c] { expectSees(peer, Self.grid3(Self.red, Self.green, Self.blue)) }
        #expect(harness.events.contains { $0.type == .trackStalled && $0.identity == "b" && $0.source == "screen" })

        harness.room.renegotiate(b.id, negotiated: try b.renegotiate(stop: "2"), now: harness.now)
        try harness.run(for: .milliseconds(100))
        #expect(harness.events.contains { $0.type == .trackEnded && $0.identity == "b" && $0.source == "screen" })
    }

    /// A guest whose camera stops sending (its process wedged, a camera unplugged) while its
    /// microphone goes on keeps its voice in everyone's mix and stays in the room; the others'
    /// tiles go on.
    @Test func aGuestThatStopsSendingOnlyVideoKeepsItsAudio() throws {
        let (harness, a, b, c) = try threeInARoom()
        try harness.run(for: .seconds(1))
        b.sendsVideo = false
        let start = harness.now + .seconds(3)
        try harness.run(for: .seconds(5))
        expectHears(a, since: start, heard: [660, 880], silent: [440])
        expectHears(c, since: start, heard: [440, 660], silent: [880])
        expectSees(a, [(x: 0.25, y: 0.25, colour: Self.red), (x: 0.5, y: 0.75, colour: Self.blue)])
        #expect(harness.room.participant(id: b.id) != nil)
        #expect(!harness.events.contains { $0.identity == "b" && ($0.type == .left || ($0.type == .trackEnded && $0.source == "microphone")) })
        // Its camera rendered, stalled 2 s after its last picture, and renders again when it
        // comes back; the others' cameras never stalled.
        b.sendsVideo = true
        try harness.run(for: .seconds(1))
        let cameraEvents = harness.events.filter { $0.source == "camera" && [.trackRendering, .trackStalled].contains($0.type) }
        #expect(cameraEvents.filter { $0.identity == "b" }.map(\.type) == [.trackRendering, .trackStalled, .trackRendering])
        #expect(cameraEvents.filter { $0.identity != "b" }.allSatisfy { $0.type == .trackRendering })
    }

    /// A join whose transport never comes up is dropped `connectTimeout` after it joined
    /// (`left` with reason "never connected", and the shell told to close it), and frees its
    /// place: the grid closes over it; the others hear and see each other throughout.
    @Test func aJoinThatNeverConnectsIsDroppedAfterTheConnectTimeout() throws {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: Self.red)
        let b = try harness.join("b", tone: 660, colour: Self.green)
        let ghost = try harness.joinWithoutConnecting("ghost")
        try harness.run(for: Room.connectTimeout - .milliseconds(500))
        #expect(harness.room.participant(id: ghost) != nil && harness.expired.isEmpty, "not yet")
        try harness.run(for: .seconds(1))
        #expect(harness.expired == [ghost])
        #expect(harness.room.participant(id: ghost) == nil)
        let left = harness.events.filter { $0.identity == "ghost" && $0.type == .left }
        #expect(left.map(\.reason) == ["never connected"])
        let start = harness.now
        try harness.run(for: .seconds(1))
        expectHears(a, since: start + .milliseconds(300), heard: [660], silent: [440])
        for peer in [a, b] { expectSees(peer, [(x: 0.25, y: 0.5, colour: Self.red), (x: 0.75, y: 0.5, colour: Self.green)]) }
    }

    /// The room's lifecycle: the last leave stops its ticks and its encoders; a later join
    /// starts them again, with a fresh encoder whose first frame is a key frame.
    @Test func theLastLeaveStopsTheRoomAndAJoinStartsItAgain() throws {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: Self.red)
        let b = try harness.join("b", tone: 660, colour: Self.green)
        try harness.run(for: .seconds(1))
        #expect(harness.encodersRunning == 1)
        try harness.leave(a)
        try harness.leave(b)
        #expect(harness.room.nextTimeout == nil && harness.room.isEmpty)
        #expect(harness.encodersRunning == 0)
        try harness.run(for: .milliseconds(500))
        let c = try harness.join("c", tone: 880, colour: Self.blue)
        #expect(harness.room.nextTimeout != nil)
        try harness.run(for: .seconds(1))
        expectSees(c, [(x: 0.5, y: 0.5, colour: Self.blue)])
        #expect(harness.encodersRunning == 1 && c.picturesDecoded > 5)
    }

    /// Guests that only send (sendonly: nobody receives the composite) and no recording: nothing
    /// is drawn, no picture goes to an encoder and no encoder runs, though their cameras arrive.
    @Test func aRoomNobodyReceivesOrRecordsEncodesNothing() throws {
        let harness = RoomHarness()
        try harness.join("a", tone: 440, colour: Self.red, sendOnly: true)
        try harness.join("b", tone: 660, colour: Self.green, sendOnly: true)
        try harness.run(for: .seconds(2))
        #expect(harness.room.participants.allSatisfy { ($0.inbound.cameraStatistics?.framesDecoded ?? 0) > 10 })
        #expect(harness.encodeRequests == 0 && harness.encodersRunning == 0 && !harness.room.encodersRunning)
        #expect(harness.room.framesComposed == 0 && harness.room.framesSent == 0)
    }

    /// The only receiver leaves: the encoder stops at the next tick and no picture is encoded
    /// while only sendonly guests remain. A receiver that joins later gets a fresh encoder's key
    /// frame and sees the room.
    @Test func theEncoderStopsWhenTheLastReceiverLeavesAndStartsForTheNext() throws {
        let harness = RoomHarness()
        try harness.join("a", tone: 440, colour: Self.red, sendOnly: true)
        let b = try harness.join("b", tone: 660, colour: Self.green)
        try harness.run(for: .seconds(1))
        #expect(harness.encodersRunning == 1 && harness.encodeRequests > 10)
        try harness.leave(b)
        try harness.run(for: .milliseconds(200))
        let requests = harness.encodeRequests, composed = harness.room.framesComposed
        #expect(harness.encodersRunning == 0 && !harness.room.encodersRunning)
        try harness.run(for: .seconds(2))
        #expect(harness.encodeRequests == requests && harness.room.framesComposed == composed, "nothing encoded or drawn for nobody")
        let c = try harness.join("c", tone: 880, colour: Self.blue)
        try harness.run(for: .seconds(1))
        #expect(harness.encodersRunning == 1 && c.picturesDecoded > 5)
        expectSees(c, [(x: 0.25, y: 0.5, colour: Self.red), (x: 0.75, y: 0.5, colour: Self.blue)])
    }

    /// A recording of a room nobody receives draws the composite and runs the main encoding for
    /// it: one encoder, kept across ticks (not stopped for want of receivers and started again
    /// at a key frame every tick), whose frames go to the recording from a key frame on. When
    /// the recording stops, the encoder stops with it.
    @Test func aRecordedRoomNobodyReceivesRunsOnlyTheMainEncoderForIt() throws {
        let harness = RoomHarness()
        try harness.join("a", tone: 440, colour: Self.red, sendOnly: true)
        _ = try harness.act { room, _ in room.startRoomMix() }
        try harness.run(for: .seconds(1))
        let recorded = harness.recordedFrames
        #expect(harness.room.framesComposed > 10)
        #expect(harness.encodersRunning == 1 && harness.encodeRequests > 10)
        #expect(recorded.count > 10 && recorded.first?.isKeyFrame == true)
        #expect(recorded.filter(\.isKeyFrame).count == 1, "\(recorded.filter(\.isKeyFrame).count) key frames in \(recorded.count)")
        try harness.act { room, _ in room.stopRoomMix() }
        try harness.run(for: .milliseconds(300))
        #expect(harness.encodersRunning == 0 && !harness.room.encodersRunning)
        #expect(harness.recordedFrames.count == recorded.count)
    }

    /// Encodes that take 80 % of the frame interval (a host short of cores) make the room ask
    /// its encoder for a cheaper setting each second (VP8 profile 1, then 3: the encoder restarts
    /// with a key frame; at the last step the mixes go to Opus complexity 1), and the receivers
    /// still get every picture, see the room and hear the others; quick encodes bring it back one
    /// step per 10 s.
    @Test func slowEncodesMakeTheRoomAskForAFasterEncoder() throws {
        let (harness, a, _, _) = try threeInARoom()
        try harness.run(for: .seconds(1))
        #expect(harness.lastProfile == 0 && harness.lastCPUUsed == -6)
        harness.encodeTime = .milliseconds(53)  // of 67 ms at 15 fps
        try harness.run(for: .milliseconds(1500))
        #expect([1, 3].contains(harness.lastProfile ?? 0), "a step a second: \(String(describing: harness.lastProfile))")
        try harness.run(for: .seconds(1))
        let before = a.picturesDecoded, cheaper = harness.now + .seconds(1)
        try harness.run(for: .seconds(4))
        #expect(harness.lastProfile == 3 && harness.room.encoderSpeed.stepsFaster == 2)
        #expect(harness.room.mixer.complexity == 1)
        expectHears(a, since: cheaper, heard: [660, 880], silent: [440])
        #expect((57...61).contains(a.picturesDecoded - before), "\(a.picturesDecoded - before) pictures in 4 s at 15 fps")
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
        harness.encodeTime = .milliseconds(5)
        try harness.run(for: .seconds(13))
        #expect(harness.lastProfile == 1 && harness.room.mixer.complexity == 5)
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
    }

    /// On a host of several rooms, a room whose encodes stay slow at the cheapest encoder step
    /// draws half its canvas: the receivers decode 320x180 pictures with every colour in its
    /// slot, the room's main output says so, and the template keeps the canvas it asked; when
    /// the encodes are quick again the canvas comes back.
    @Test func aRoomPressedOnASharedHostDrawsHalfItsCanvas() throws {
        let harness = RoomHarness(canvas: VideoSize(width: 640, height: 360))
        let a = try harness.join("a", tone: 440, colour: Self.red)
        try harness.join("b", tone: 660, colour: Self.green)
        try harness.join("c", tone: 880, colour: Self.blue)
        harness.room.setHostLoad(nil, rooms: 4)
        try harness.run(for: .seconds(1))
        #expect(a.latest?.width == 640)
        harness.encodeTime = .milliseconds(53)  // of 67 ms at 15 fps
        try harness.run(for: .seconds(7))
        #expect(harness.room.encoderSpeed.setting.halvesCanvas)
        #expect(a.latest.map { ($0.width, $0.height) } ?? (0, 0) == (320, 180))
        #expect(harness.room.compositeOutputs.first.map { ($0.width, $0.height) } ?? (0, 0) == (320, 180))
        #expect(harness.room.currentDescription.canvas.width == 640)
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
        harness.encodeTime = .milliseconds(5)
        try harness.run(for: .seconds(12))
        #expect(a.latest?.width == 640)
        expectSees(a, Self.grid3(Self.red, Self.green, Self.blue))
    }

    /// The same room over a network that loses 5 % of packets and adds up to 30 ms of jitter
    /// each way: the host repairs what it receives (NACK, RTX from the peers) and answers the
    /// peers' NACKs about the composite from its history; the peers conceal lost audio and ask
    /// for key frames; each still hears the others and not itself, and sees every colour in its slot.
    @Test func theRoomHoldsAtFivePercentLossWithThirtyMillisecondsOfJitter() throws {
        let impairment = NetEm<WirePacket>.Impairment(loss: 0.05, delay: .milliseconds(20), jitter: .milliseconds(30))
        let (harness, a, b, c) = try threeInARoom(impairment, seed: 7)
        let start = harness.now + .seconds(1)
        try harness.run(for: .seconds(4))
        expectHears(a, since: start, heard: [660, 880], silent: [440])
        expectHears(b, since: start, heard: [440, 880], silent: [660])
        expectHears(c, since: start, heard: [440, 660], silent: [880])
        for peer in [a, b, c] {
            expectSees(peer, Self.grid3(Self.red, Self.green, Self.blue), tolerance: 32)
            #expect(peer.picturesDecoded > 15, "\(peer.identity) decoded \(peer.picturesDecoded) composite pictures in 4 s")
        }
        let nacks = harness.room.participants.reduce(0) { $0 + $1.inbound.nacksSent }
        #expect(nacks > 0, "the host asked for the packets it lost")
        #expect(harness.room.packetsResent > 0, "the host sent again what the peers asked for")
        #expect([a, b, c].contains { $0.retransmissionsReceived > 0 }, "the host's resends came on its RTX stream")
        #expect(a.up.counters.lost > 0 && a.down.counters.lost > 0)
    }

    /// Every member's RTCP goes at its own time, however many are due around the same instant:
    /// the room takes them from its schedule (a heap by deadline), and one who joined late or
    /// whose reports were just sent is not skipped. The guests send nothing (a packet or a report
    /// that finds RTCP due sends it too), so only the room's timeouts send; each of eight hears a fresh
    /// sender report for its composite in every 2 s (the video interval is 1 s, randomized over
    /// 0.5-1.5 s, RFC 3550 §6.2).
    @Test func everyMembersRTCPComesAtItsTimeFromTheSchedule() throws {
        let harness = RoomHarness()
        func silentGuest(_ number: Int) throws -> MemoryPeer {
            let peer = try harness.join("g\(number)", tone: 300 + 50 * Double(number), colour: Self.red)
            peer.sendsAudio = false
            peer.sendsVideo = false
            peer.sendsRTCP = false
            return peer
        }
        var peers = try (0..<6).map(silentGuest)
        try harness.run(for: .milliseconds(700))
        peers += try (6..<8).map(silentGuest)
        var lastReport: [String: UInt64] = [:]
        for window in 0..<4 {
            try harness.run(for: .seconds(2))
            for peer in peers {
                let report = peer.hostVideoSSRC.flatMap { peer.senderReports[$0] }?.ntpTimestamp
                #expect(report != nil && report != lastReport[peer.identity], "window \(window): no new sender report for \(peer.identity)'s composite")
                lastReport[peer.identity] = report
            }
        }
    }

    /// The host sends sender reports for the mix and the composite, and their NTP↔RTP mappings
    /// place each packet at the wall-clock instant it stands for: the earliest arrive the link's
    /// 10 ms after it, within the harness's 5 ms step (it encodes at once). So a receiver that
    /// syncs by SR plays the two together.
    @Test func senderReportsMapTheMixAndTheCompositeToOneClock() throws {
        let (harness, a, b, _) = try threeInARoom()
        try harness.run(for: .seconds(4))
        for peer in [a, b] {
            let ssrcs = Set(peer.arrivals.map(\.ssrc))
            #expect(ssrcs.count == 2, "\(peer.identity) got the mix and the composite")
            for ssrc in ssrcs {
                guard let report = peer.senderReports[ssrc] else {
                    Issue.record("\(peer.identity) got no sender report for \(ssrc)")
                    continue
                }
                #expect(report.packetCount > 30, "the SR counts what was sent: \(report.packetCount)")
                let isAudio = ssrc == peer.hostAudioSSRC
                let rate = isAudio ? 48_000.0 : 90_000.0
                let reportNTP = Double(report.ntpTimestamp) / 4_294_967_296
                let lateness = peer.arrivals.filter { $0.ssrc == ssrc }.map { arrival in
                    let mapped = reportNTP + Double(Int32(bitPattern: arrival.timestamp &- report.rtpTimestamp)) / rate
                    return Double(RoomHarness.wallClock.ntp(at: arrival.at).rawValue) / 4_294_967_296 - mapped
                }
                let earliest = lateness.min() ?? 1
                #expect(earliest > 0.0095 && earliest < 0.0155,
                        "\(peer.identity): \(isAudio ? "mix" : "composite") packets arrive \(earliest * 1000) ms after their SR-mapped time at best")
            }
        }
    }
}
