import RTP
import Testing
import Wire
@testable import Load

/// The load's mix, put back in order before decoding: as a player's jitter buffer would.
@Suite struct MixReorderTests {
    static func packet(_ sequence: UInt16) -> RTPPacket {
        RTPPacket(payloadType: PayloadType(111), sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: SSRC(1), payload: [1][...])
    }
    static let start = Instant.milliseconds(1_000)

    @Test func reorderedPacketsComeOutInOrderAGapIsPassedAfterTheWaitAndLateOnesAreDropped() {
        var reorder = MixReorder()
        var out: [UInt16] = []
        func take(_ packets: [RTPPacket]) { out += packets.map(\.sequenceNumber) }
        take(reorder.insert(Self.packet(65_534), now: Self.start))
        take(reorder.insert(Self.packet(0), now: Self.start))        // 65535 is missing: 0 waits
        #expect(out == [65_534])
        take(reorder.insert(Self.packet(65_535), now: Self.start + .milliseconds(30)))
        #expect(out == [65_534, 65_535, 0], "across the wrap, in order")
        take(reorder.insert(Self.packet(2), now: Self.start + .milliseconds(40)))  // 1 is lost
        take(reorder.release(now: Self.start + .milliseconds(100)))
        #expect(out.last == 0, "2 waits while 1 may still come")
        take(reorder.release(now: Self.start + .milliseconds(40) + MixReorder.wait))
        #expect(out == [65_534, 65_535, 0, 2], "the gap is passed over after the wait")
        take(reorder.insert(Self.packet(1), now: Self.start + .milliseconds(300)))
        #expect(out.count == 4 && reorder.late == 1, "behind what was passed on: late")
    }
}
