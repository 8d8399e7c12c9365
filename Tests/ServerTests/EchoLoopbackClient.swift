import Client
import Sockets
import Foundation
import Load
import RTP
import SDP
import Transport
import Wire
@testable import Server

/// A client of `POST /v1/echo` built from Tessera's own stack in the client role: it writes an
/// offer (BUNDLE of Opus audio and VP8 video with RTX), posts it, reads the answer, and drives a
/// controlling `PeerTransport` over a real `UDPSocket` on 127.0.0.1. The socket is waited on with
/// `poll(2)` until the next packet or the transport's `nextTimeout`, whichever comes first, and
/// every wait is bounded by a caller's deadline: nothing here sleeps for a fixed time.
///
/// One instance is one call. It is the seed of the load tester's synthetic participant, so it
/// keeps what it received (`echoes`, `rtcp`) for the caller to check, and exposes the raw
/// socket and the SRTP protection for tests that send bad input at a live session.
final class EchoLoopbackClient {
    /// One m= section of the offer, and what the client reads from the answer: the load
    /// generator's signalling (`Load.ClientOffer`, `Load.ClientAnswer`).
    typealias Section = ClientOffer.Section
    typealias Answer = ClientAnswer

    /// Milliseconds measured from just before the POST, for the report (no thresholds).
    struct Timings {
        var answer: Double?
        var iceConnected: Double?
        var secure: Double?
        /// When the first RTP packet was sent, and when the first echo arrived.
        var firstSend: Double?
        var firstEcho: Double?
        /// The first packet's round trip through the host.
        var firstRoundTrip: Double? { firstEcho.flatMap { echo in firstSend.map { echo - $0 } } }
    }

    enum Failure: Error, CustomStringConvertible {
        case http(status: Int, body: String)
        case badAnswer(String)
        case timedOut(String)
        case transport(String)

        var description: String {
            switch self {
            case .http(let status, let body): "POST answered \(status): \(body)"
            case .badAnswer(let why): "unusable answer: \(why)"
            case .timedOut(let what): "timed out: \(what)"
            case .transport(let why): "transport failed: \(why)"
            }
        }
    }

    /// The id the offer gives the sdes:mid extension.
    static let offeredMidExtensionID = ClientOffer.midExtensionID

    let http: HTTPTestClient
    let socket: UDPSocket
    let clock = MonotonicClock()
    /// The certificate whose fingerprint the offer carries.
    let certificate: DTLSCertificate
    /// The certificate the client shows in DTLS (normally `certificate`).
    let presentedCertificate: DTLSCertificate
    /// The offer's a=setup (RFC 8842 asks an offerer for actpass).
    let offeredSetup: SetupRole
    let ice = ICECredentials.random()
    let cname: String
    let audio: Section
    let video: Section
    var sections: [Section] { [audio, video] }

    private(set) var answer: Answer?
    private(set) var transport: PeerTransport?
    private(set) var timings = Timings()
    /// Every decrypted RTP packet the host sent, in arrival order.
    private(set) var echoes: [RTPPacket] = []
    /// Every decrypted RTCP compound packet the host sent, in arrival order.
    private(set) var rtcp: [[UInt8]] = []
    /// Every transport event, in order.
    private(set) var events: [PeerTransport.Event] = []
    /// Datagrams that arrived while no transport existed yet, or that did not come from the host.
    private(set) var strayDatagrams = 0
    private var postStart: Instant?

    /// A client with a fresh certificate, ICE credentials and SSRCs, bound to 127.0.0.1 on a port
    /// the kernel picks.
    /// `presenting` is the certificate shown in DTLS when it should not be the one whose
    /// fingerprint the offer carries (for tests of a host that must refuse it).
    init(httpPort: UInt16, name: String = "echo-loopback", setup: SetupRole = .actpass, presenting: DTLSCertificate? = nil) throws {
        http = HTTPTestClient(port: httpPort)
        socket = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        certificate = try DTLSCertificate(commonName: name)
        presentedCertificate = presenting ?? certificate
        offeredSetup = setup
        var generator = SystemRandomNumberGenerator()
        func ssrc() -> UInt32 { UInt32.random(in: 1...UInt32.max, using: &generator) }
        cname = "\(name)-" + String(UInt32.random(in: 1...UInt32.max, using: &generator), radix: 36)
        audio = .opus(mid: "0", ssrc: ssrc())
        video = .vp8(mid: "1", ssrc: ssrc(), rtxSSRC: ssrc())
    }

    var localAddress: TransportAddress { socket.localAddress }

    // MARK: The offer

    /// The offer as a `SessionDescription` (`ClientOffer`): the sections (the client's audio and
    /// video unless told otherwise), the client's ICE credentials and certificate fingerprint.
    func offer(_ offered: [Section]? = nil) -> SessionDescription {
        ClientOffer(ice: ice, fingerprint: certificate.fingerprint, setup: offeredSetup, cname: cname, sections: offered ?? sections).description
    }

    // MARK: Connecting

    /// POSTs `offer` (the client's own by default) to `path` (the echo, or a room's
    /// participants) and reads the answer; throws on any status but 201.
    @discardableResult
    func post(_ offer: SessionDescription? = nil, path: String = "/v1/echo") throws -> Answer {
        postStart = clock.now()
        let response = try http.send("POST", path, headers: ["Content-Type": "application/sdp"],
                                     body: (offer ?? self.offer()).serializedBytes())
        guard response.status == 201 else { throw Failure.http(status: response.status, body: response.text) }
        timings.answer = milliseconds(since: postStart)
        let answer = try Self.read(answer: response)
        self.answer = answer
        return answer
    }

    /// Reads what the client needs from a 201 answer.
    static func read(answer response: HTTPTestClient.Response) throws -> Answer {
        try ClientAnswer(contentType: response.headers["content-type"], location: response.headers["location"], body: response.body)
    }

    /// Makes the client transport for the answer: controlling ICE toward the host's candidate,
    /// DTLS client when the host took `passive` (server when it took `active`).
    func startTransport() throws {
        guard let answer else { throw Failure.badAnswer("no answer yet") }
        let now = clock.now()
        let role: DTLSTransport.Role = answer.setup == .active ? .server : .client
        let dtls = try DTLSTransport(context: DTLSContext(certificate: presentedCertificate), role: role,
                                     remoteFingerprints: answer.hostFingerprints, now: now,
                                     handshakeTimeout: .seconds(5), initialRetransmitInterval: .milliseconds(100))
        let agent = ICEControllingAgent(local: ice, remote: answer.hostICE, remoteAddress: answer.candidate,
                                        tieBreaker: UInt64.random(in: 1...UInt64.max), now: now)
        let transport = PeerTransport(ice: .controlling(agent), dtls: dtls, now: now)
        self.transport = transport
        transport.handleTimeout(now: now)  // the first check is due at once
        flush()
    }

    /// POST (to `path`), then ICE and DTLS until `.secure`, within `timeout`.
    func connect(timeout: Duration = .seconds(3), path: String = "/v1/echo", offer: SessionDescription? = nil) throws {
        let deadline = clock.now() + timeout
        try post(offer, path: path)
        try startTransport()
        let secure = pump(until: deadline) { self.transport?.isSecure == true || self.transport?.failure != nil }
        if let failure = transport?.failure { throw Failure.transport("\(failure)") }
        guard secure else { throw Failure.timedOut("ICE+DTLS within \(timeout) (events \(events))") }
    }

    // MARK: Driving

    /// Runs the transport (sends, reads with poll(2), timers) until `done()` holds or `deadline`
    /// passes; true if `done()` held. Bounded by the deadline and by a count of rounds.
    @discardableResult
    func pump(until deadline: Instant, maxRounds: Int = 100_000, _ done: () -> Bool) -> Bool {
        for _ in 0..<maxRounds {
            flush()
            if done() { return true }
            let now = clock.now()
            if now >= deadline { return false }
            var wake = deadline
            if let due = transport?.nextTimeout(now: now) { wake = min(wake, due) }
            let waitNanoseconds = max(0, (wake - now).nanosecondsClamped)
            // Round up, so a sub-millisecond wait does not spin.
            let waitMilliseconds = Int32(clamping: (waitNanoseconds + 999_999) / 1_000_000)
            var descriptor = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, waitMilliseconds)
            let after = clock.now()
            if ready > 0 { receive(now: after) }
            if let transport, let due = transport.nextTimeout(now: after), due <= after {
                transport.handleTimeout(now: after)
            }
        }
        flush()
        return done()
    }

    /// Takes what is already waiting on the socket, without waiting.
    func drain() {
        flush()
        receive(now: clock.now())
        flush()
    }

    private func receive(now: Instant) {
        for _ in 0..<16 {  // bounded: a flood cannot hold the loop
            let batch = socket.receiveBatch()
            if batch.isEmpty { return }
            for datagram in batch {
                guard let transport, datagram.source == answer?.candidate else {
                    strayDatagrams += 1
                    continue
                }
                transport.handleDatagram(datagram.bytes, from: datagram.source, now: now)
            }
        }
    }

    /// Sends what the transport queued and takes its events.
    private func flush() {
        guard let transport else { return }
        var datagrams: [(bytes: [UInt8], destination: TransportAddress)] = []
        while let transmit = transport.pollTransmit() { datagrams.append(transmit) }
        if !datagrams.isEmpty { socket.send(datagrams) }
        while let event = transport.pollEvent() {
            events.append(event)
            switch event {
            case .iceConnected: timings.iceConnected = timings.iceConnected ?? milliseconds(since: postStart)
            case .secure: timings.secure = timings.secure ?? milliseconds(since: postStart)
            case .rtp(let bytes):
                guard let packet = try? RTPPacket.parse(bytes) else { continue }
                if echoes.isEmpty { timings.firstEcho = milliseconds(since: postStart) }
                echoes.append(packet)
            case .rtcp(let bytes): rtcp.append(bytes)
            case .failed: break
            }
        }
    }

    private func milliseconds(since start: Instant?) -> Double? {
        guard let start else { return nil }
        return Double((clock.now() - start).nanosecondsClamped) / 1e6
    }

    // MARK: Sending

    /// Protects and sends one RTP packet; false before `.secure`.
    @discardableResult
    func send(_ packet: RTPPacket) -> Bool {
        guard let transport, let bytes = try? packet.serialized(), transport.sendRTP(bytes) else { return false }
        if timings.firstSend == nil { timings.firstSend = milliseconds(since: postStart) }
        flush()
        return true
    }

    /// Protects and sends RTCP bytes as given (they need not parse).
    @discardableResult
    func sendRTCP(_ bytes: [UInt8]) -> Bool {
        guard let transport, transport.sendRTCP(bytes) else { return false }
        flush()
        return true
    }

    /// The SRTP bytes of `packet` protected with the client's outbound session, not sent (for
    /// tampering). Consumes the packet's index in the session as a real send would.
    func protect(_ packet: RTPPacket) -> [UInt8]? {
        flush()
        guard let transport, let bytes = try? packet.serialized(), transport.sendRTP(bytes) else { return nil }
        return transport.pollTransmit()?.bytes
    }

    /// The SRTCP bytes of `bytes` protected with the client's outbound session, not sent.
    func protectRTCP(_ bytes: [UInt8]) -> [UInt8]? {
        flush()
        guard let transport, transport.sendRTCP(bytes) else { return nil }
        return transport.pollTransmit()?.bytes
    }

    /// Sends raw bytes from the client's own socket (its validated address) to the host.
    func sendRaw(_ datagrams: [[UInt8]]) {
        guard let destination = answer?.candidate else { return }
        socket.send(datagrams.map { (bytes: $0, destination: destination) })
    }

    /// `DELETE` of the session; returns the status.
    func delete() throws -> Int {
        guard let location = answer?.location else { throw Failure.badAnswer("no session to delete") }
        return try http.send("DELETE", location).status
    }

    // MARK: Media

    /// The mid extension as the answer negotiated it, for packets the client sends.
    func midExtension(_ mid: String) -> [RTPHeaderExtension] {
        guard let id = answer?.midExtensionID else { return [] }
        return [RTPHeaderExtension(id: id, data: Array(mid.utf8))]
    }

    /// An Opus-like packet: 20 ms at 48 kHz per index, a TOC byte, then bytes unique to `index`.
    func opusPacket(_ index: Int, sequenceBase: UInt16 = 1000) -> RTPPacket {
        let payload: [UInt8] = [0xFC] + Self.bytes(of: UInt32(index)) + Self.bytes(of: audio.ssrc)
            + (0..<(40 + index % 80)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
        return RTPPacket(payloadType: PayloadType(audio.payloadType), sequenceNumber: sequenceBase &+ UInt16(truncatingIfNeeded: index),
                         timestamp: 48_000 &+ UInt32(truncatingIfNeeded: index) &* 960, ssrc: SSRC(audio.ssrc),
                         extensions: midExtension(audio.mid), payload: payload[...])
    }

    /// A VP8-like packet, one per frame (marker set): a payload descriptor with a 15-bit picture
    /// id, then bytes unique to `index`.
    func vp8Packet(_ index: Int, sequenceBase: UInt16 = 20000) -> RTPPacket {
        let pictureID = UInt16(truncatingIfNeeded: index) & 0x7FFF
        let payload: [UInt8] = [0x90, 0x80, 0x80 | UInt8(pictureID >> 8), UInt8(pictureID & 0xFF)]
            + Self.bytes(of: UInt32(index)) + Self.bytes(of: video.ssrc)
            + (0..<(300 + (index * 37) % 800)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ index) }
        return RTPPacket(marker: true, payloadType: PayloadType(video.payloadType),
                         sequenceNumber: sequenceBase &+ UInt16(truncatingIfNeeded: index),
                         timestamp: 90_000 &+ UInt32(truncatingIfNeeded: index) &* 3000, ssrc: SSRC(video.ssrc),
                         extensions: midExtension(video.mid), payload: payload[...])
    }

    static func bytes(of value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// Echoes the client received on `ssrc`.
    func echoes(on ssrc: UInt32) -> [RTPPacket] { echoes.filter { $0.ssrc.rawValue == ssrc } }

    /// Sends `packets`, then pumps until an echo of each (same payload type, sequence number and
    /// payload) has arrived or `deadline` passes; true if all came back.
    @discardableResult
    func sendAndAwaitEchoes(_ packets: [RTPPacket], deadline: Instant) -> Bool {
        let before = echoes.count
        for packet in packets { send(packet) }
        let wanted = Set(packets.map { Self.key($0) })
        return pump(until: deadline) {
            Set(self.echoes[before...].map { Self.key($0) }).isSuperset(of: wanted)
        }
    }

    /// What identifies a packet across the echo (its SSRC changes).
    static func key(_ packet: RTPPacket) -> [UInt8] {
        [packet.payloadType.rawValue, UInt8(packet.sequenceNumber >> 8), UInt8(packet.sequenceNumber & 0xFF)] + packet.payload
    }
}


extension EchoLoopbackClient {
    /// Services every client's transport (reads, timers, sends) until `deadline`, waiting in one
    /// `poll(2)` over all their sockets.
    static func service(_ clients: [EchoLoopbackClient], until deadline: Instant) {
        let clock = MonotonicClock()
        for _ in 0..<10_000 {
            var now = clock.now()
            var wake = deadline
            for client in clients {
                client.drain()
                if let transport = client.transport, let due = transport.nextTimeout(now: now) {
                    if due <= now {
                        transport.handleTimeout(now: now)
                        client.drain()
                    } else {
                        wake = min(wake, due)
                    }
                }
            }
            now = clock.now()
            if now >= deadline { return }
            let waitMilliseconds = Int32(clamping: ((wake - now).nanosecondsClamped + 999_999) / 1_000_000)
            var descriptors = clients.map { pollfd(fd: $0.socket.fd, events: Int16(POLLIN), revents: 0) }
            _ = poll(&descriptors, nfds_t(descriptors.count), max(0, waitMilliseconds))
        }
    }
}
