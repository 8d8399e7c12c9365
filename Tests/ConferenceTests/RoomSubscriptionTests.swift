import Compositing
import Conference
import Media
import RTP
import Testing
import Wire
import WireTesting

/// Subscriptions (seed 003) in memory: one participant's camera forwarded as it is sent onto an
/// m-line of another's session, or to a viewer of that one track; what the subscriber decodes
/// is the sender's picture (its size and colour, not the composite's), numbered as one stream.
@Suite struct RoomSubscriptionTests {
    static let red = YUVColor(red: 220, green: 30, blue: 30)
    static let green = YUVColor(red: 30, green: 200, blue: 30)
    static let blue = YUVColor(red: 30, green: 30, blue: 220)

    /// a, b, c in a room; c has a second, receive-only video m-line "2" (added by renegotiation).
    private func roomWithAReceiver() throws -> (RoomHarness, MemoryPeer, MemoryPeer, MemoryPeer) {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: Self.red)
        let b = try harness.join("b", tone: 660, colour: Self.green)
        let c = try harness.join("c", tone: 880, colour: Self.blue)
        try harness.renegotiate(c) { try $0.renegotiate(receiver: "2") }
        try harness.run(for: .milliseconds(500))
        return (harness, a, b, c)
    }

    private func expectPicture(_ picture: I420Frame?, colour: YUVColor, size: VideoSize, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let picture else {
            Issue.record("no picture decoded", sourceLocation: sourceLocation)
            return
        }
        #expect(VideoSize(width: picture.width, height: picture.height) == size, sourceLocation: sourceLocation)
        let seen = picture.pixel(x: picture.width / 2, y: picture.height / 2)
        #expect(seen.isClose(to: colour, tolerance: 24), "centre is \(seen), expected \(colour)", sourceLocation: sourceLocation)
    }

    /// Sequence numbers of a forwarded stream go up by one from packet to packet (no loss here).
    private func expectContinuous(_ packets: [(sequenceNumber: UInt16, timestamp: UInt32, at: Instant)],
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        for (earlier, later) in zip(packets, packets.dropFirst()) {
            #expect(later.sequenceNumber == earlier.sequenceNumber &+ 1, sourceLocation: sourceLocation)
            #expect(Int32(bitPattern: later.timestamp &- earlier.timestamp) >= 0, sourceLocation: sourceLocation)
        }
    }

    @Test func aSubscriptionForwardsTheCameraAsSentOnTheFreeMLine() throws {
        let (harness, _, _, c) = try roomWithAReceiver()
        let subscribedAt = harness.now
        let state = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        #expect(state == SubscriptionState(participant: "a", source: .camera, mid: "2", count: 1))
        try harness.run(for: .seconds(1))
        let receiver = try #require(c.forwarded(mid: "2"))
        // a's camera as a sends it: its size, not the composite's, and its colour.
        expectPicture(receiver.latest, colour: Self.red, size: MemoryPeer.cameraSize)
        let first = try #require(receiver.firstPictureAt)
        #expect(first - subscribedAt <= .milliseconds(300), "the key frame asked at the start came in \(first - subscribedAt)")
        #expect(receiver.picturesDecoded >= 10)
        expectContinuous(receiver.packets)
        // The composite goes on on c's first video m-line.
        #expect(c.latest.map { VideoSize(width: $0.width, height: $0.height) } == RoomHarness.canvas)
        #expect(harness.room.subscribers(of: TrackReference(participant: "p-a", source: .camera)).map(\.identity) == ["c"])
    }

    @Test func subscriptionsAreCountedAndTheStreamStopsAtZero() throws {
        let (harness, _, _, c) = try roomWithAReceiver()
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        let again = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        #expect(again.count == 2 && again.mid == "2")
        // Its one extra m-line carries a's camera: b's has nowhere to go.
        #expect(throws: SubscriptionError.self) { try harness.act { room, now in try room.subscribe(c.id, to: "b", source: .camera, now: now) } }
        #expect(try harness.act { room, _ in try room.unsubscribe(c.id, from: "a", source: .camera) } == 1)
        try harness.run(for: .seconds(1))
        let receiver = try #require(c.forwarded(mid: "2"))
        let afterOne = receiver.packets.count
        #expect(afterOne >= 10, "one subscription left: the stream goes on")
        #expect(try harness.act { room, _ in try room.unsubscribe(c.id, from: "a", source: .camera) } == 0)
        try harness.run(for: .milliseconds(200))
        let stoppedAt = receiver.packets.count
        try harness.run(for: .seconds(1))
        #expect(receiver.packets.count == stoppedAt, "at zero the stream stops")
        #expect(throws: SubscriptionError.self) { try harness.act { room, _ in try room.unsubscribe(c.id, from: "a", source: .camera) } }

        // The m-line is free again: b's camera on it, numbered on from where a's stopped.
        let lastOfA = try #require(receiver.packets.last)
        let state = try harness.act { room, now in try room.subscribe(c.id, to: "b", source: .camera, now: now) }
        #expect(state.count == 1 && state.mid == "2")
        try harness.run(for: .seconds(1))
        expectPicture(receiver.latest, colour: Self.green, size: MemoryPeer.cameraSize)
        let firstOfB = try #require(receiver.packets.dropFirst(stoppedAt).first)
        #expect(firstOfB.sequenceNumber == lastOfA.sequenceNumber &+ 1)
        #expect(Int32(bitPattern: firstOfB.timestamp &- lastOfA.timestamp) > 0)
        expectContinuous(Array(receiver.packets.dropFirst(stoppedAt)))

        // ?all=1 stops it at once.
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "b", source: .camera, now: now) }
        #expect(try harness.act { room, _ in try room.unsubscribe(c.id, from: "b", source: .camera, all: true) } == 0)
        #expect(harness.room.subscriptions(of: c.id).isEmpty)
    }

    @Test func refusalsSayWhy() throws {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: Self.red)
        _ = try harness.join("b", tone: 660, colour: Self.green)
        // a has no m-line besides its composite's.
        #expect(throws: SubscriptionError.self) { try harness.act { room, now in try room.subscribe(a.id, to: "b", source: .camera, now: now) } }
        // No one called z; b shares no screen.
        try harness.renegotiate(a) { try $0.renegotiate(receiver: "2") }
        do {
            _ = try harness.act { room, now in try room.subscribe(a.id, to: "z", source: .camera, now: now) }
            Issue.record("a subscription to nobody was made")
        } catch let error as SubscriptionError {
            #expect(error == .noSuchTrack("no participant z in room memory"))
        }
        #expect(throws: SubscriptionError.noSuchTrack("b sends no screen now")) {
            try harness.act { room, now in try room.subscribe(a.id, to: "b", source: .screen, now: now) }
        }
    }

    /// The subscriber's NACKs are answered from what was forwarded, on the RTX stream it
    /// negotiated: with 5 % loss on every path it still decodes a's camera.
    @Test func lossOnTheForwardedStreamIsRepaired() throws {
        let harness = RoomHarness(impairment: .init(loss: 0.05), seed: 3)
        _ = try harness.join("a", tone: 440, colour: Self.red)
        let c = try harness.join("c", tone: 880, colour: Self.blue)
        try harness.renegotiate(c) { try $0.renegotiate(receiver: "2") }
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        let resentBefore = harness.room.packetsResent
        try harness.run(for: .seconds(4))
        let receiver = try #require(c.forwarded(mid: "2"))
        expectPicture(receiver.latest, colour: Self.red, size: MemoryPeer.cameraSize)
        #expect(receiver.picturesDecoded >= 40, "decoded \(receiver.picturesDecoded) of ~60 pictures")
        #expect(harness.room.packetsResent > resentBefore)
    }

    /// A subscriber NACKs a forwarded packet the host never held (lost on its way in and not
    /// repaired in time): that picture is past repair, so the host asks the camera for a key
    /// frame, as it does for the composite (CI: a subscriber under 5 % loss saw no frame in 8 s).
    @Test func aNACKPastRepairAsksTheCameraForAKeyFrame() throws {
        let (harness, a, _, c) = try roomWithAReceiver()
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        try harness.run(for: .seconds(2))  // past the follow-up key frame
        let slot = try #require(c.negotiated.media.first { $0.mid == "2" }?.hostSender)
        let last = try #require(c.forwarded(mid: "2")?.packets.last)
        let before = a.pictureLossIndications
        try harness.run(for: .milliseconds(500))
        #expect(a.pictureLossIndications == before, "nothing asked while the stream is whole")
        let nack = GenericNACK(senderSSRC: SSRC(rawValue: 7), mediaSSRC: SSRC(rawValue: slot.ssrc),
                               pairs: [NACKPair(packetID: last.sequenceNumber &- 3000, lostBitmask: 0)])
        let bytes = try RTCPPacket.serializeCompound([.nack(nack)])
        try harness.act { room, now in room.receiveRTCP(bytes, from: c.id, now: now) }
        try harness.run(for: .milliseconds(300))
        #expect(a.pictureLossIndications > before, "the host asked a for a key frame")
    }

    /// The first key frame forwarded lost before the subscriber knew the stream (nothing earlier
    /// to NACK against): the key frame asked for a second after forwarding began heals it.
    @Test func aSubscriberThatMissedTheFirstKeyFrameDecodesFromTheFollowUp() throws {
        let (harness, _, _, c) = try roomWithAReceiver()
        let receiver = try #require(c.forwarded(mid: "2"))
        receiver.missesFirstPackets = 1
        let subscribedAt = harness.now
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        try harness.run(for: .milliseconds(900))
        #expect(receiver.picturesDecoded == 0, "only deltas came after the lost key frame")
        try harness.run(for: .milliseconds(900))
        let first = try #require(receiver.firstPictureAt)
        #expect(first - subscribedAt < .milliseconds(1600))
        expectPicture(receiver.latest, colour: Self.red, size: MemoryPeer.cameraSize)
    }

    /// A camera muted by PATCH shows the placeholder in the composite: its subscribers get
    /// nothing either, until it is unmuted (from a key frame).
    @Test func aMutedCameraIsNotForwarded() throws {
        let (harness, _, _, c) = try roomWithAReceiver()
        _ = try harness.act { room, now in try room.subscribe(c.id, to: "a", source: .camera, now: now) }
        try harness.run(for: .seconds(1))
        let receiver = try #require(c.forwarded(mid: "2"))
        try harness.act { room, _ in room.patch("p-a", videoMuted: true) }
        try harness.run(for: .milliseconds(200))
        let muted = receiver.packets.count
        try harness.run(for: .seconds(1))
        #expect(receiver.packets.count == muted)
        let decoded = receiver.picturesDecoded
        try harness.act { room, _ in room.patch("p-a", videoMuted: false) }
        try harness.run(for: .seconds(1))
        #expect(receiver.picturesDecoded > decoded + 5)
        expectContinuous(Array(receiver.packets.dropFirst(muted)))
    }

    /// A viewer of a's camera alone decodes a's picture on its first video m-line; when a
    /// leaves, it is sent an RTCP BYE and closed.
    @Test func aTrackViewerGetsThatTrackAndEndsWithIt() throws {
        let harness = RoomHarness()
        let a = try harness.join("a", tone: 440, colour: Self.red)
        _ = try harness.join("b", tone: 660, colour: Self.green)
        let viewer = try harness.joinTrackViewer(of: "a")
        try harness.run(for: .seconds(1))
        expectPicture(viewer.latest, colour: Self.red, size: MemoryPeer.cameraSize)
        #expect(harness.room.participant(id: viewer.id)?.isViewer == true)
        #expect(!harness.events.contains { $0.participant == viewer.id }, "a viewer is not a participant: \(harness.events.filter { $0.participant == viewer.id })")

        #expect(throws: SubscriptionError.self) { try harness.joinTrackViewer(of: "a", source: .screen) }
        try harness.leave(a)
        #expect(harness.closed == [viewer.id])
        #expect(harness.room.participant(id: viewer.id) == nil)
        try viewer.receive(now: harness.now + .milliseconds(100))
        #expect(viewer.receivedGoodbye)
    }
}
