import Sockets
import Foundation
import Testing
import Transport
import Wire
@testable import Server

/// Removes its peer from the port when the transport fails, as the sessions do.
private final class RemovingSink: PeerEventSink {
    var port: MediaPort?
    var events: [PeerTransport.Event] = []
    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        events.append(event)
        if case .failed = event { port?.remove(peer) }
    }
}

@Suite struct MediaPortTests {
    private func makeTransport(now: Instant) throws -> PeerTransport {
        let certificate = try DTLSCertificate()
        let dtls = try DTLSTransport(context: DTLSContext(certificate: certificate), role: .server,
                                     remoteFingerprints: [certificate.fingerprint], now: now)
        return PeerTransport(ice: .lite(ICELiteAgent(local: .random(), remote: .random())), dtls: dtls, now: now)
    }

    @Test func aPeerThatNeverChecksInIsDroppedAtTheConsentTimeoutAndFreed() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        let port = try MediaPort(loop: loop, bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        let sink = RemovingSink()
        sink.port = port
        weak var released: PeerTransport?
        do {
            let transport = try makeTransport(now: clock.now())
            released = transport
            _ = port.add(transport, localUfrag: "ufrag1", sink: sink)
        }
        #expect(port.peerCount == 1)
        let confined = LoopConfined(port, on: loop)
        let thread = Thread { loop.run() }
        thread.start()
        defer { loop.stop() }

        // 29 s: still there. 31 s: consent has lapsed (RFC 7675 §5.1), the peer is gone.
        clock.advance(by: .seconds(29))
        let before = try runOnLoop(loop) { confined.value.peerCount }
        #expect(before == 1)
        clock.advance(by: .seconds(2))
        let after = try runOnLoop(loop) { confined.value.peerCount }
        #expect(after == 0)
        #expect(sink.events.contains(.failed(.consentLost)))
        #expect(released == nil, "the port keeps no reference to a removed transport")
    }

    @Test func datagramsFromStrangersAreCountedAsUnroutable() throws {
        let loop = try EventLoop()
        let port = try MediaPort(loop: loop, bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        let stranger = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        stranger.send([([0x80, 0x60, 0, 1], port.socket.localAddress), ([0x00, 0x01, 0, 0], port.socket.localAddress), ([], port.socket.localAddress)])
        let confined = LoopConfined(port, on: loop)
        let thread = Thread { loop.run() }
        thread.start()
        defer { loop.stop() }
        var unroutable = 0
        for _ in 0..<200 where unroutable < 3 {
            unroutable = try runOnLoop(loop) { confined.value.counters.unroutable }
            if unroutable < 3 { usleep(2_000) }  // bounded: at most 200 short waits for the kernel to deliver
        }
        #expect(unroutable == 3)
    }

    /// Runs `body` on the loop thread (it wakes the loop, so due timers run first) and returns its result.
    private func runOnLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: T?
        loop.execute {
            result = body()
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success, let result else { throw CancellationError() }
        return result
    }
}
