import RTP
import Streams
import Wire

/// The test epoch: every scenario starts at 10 s on the manual clock.
let start = Instant(nanoseconds: 10_000_000_000)

/// `start` plus `ms` milliseconds.
func at(_ ms: Int) -> Instant { start + .milliseconds(ms) }

/// A video packet of `stream` with `size` payload bytes whose first two bytes carry the number.
func videoPacket(ssrc: SSRC = 0x1111, sequenceNumber: UInt16, timestamp: UInt32, size: Int = 100,
                 marker: Bool = false) -> RTPPacket {
    var payload = [UInt8](repeating: 0xAB, count: size)
    if size >= 2 {
        payload[0] = UInt8(sequenceNumber >> 8)
        payload[1] = UInt8(sequenceNumber & 0xFF)
    }
    return RTPPacket(marker: marker, payloadType: 96, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc,
                     payload: payload[...])
}
