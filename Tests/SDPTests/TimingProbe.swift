import Foundation
import SDP
import Testing

@Suite struct TimingProbe {
    @Test func probe() throws {
        let bytes = try Fixture.bytes("chromium-offer.sdp")
        let offer = try Fixture.offer("chromium")
        let host = Fixture.host(for: offer)
        let clock = ContinuousClock()
        let n = Int(ProcessInfo.processInfo.environment["PROBE_N"] ?? "200") ?? 200
        var t = clock.now
        for _ in 0..<n { _ = try SessionDescription(parsing: bytes) }
        print("parse", (clock.now - t) / n)
        t = clock.now
        for _ in 0..<n { _ = offer.serializedBytes() }
        print("serialize", (clock.now - t) / n)
        t = clock.now
        for _ in 0..<n { _ = try negotiate(offer: offer, host: host) }
        print("negotiate", (clock.now - t) / n)
        t = clock.now
        for _ in 0..<n { _ = lines(String(decoding: bytes, as: UTF8.self)) }
        print("lines", (clock.now - t) / n)
    }
}
