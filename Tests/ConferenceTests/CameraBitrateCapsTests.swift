import Compositing
import Conference
import Media
import RTP
import Testing
import Wire

/// Each camera's cap from its tile (`CameraBitrateRule`), and the room sending it as REMB.
@Suite struct CameraBitrateCapsTests {
    static let canvas = TemplateDescription.Canvas(width: 1280, height: 720, fps: 30)

    static func grid(_ count: Int, speaker: String? = nil) -> (cameras: [(id: String, identity: String)], layout: TemplateDescription) {
        let identities = (0..<count).map { "g\($0)" }
        let layout = LayoutRequest.preset(.grid).template(participants: identities, activeSpeaker: speaker, canvas: canvas)
        return (identities.map { ("p-\($0)", $0) }, layout)
    }

    @Test func aTileAt30fpsIsCappedByItsPixels() {
        let rule = CameraBitrateRule()
        #expect(rule.cap(pixels: 640 * 360, fps: 30, isSpeaker: false, forwarded: false) == 552_960)
        #expect(rule.cap(pixels: 16 * 16, fps: 30, isSpeaker: false, forwarded: false) == rule.minimum)
        #expect(rule.cap(pixels: 1920 * 1080, fps: 60, isSpeaker: false, forwarded: false) == rule.maximum)
        #expect(rule.cap(pixels: nil, fps: 30, isSpeaker: false, forwarded: false) == rule.minimum)
        // Never above the path's own estimate, when there is one.
        #expect(rule.cap(pixels: 640 * 360, fps: 30, isSpeaker: false, forwarded: false, estimate: 300_000) == 300_000)
        #expect(rule.cap(pixels: nil, fps: 30, isSpeaker: false, forwarded: true, estimate: 800_000) == 800_000)
    }

    @Test func aGridOf9GivesSmallerCapsThanAGridOf4() {
        let rule = CameraBitrateRule()
        let (four, fourLayout) = Self.grid(4)
        let (nine, nineLayout) = Self.grid(9)
        let capsOf4 = rule.caps(cameras: four, layout: fourLayout, speaker: nil, forwarded: [])
        let capsOf9 = rule.caps(cameras: nine, layout: nineLayout, speaker: nil, forwarded: [])
        #expect(capsOf4.count == 4 && capsOf9.count == 9)
        #expect(Set(capsOf4.values) == [552_960])  // 640x360
        #expect(Set(capsOf9.values) == [245_952])  // 427x240
        #expect(capsOf9.values.allSatisfy { nineCap in capsOf4.values.allSatisfy { nineCap < $0 } })
    }

    @Test func theSpeakerGetsMore() {
        let rule = CameraBitrateRule()
        let (cameras, layout) = Self.grid(9, speaker: "g4")
        let caps = rule.caps(cameras: cameras, layout: layout, speaker: "g4", forwarded: [])
        #expect(caps["p-g4"] == 368_928)  // 1.5 × 245,952
        #expect(caps["p-g0"] == 245_952)
        // In the speaker preset its tile is the large one already (1280x540): 1.5 × 1,658,880, near the ceiling.
        let speakerLayout = LayoutRequest.preset(.speaker).template(participants: cameras.map(\.identity), activeSpeaker: "g4", canvas: Self.canvas)
        let speakerCaps = rule.caps(cameras: cameras, layout: speakerLayout, speaker: "g4", forwarded: [])
        #expect(speakerCaps["p-g4"] == 2_488_320)
        #expect(speakerCaps.filter { $0.key != "p-g4" }.values.allSatisfy { $0 < rule.maximum })
    }

    @Test func aSubscribedCameraIsUncappedAndOneNotShownGetsTheLeast() {
        let rule = CameraBitrateRule()
        let (cameras, layout) = Self.grid(9)
        // A template that shows only g0: g1 is subscribed to, the rest are in no tile.
        var only = layout
        only.positions = layout.positions.filter { $0.participant == "g0" }
        let caps = rule.caps(cameras: cameras, layout: only, speaker: nil, forwarded: ["p-g1"])
        #expect(caps["p-g1"] == rule.maximum)
        #expect(caps["p-g2"] == rule.minimum)
        #expect(caps["p-g0"] == 245_952)
        // A second guest of an identity is not drawn (the first one is).
        let twice = rule.caps(cameras: cameras + [("p-g0-again", "g0")], layout: layout, speaker: nil, forwarded: [])
        #expect(twice["p-g0-again"] == rule.minimum)
    }

    /// The caps of the room's cameras at 1280x720 and 15 fps (the harness's rate).
    static func expected(tile: (width: Int, height: Int), speaker: Bool) -> Int {
        CameraBitrateRule().cap(pixels: tile.width * tile.height, fps: 15, isSpeaker: speaker, forwarded: false)
    }

    @Test func aCameraHearsItsCapAsREMBAndALowerOneWhenTheRoomGrows() throws {
        let harness = RoomHarness(canvas: VideoSize(width: 1280, height: 720))
        var peers: [MemoryPeer] = []
        for index in 0..<4 {
            peers.append(try harness.join("g\(index)", tone: 300 + 100 * Double(index), colour: YUVColor(y: 80, u: 90, v: 200)))
        }
        try harness.run(for: .milliseconds(500))
        func lastCap(_ peer: MemoryPeer) throws -> ReceiverEstimatedMaximumBitrate {
            try #require(peer.capsReceived.last?.remb, "\(peer.identity) got no REMB")
        }
        for peer in peers {
            let remb = try lastCap(peer)
            #expect(remb.ssrcs == [peer.cameraSSRC])
            let speaker = harness.room.activeSpeaker == peer.identity
            #expect(remb.bitrate == UInt64(Self.expected(tile: (640, 360), speaker: speaker)), "\(peer.identity)")
        }
        // Soft state: sent again every second, not only on changes.
        let before = peers[0].capsReceived.count
        try harness.run(for: .milliseconds(2_100))
        #expect(peers[0].capsReceived.count >= before + 2)
        let capOf4 = Self.expected(tile: (640, 360), speaker: false)

        for index in 4..<9 {
            peers.append(try harness.join("g\(index)", tone: 300 + 100 * Double(index), colour: YUVColor(y: 80, u: 90, v: 200)))
        }
        try harness.run(for: .milliseconds(300))
        for peer in peers {
            let remb = try lastCap(peer)
            #expect(remb.ssrcs == [peer.cameraSSRC])
            let speaker = harness.room.activeSpeaker == peer.identity
            #expect(remb.bitrate == UInt64(Self.expected(tile: (427, 240), speaker: speaker)), "\(peer.identity)")
            if !speaker { #expect(remb.bitrate < UInt64(capOf4)) }
        }
        #expect(harness.room.cameraBitrateCapsSent == peers.reduce(0) { sum, peer in
            sum + Self.expected(tile: (427, 240), speaker: harness.room.activeSpeaker == peer.identity)
        })
    }

    @Test func oneSharingAScreenIsLeftTheScreensRoom() throws {
        let harness = RoomHarness(canvas: VideoSize(width: 1280, height: 720))
        let a = try harness.join("a", tone: 440, colour: YUVColor(y: 80, u: 90, v: 200))
        try harness.join("b", tone: 660, colour: YUVColor(y: 150, u: 50, v: 50))
        try harness.run(for: .milliseconds(300))
        let camera = try #require(a.capsReceived.last?.remb.bitrate)
        try harness.renegotiate(a) { try $0.renegotiate(shareScreen: "2") }
        try harness.run(for: .milliseconds(600))
        // Its camera's tile changed too (the screen takes the main tile): whatever it is now, the
        // screen's 2.5 Mbit/s is added, since a browser caps its whole transport with a REMB.
        let now = try #require(a.capsReceived.last?.remb)
        #expect(now.ssrcs == [a.cameraSSRC])
        #expect(now.bitrate > UInt64(CameraBitrateRule().maximum) && now.bitrate != camera)
    }

    @Test func aSubscribedCameraIsSentTheMaximum() throws {
        let harness = RoomHarness(canvas: VideoSize(width: 1280, height: 720))
        let a = try harness.join("a", tone: 440, colour: YUVColor(y: 80, u: 90, v: 200))
        let b = try harness.join("b", tone: 660, colour: YUVColor(y: 150, u: 50, v: 50))
        try harness.renegotiate(b) { try $0.renegotiate(receiver: "2") }
        try harness.run(for: .milliseconds(300))
        try harness.act { room, now in try room.subscribe(b.id, to: "a", source: .camera, now: now) }
        try harness.run(for: .milliseconds(300))
        #expect(a.capsReceived.last?.remb.bitrate == UInt64(CameraBitrateRule().maximum))
        try harness.act { room, _ in try room.unsubscribe(b.id, from: "a", source: .camera) }
        try harness.run(for: .milliseconds(300))
        #expect(a.capsReceived.last.map { $0.remb.bitrate < UInt64(CameraBitrateRule().maximum) } == true)
    }
}
