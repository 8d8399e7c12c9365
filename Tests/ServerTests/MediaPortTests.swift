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
    /// A lite peer added to `port` (its sink keeps nothing); the ICE credentials its checks use.
    private func addPeer(to port: MediaPort, now: Instant) throws -> (host: ICECredentials, client: ICECredentials) {
        let hostICE = ICECredentials.random(), clientICE = ICECredentials.random()
        let certificate = try DTLSCertificate()
        let dtls = try DTLSTransport(context: DTLSContext(certificate: certificate), role: .server,
                                     remoteFingerprints: [certificate.fingerprint], now: now)
        let transport = PeerTransport(ice: .lite(ICELiteAgent(local: hostICE, remote: clientICE)), dtls: dtls, now: now)
        _ = port.add(transport, localUfrag: hostICE.ufrag, sink: RemovingSink())
        return (hostICE, clientICE)
    }

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
        let thread = EventLoopThread(loop)
        defer { withExtendedLifetime(port) { thread.stop() } }  // the loop ends before the port goes: its handlers run there

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
        let thread = EventLoopThread(loop)
        defer { withExtendedLifetime(port) { thread.stop() } }  // the loop ends before the port goes: its handlers run there
        var unroutable = 0
        for _ in 0..<200 where unroutable < 3 {
            unroutable = try runOnLoop(loop) { confined.value.counters.unroutable }
            if unroutable < 3 { usleep(2_000) }  // bounded: at most 200 short waits for the kernel to deliver
        }
        #expect(unroutable == 3)
    }

    /// ICE-TCP (RFC 6544): a client that connects to the TCP port and sends a framed check naming
    /// the peer's ufrag gets the framed success answer on the same connection, and the peer's
    /// transport sees the check; a connection that names no peer is counted as unroutable.
    @Test func aFramedCheckOverTCPIsAnsweredOnTheConnection() throws {
        let loop = try EventLoop()
        let any = TransportAddress(ipv4: 127, 0, 0, 1, port: 0)
        let port = try MediaPort(loop: loop, bind: any, tcpBind: any)
        let tcpAddress = try #require(port.tcpListener?.localAddress)
        let (hostICE, clientICE) = try addPeer(to: port, now: loop.clock.now())
        let confined = LoopConfined(port, on: loop)
        let thread = EventLoopThread(loop)
        defer { withExtendedLifetime(port) { thread.stop() } }  // the loop ends before the port goes: its handlers run there

        var agent = ICEControllingAgent(local: clientICE, remote: hostICE, remoteAddress: tcpAddress, tieBreaker: 7, now: loop.clock.now())
        let polled = agent.pollCheck(now: loop.clock.now())
        let check = try #require(polled)
        let client = try TestTCPClient(connectingTo: tcpAddress)
        try client.send(try #require(StreamFraming.frame(check)))
        let answer = try #require(client.receiveFrame(timeout: .seconds(5)), "a framed answer")
        let response = try STUNMessage(parsing: answer)
        #expect(response.type == .bindingSuccessResponse)
        try agent.handleResponse(response, from: tcpAddress, now: loop.clock.now())
        #expect(agent.connected, "the answer's integrity holds with the host's password")
        #expect(try runOnLoop(loop) { confined.value.tcpConnectionCount } == 1)

        // A second connection whose frame names no peer goes nowhere.
        let stranger = try TestTCPClient(connectingTo: tcpAddress)
        try stranger.send(try #require(StreamFraming.frame([0x80, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0])))
        var unroutable = 0
        for _ in 0..<200 where unroutable < 1 {
            unroutable = try runOnLoop(loop) { confined.value.counters.unroutable }
            if unroutable < 1 { usleep(2_000) }  // bounded wait for the kernel to deliver
        }
        #expect(unroutable == 1)
    }

    /// A peer that sends valid checks from port after port (as a flood would) is routed from
    /// its last 8 addresses, not from every one it ever used.
    @Test func aPeerCheckingFromManyAddressesKeepsItsLastEight() throws {
        let loop = try EventLoop()
        let port = try MediaPort(loop: loop, bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        let (hostICE, clientICE) = try addPeer(to: port, now: loop.clock.now())
        let confined = LoopConfined(port, on: loop)
        let thread = EventLoopThread(loop)
        defer { withExtendedLifetime(port) { thread.stop() } }  // the loop ends before the port goes: its handlers run there

        var sockets: [UDPSocket] = []
        for _ in 0..<20 {
            let socket = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
            var agent = ICEControllingAgent(local: clientICE, remote: hostICE, remoteAddress: port.socket.localAddress, tieBreaker: 7,
                                            now: loop.clock.now())
            let polled = agent.pollCheck(now: loop.clock.now())
            let check = try #require(polled)
            socket.send([(check, port.socket.localAddress)])
            sockets.append(socket)
            // Each answered before the next is sent, so every address is learned in turn.
            var answered = false
            for _ in 0..<500 where !answered {
                answered = !socket.receiveBatch().isEmpty
                if !answered { usleep(2_000) }
            }
            #expect(answered)
        }
        let routed = try runOnLoop(loop) { confined.value.routedAddressCount }
        #expect(routed == 8, "\(routed) addresses routed")
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

/// A blocking TCP client for tests: connects, sends bytes, reads one RFC 4571 frame.
final class TestTCPClient {
    let fd: Int32
    private var framing = StreamFraming()

    init(connectingTo address: TransportAddress) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0, address.withSockaddr({ connect(fd, $0, $1) }) == 0 else { throw CancellationError() }
    }

    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw CancellationError() }
    }

    /// The next whole frame, or nil when none came within `timeout`.
    func receiveFrame(timeout: Duration) -> [UInt8]? {
        var wait = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        for _ in 0..<64 {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, 4096, 0) }
            guard count > 0 else { return nil }
            if let first = framing.append(Array(buffer[..<count])).first { return first }
        }
        return nil
    }

    deinit { close(fd) }
}
