import RTP
import Streams
import Testing
import Wire

/// `RTPForwarder`: a sender's VP8 packets onto the host's stream, from a key frame, numbered
/// as one stream across a change of source and a pause.
@Suite struct RTPForwarderTests {
    /// A VP8 packet: `keyFrame` starts a key frame (S=1, partition 0, frame tag P=0), otherwise
    /// it is an inter frame's first packet (P=1).
    private func packet(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, keyFrame: Bool = false) -> RTPPacket {
        RTPPacket(marker: true, payloadType: PayloadType(rawValue: 100), sequenceNumber: sequenceNumber, timestamp: timestamp,
                  ssrc: SSRC(rawValue: ssrc), extensions: [RTPHeaderExtension(id: 3, data: [1])],
                  payload: [0x10, keyFrame ? 0x00 : 0x01, 0x02, 0x03][...])
    }

    private func forwarder() -> RTPForwarder {
        RTPForwarder(ssrc: SSRC(rawValue: 42), payloadType: PayloadType(rawValue: 96), firstSequenceNumber: 1000, firstTimestamp: 5000,
                     now: .milliseconds(0))
    }

    @Test func itStartsAtAKeyFrameWithItsOwnHeader() {
        var forwarding = forwarder()
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 65_534, timestamp: 90_000), now: .milliseconds(10)) == nil)
        let first = forwarding.forward(packet(ssrc: 7, sequenceNumber: 65_535, timestamp: 93_000, keyFrame: true), now: .milliseconds(40))
        #expect(first?.ssrc == SSRC(rawValue: 42) && first?.payloadType == PayloadType(rawValue: 96))
        #expect(first?.sequenceNumber == 1000 && first?.extensions.isEmpty == true)
        #expect(first?.payload == [0x10, 0x00, 0x02, 0x03][...], "the payload as sent")
        // Across the sender's wrap, one up; its timestamps shifted by the same amount.
        let next = forwarding.forward(packet(ssrc: 7, sequenceNumber: 0, timestamp: 96_000), now: .milliseconds(73))
        #expect(next?.sequenceNumber == 1001 && next.map { $0.timestamp &- (first?.timestamp ?? 0) } == 3000)
        // A gap the sender left stays a gap (the receiver may NACK it); a late repair fills it.
        let after = forwarding.forward(packet(ssrc: 7, sequenceNumber: 2, timestamp: 99_000), now: .milliseconds(106))
        #expect(after?.sequenceNumber == 1003)
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 1, timestamp: 96_000), now: .milliseconds(110))?.sequenceNumber == 1002)
        // Older than the key frame it began at: not forwarded.
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 65_533, timestamp: 87_000), now: .milliseconds(111)) == nil)
        #expect(forwarding.packetsHeldBack == 1 && forwarding.packetsForwarded == 4)
    }

    /// A key frame's first packet that comes after later packets were held back (lost and
    /// repaired, or reordered) starts nothing: those later packets are gone, and the receiver
    /// would wait at their hole. The next key frame starts the stream.
    @Test func aLateKeyFrameStartIsNotWhereItBegins() {
        var forwarding = forwarder()
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 21, timestamp: 1000), now: .milliseconds(0)) == nil)
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 22, timestamp: 4000), now: .milliseconds(33)) == nil)
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 20, timestamp: 1000, keyFrame: true), now: .milliseconds(40)) == nil,
                "the repair of the key frame's first packet")
        #expect(forwarding.waitingForKeyFrame)
        let next = forwarding.forward(packet(ssrc: 7, sequenceNumber: 23, timestamp: 7000, keyFrame: true), now: .milliseconds(66))
        #expect(next?.sequenceNumber == 1000)
        #expect(forwarding.forward(packet(ssrc: 7, sequenceNumber: 24, timestamp: 10_000), now: .milliseconds(99))?.sequenceNumber == 1001)
    }

    @Test func anotherSourceGoesOnOneAfterTheHighest() {
        var forwarding = forwarder()
        _ = forwarding.forward(packet(ssrc: 7, sequenceNumber: 10, timestamp: 1000, keyFrame: true), now: .milliseconds(0))
        let last = forwarding.forward(packet(ssrc: 7, sequenceNumber: 11, timestamp: 4000), now: .milliseconds(33))
        // A new SSRC (the sender joined again): nothing until its key frame, then numbering goes on
        // and the timestamp moves as far as the clock did (500 ms: 45,000 ticks).
        #expect(forwarding.forward(packet(ssrc: 8, sequenceNumber: 500, timestamp: 777), now: .milliseconds(500)) == nil)
        let switched = forwarding.forward(packet(ssrc: 8, sequenceNumber: 501, timestamp: 999_999, keyFrame: true), now: .milliseconds(533))
        #expect(switched?.sequenceNumber == (last?.sequenceNumber ?? 0) &+ 1)
        #expect(switched.map { $0.timestamp &- (last?.timestamp ?? 0) } == 45_000)
        // restart(): waits for a key frame again, then goes on the same way.
        forwarding.restart()
        #expect(forwarding.forward(packet(ssrc: 8, sequenceNumber: 502, timestamp: 1_002_999), now: .milliseconds(566)) == nil)
        let resumed = forwarding.forward(packet(ssrc: 8, sequenceNumber: 503, timestamp: 1_005_999, keyFrame: true), now: .milliseconds(600))
        #expect(resumed?.sequenceNumber == (switched?.sequenceNumber ?? 0) &+ 1)
    }
}
