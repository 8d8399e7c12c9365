import Client
import Foundation
import RTP
import SDP
import Sockets
import Streams
import Transport
import Wire

/// `tessera load --attack`: a hostile peer beside the run's guests, who go on checking their
/// mixes and slots meanwhile. It joins the room as a participant of its own (a real session:
/// ICE, DTLS, SRTP), then every 100 ms sends a bounded volley of what a hostile or broken peer
/// sends: random and truncated datagrams (from its session's address and from strangers), STUN
/// with wrong integrity or unknown ufrags and a flood of well-formed checks, DTLS garbage and
/// its own handshake replayed, SRTP with broken tags and replayed packets, RTCP that claims the
/// guests' SSRCs (NACK storms, BYE, PLI and FIR floods, REMB, sender reports), hostile SDP
/// (thousands of m-lines, huge attributes, duplicate SSRCs, into a room of its own) and
/// malformed or oversized HTTP. It counts what it sent and how the host answered; the report's
/// check fails when a hostile request was taken or answered with a server error. Loop thread
/// only, but for the HTTP attacks, which run on a thread of their own.
final class LoadAttacker {
    let identity = "load-attacker"
    private let model: LoadRoomModel
    private let loop: EventLoop
    private let http: HostHTTPClient
    private let certificate: DTLSCertificate
    private let dtlsContext: DTLSContext
    private let silence: [UInt8]
    /// The guests' SSRCs and those the host sends them: what forged RTCP claims.
    private let guestSSRCs: () -> [UInt32]
    private var generator = SplitMix64(seed: 0xA77AC4)

    private var socket: UDPSocket?
    /// Sockets of addresses the host never validated: strangers on the same machine.
    private var strangers: [UDPSocket] = []
    /// Sockets that send valid checks (the host learns them: at most 8 per peer are kept).
    private var checkers: [UDPSocket] = []
    private var transport: PeerTransport?
    private var answer: ClientAnswer?
    private var ice: ICECredentials?
    private var secure = false
    /// What the session sent, kept to replay and to truncate: its first DTLS flight and its
    /// latest SRTP packets.
    private var handshakeFlight: [[UInt8]] = []
    private var sentSRTP: [[UInt8]] = []
    private var audioSequence: UInt16 = 0
    private var audioTimestamp: UInt32 = 0
    private let audioSSRC = UInt32.random(in: 1...UInt32.max)
    private lazy var timer: DeadlineTimer = {
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [unowned self] now in
            transport?.handleTimeout(now: now)
            service(now: now)
        }
        return timer
    }()

    /// What was sent, by kind; and the host's answers to the hostile HTTP requests.
    private(set) var sent: [String: Int] = [:]
    private let answers = HTTPAnswers()
    private(set) var problems: [String] = []
    private var httpThread: Thread?

    init(model: LoadRoomModel, loop: EventLoop, http: HostHTTPClient, certificate: DTLSCertificate, dtlsContext: DTLSContext,
         silence: [UInt8], guestSSRCs: @escaping () -> [UInt32]) {
        self.model = model
        self.loop = loop
        self.http = http
        self.certificate = certificate
        self.dtlsContext = dtlsContext
        self.silence = silence
        self.guestSSRCs = guestSSRCs
    }

    private var now: Instant { loop.clock.now() }

    // MARK: The session

    /// Joins the run's room with an audio m-line (it sends a little silence, so there is SRTP
    /// to replay) and a receive-only video one (so there is a composite to NACK and PLI).
    func join() {
        do {
            socket = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0), batchSize: 16)
            for _ in 0..<4 { strangers.append(try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0), batchSize: 16)) }
            for _ in 0..<4 { checkers.append(try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0), batchSize: 16)) }
        } catch {
            return problems.append("sockets: \(error)")
        }
        let ice = ICECredentials.random()
        self.ice = ice
        let offer = ClientOffer(ice: ice, fingerprint: certificate.fingerprint, cname: identity,
                                sections: [.opus(mid: "0", ssrc: audioSSRC), .vp8(mid: "1", ssrc: UInt32.random(in: 1...UInt32.max), direction: .recvonly)],
                                offersAudioLevel: true)
        let loop = self.loop
        let confined = LoopConfined(self, on: loop)
        http.send("POST", "/v1/rooms/\(model.options.room)/participants?identity=\(identity)", contentType: "application/sdp",
                  body: offer.description.serializedBytes()) { result in
            loop.execute { confined.value.answered(result, ice: ice) }
        }
    }

    private func answered(_ result: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>, ice: ICECredentials) {
        guard case .success(let reply) = result, reply.status == 201, let socket else {
            return problems.append("the attacker's join failed: \(result)")
        }
        do {
            let answer = try ClientAnswer(contentType: reply.headers["content-type"], location: reply.headers["location"], body: reply.body)
            let now = self.now
            let dtls = try DTLSTransport(context: dtlsContext, role: answer.setup == .active ? .server : .client,
                                         remoteFingerprints: answer.hostFingerprints, now: now, handshakeTimeout: .seconds(10))
            let agent = ICEControllingAgent(local: ice, remote: answer.hostICE, remoteAddress: answer.candidate,
                                            tieBreaker: UInt64.random(in: 1...UInt64.max), now: now)
            transport = PeerTransport(ice: .controlling(agent), dtls: dtls, now: now)
            self.answer = answer
            try loop.watch(fd: socket.fd) { [unowned self] in readSocket() }
            for stranger in strangers + checkers { try loop.watch(fd: stranger.fd) { stranger.drain() } }
        } catch {
            return problems.append("the attacker's transport: \(error)")
        }
        model.lastMembershipChange = now
        service(now: now)
    }

    private func readSocket() {
        guard let socket else { return }
        let now = self.now
        for _ in 0..<16 {
            let batch = socket.receiveBatch()
            if batch.isEmpty { break }
            for datagram in batch { transport?.handleDatagram(datagram.bytes, from: datagram.source, now: now) }
        }
        service(now: now)
    }

    private func service(now: Instant) {
        guard let transport, let socket else { return }
        while let event = transport.pollEvent() {
            switch event {
            case .secure: secure = true
            case .failed(let failure): problems.append("the attacker's own session failed: \(failure)")
            default: break
            }
        }
        var datagrams: [Datagram] = []
        while let transmit = transport.pollTransmit() {
            if !secure, DatagramKind(datagram: transmit.bytes) == .dtls, handshakeFlight.count < 8 { handshakeFlight.append(transmit.bytes) }
            datagrams.append(transmit)
        }
        if !datagrams.isEmpty { socket.send(datagrams) }
        if let due = transport.nextTimeout(now: now) { timer.arm(at: due) }
    }

    func leave() {
        if let location = answer?.location { http.send("DELETE", location) { _ in } }
        if let socket, transport != nil { loop.unwatch(fd: socket.fd) }
        for stranger in strangers + checkers where transport != nil { loop.unwatch(fd: stranger.fd) }
        timer.cancel()
        transport = nil
        httpThread?.cancel()
    }

    // MARK: Volleys

    /// One round of every media-port attack; every 10th round, the HTTP ones. Bounded: a few
    /// hundred datagrams a round.
    func volley(round: Int) {
        guard secure, let transport, let socket, let answer, let ice else { return }
        let host = answer.candidate
        var fromSession: [Datagram] = [], fromStrangers: [Datagram] = []

        // Random bytes of every first-byte class (RFC 7983), and truncated copies of real packets.
        for _ in 0..<8 {
            var bytes = randomBytes(Int(generator.next() % 1200))
            if !bytes.isEmpty { bytes[0] = [0, 1, 20, 23, 64, 128, 129, 200, 250][Int(generator.next() % 9)] }
            fromSession.append((bytes, host))
            fromStrangers.append((randomBytes(Int(generator.next() % 1500)), host))
        }
        for packet in (sentSRTP.suffix(4) + handshakeFlight.prefix(2)) where packet.count > 1 {
            let cut = Array(packet.prefix(Int(generator.next() % UInt64(packet.count))))
            fromSession.append((cut, host))
            fromStrangers.append((cut, host))
        }
        count("random and truncated datagrams", fromSession.count + fromStrangers.count)

        // STUN: wrong integrity on the session's own ufrag, unknown ufrags, a flood of
        // well-formed checks that fail integrity, and valid checks from new addresses.
        let username = "\(answer.hostICE.ufrag):\(ice.ufrag)"
        for _ in 0..<4 {
            fromSession.append((check(username: username, password: "wrong-password-wrong-password"), host))
            fromStrangers.append((check(username: "nobody:\(ice.ufrag)", password: answer.hostICE.password), host))
        }
        for _ in 0..<40 { fromStrangers.append((check(username: username, password: "flood-flood-flood-flood"), host)) }
        count("STUN checks with wrong integrity or unknown ufrags", 48)
        for checker in checkers { checker.send([(check(username: username, password: answer.hostICE.password), host)]) }
        count("valid STUN checks from new addresses", checkers.count)

        // DTLS: garbage records, and the handshake's first flight replayed.
        for _ in 0..<4 {
            var record = randomBytes(13 + Int(generator.next() % 200))
            record[0] = 20 + UInt8(generator.next() % 44)
            fromSession.append((record, host))
        }
        for flight in handshakeFlight.prefix(2) { fromSession.append((flight, host)); fromStrangers.append((flight, host)) }
        count("DTLS garbage and replayed handshakes", 4 + 2 * min(2, handshakeFlight.count))

        // SRTP: a little silence (valid), then copies with broken tags, and replays.
        for _ in 0..<2 {
            audioSequence &+= 1
            audioTimestamp &+= 960
            var packet = RTPPacket(payloadType: PayloadType(111), sequenceNumber: audioSequence, timestamp: audioTimestamp,
                                   ssrc: SSRC(audioSSRC), payload: silence[...])
            if let id = answer.midExtensionID { packet.extensions = [RTPHeaderExtension(id: id, data: Array("0".utf8))] }
            if let bytes = try? packet.serialized() { transport.sendRTP(bytes) }
        }
        var mine: [Datagram] = []
        while let transmit = transport.pollTransmit() { mine.append(transmit) }
        for packet in mine.map(\.bytes) where DatagramKind(datagram: packet) == .rtpOrRTCP {
            sentSRTP.append(packet)
            if sentSRTP.count > 16 { sentSRTP.removeFirst() }
        }
        socket.send(mine)
        for packet in sentSRTP.suffix(4) {
            var broken = packet
            broken[broken.count - 1] ^= 0x5A
            fromSession.append((broken, host))
            fromSession.append((packet, host))  // a replay
        }
        count("SRTP with broken tags, and replays", 2 * min(4, sentSRTP.count))

        // RTCP that claims what is not the attacker's: every guest's SSRC and the host's.
        let claimed = guestSSRCs() + Array(answer.hostSSRCs.values)
        var forged = 0
        for ssrc in claimed.shuffled(using: &generator).prefix(8) {
            let sender = SSRC(claimed.randomElement(using: &generator) ?? ssrc)
            var packets: [RTCPPacket] = [
                .receiverReport(ReceiverReport(ssrc: sender, reports: [])),
                .nack(GenericNACK(senderSSRC: sender, mediaSSRC: SSRC(ssrc), pairs: (0..<16).map { _ in
                    NACKPair(packetID: UInt16(truncatingIfNeeded: generator.next()), lostBitmask: 0xFFFF) })),
                .pictureLossIndication(PictureLossIndication(senderSSRC: sender, mediaSSRC: SSRC(ssrc))),
                .fullIntraRequest(FullIntraRequest(senderSSRC: sender, entries: [FIREntry(ssrc: SSRC(ssrc), sequenceNumber: UInt8(round & 0xFF))])),
                .goodbye(Goodbye(sources: [SSRC(ssrc)], reasonText: "forged")),
            ]
            if round % 2 == 0 {
                packets.append(.receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(senderSSRC: sender, bitrate: 10_000, ssrcs: [SSRC(ssrc)])))
            }
            if let compound = try? RTCPPacket.serializeCompound(packets), transport.sendRTCP(compound) { forged += 1 }
        }
        count("forged RTCP compounds (NACK storm, PLI, FIR, BYE, REMB)", forged)
        while let transmit = transport.pollTransmit() { fromSession.append(transmit) }

        socket.send(fromSession)
        for (index, datagram) in fromStrangers.enumerated() { strangers[index % strangers.count].send([datagram]) }
        if round % 10 == 0 { attackHTTP(round: round) }
    }

    private typealias Datagram = (bytes: [UInt8], destination: TransportAddress)

    private func count(_ kind: String, _ number: Int) { sent[kind, default: 0] += number }

    private func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: generator.next()) }
        return bytes
    }

    /// A Binding request as a controlling agent sends it, signed with `password`.
    private func check(username: String, password: String) -> [UInt8] {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: .random(using: &generator))
        try? builder.append(contentsOf: [.username(username), .priority(0x6E00_01FF), .iceControlling(tieBreaker: generator.next())])
        return builder.finish(integrityKey: .shortTerm(password: password), fingerprint: true)
    }

    // MARK: HTTP

    /// Hostile requests, sent from a thread of their own (they block): hostile SDP into a room of
    /// its own (its joins must not change the guests' layout), and malformed or oversized HTTP.
    private func attackHTTP(round: Int) {
        guard httpThread?.isExecuting != true else { return }
        let options = model.options, answers = self.answers
        let room = "\(options.room)-hostile", own = answer?.location ?? "/v1/rooms/\(options.room)/participants/none"
        let neverConnecting = ClientOffer(ice: .random(), fingerprint: certificate.fingerprint, cname: "hostile",
                                          sections: [.opus(mid: "0", ssrc: UInt32.random(in: 1...UInt32.max))]).description.serializedBytes()
        let thread = Thread {
            let client = RawHTTPClient(host: options.host, port: UInt16(URLComponents(string: options.url)?.port ?? 80))
            for (name, request) in Self.hostileRequests(room: room, guestRoom: options.room, own: own, neverConnecting: neverConnecting, round: round) {
                answers.add(name, client.exchange(request))
            }
        }
        thread.name = "load-attacker-http"
        httpThread = thread
        thread.start()
    }

    /// The hostile HTTP requests of one round, by name: joins go to `room` (one of them a valid
    /// offer, `neverConnecting`, whose peer never checks in), bad JSON to the guests' room and to
    /// the attacker's own session (`own`, its path).
    static func hostileRequests(room: String, guestRoom: String, own: String, neverConnecting: [UInt8], round: Int) -> [(String, [UInt8])] {
        func request(_ head: String, body: [UInt8] = []) -> [UInt8] { Array(head.utf8) + body }
        func post(_ path: String, _ type: String, _ body: [UInt8]) -> [UInt8] {
            request("POST \(path) HTTP/1.1\r\nHost: attacker\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n", body: body)
        }
        let join = "/v1/rooms/\(room)/participants?identity=hostile\(round)"
        let header = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
        let section = { (mid: Int, ssrc: Int) in
            "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:\(mid)\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
                + "a=fingerprint:sha-256 \(Array(repeating: "AB", count: 32).joined(separator: ":"))\r\na=setup:actpass\r\na=sendrecv\r\n"
                + "a=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\na=ssrc:\(ssrc) cname:x\r\n"
        }
        // Under the body limit, so that the SDP reader meets it.
        let thousands = header + String(repeating: "m=audio 9 RTP/AVP 0\r\n", count: 3000)
        let hugeAttribute = header + section(0, 1) + "a=x-huge:" + String(repeating: "A", count: 60_000) + "\r\n"
        let duplicateSSRCs = header + section(0, 42) + section(1, 42).replacingOccurrences(of: "m=audio", with: "m=video")
        let garbage = (0..<4000).map { _ in String(UnicodeScalar(UInt8.random(in: 32...126))) }.joined()
        return [
            (Self.neverConnectingJoin, post(join, "application/sdp", neverConnecting)),
            ("SDP with 3000 m-lines", post(join, "application/sdp", Array(thousands.utf8))),
            ("SDP with a 60 KB attribute", post(join, "application/sdp", Array(hugeAttribute.utf8))),
            ("SDP with duplicate SSRCs", post(join, "application/sdp", Array(duplicateSSRCs.utf8))),
            ("SDP that is not SDP", post(join, "application/sdp", Array(garbage.utf8))),
            ("a body over the limit", post(join, "application/sdp", [UInt8](repeating: 0x61, count: 200_000))),
            ("a layout that is not JSON", request("PUT /v1/rooms/\(guestRoom)/layout HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"preset\"")),
            ("a PATCH of unknown keys", request("PATCH \(own) HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"evil\": true}")),
            ("a request line that is not HTTP", request("\u{01}\u{02}GARBAGE / HTTP/9.9\r\n\r\n")),
            ("headers of 100 KB", request("GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: \(String(repeating: "b", count: 100_000))\r\n\r\n")),
            ("a Content-Length that lies", request("POST \(join) HTTP/1.1\r\nHost: a\r\nContent-Type: application/sdp\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\nv=0\r\n")),
            ("chunked garbage", request("POST \(join) HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZZ\r\nxx\r\n")),
        ]
    }

    static let neverConnectingJoin = "a join that never connects"

    /// Every hostile request refused (4xx, 505, or the connection closed), none taken; joins
    /// that never connect answered 201 or, their room full, 503.
    func check() -> LoadReport.Check {
        let name = "the host refused every hostile request, and the guests' checks held beside them"
        let answered = answers.snapshot
        let sentTotal = sent.values.reduce(0, +)
        let summary = sent.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; ")
        let http = answered.sorted { $0.key < $1.key }.map { name, statuses in
            "\(name): " + statuses.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key == 0 ? "closed" : String($0.key))" }.joined(separator: ", ")
        }.joined(separator: "; ")
        // 505 is the refusal of an HTTP version that does not exist. A join that never connects
        // is taken (201) until its room is full (503); the host drops it 20 s later.
        let taken = answered.filter { name, statuses in
            statuses.keys.contains { status in
                status != 0 && status != 505 && !(400...499).contains(status) && !(name == Self.neverConnectingJoin && [201, 503].contains(status))
            }
        }.map(\.key).sorted()
        var failures = problems
        if !taken.isEmpty { failures.append("not refused: \(taken.joined(separator: ", "))") }
        if sentTotal == 0 { failures.append("nothing was sent (the attacker never connected)") }
        if answered.isEmpty { failures.append("no hostile HTTP request was answered") }
        let detail = "sent \(summary); HTTP: \(http)"
        return .init(name: name, passed: failures.isEmpty, detail: failures.isEmpty ? detail : failures.joined(separator: "; ") + "; " + detail)
    }
}

/// The hostile requests' answers by request: status counts (0: the host closed the connection
/// without an answer). Shared by the attack thread and the loop.
private final class HTTPAnswers: @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [String: [Int: Int]] = [:]
    func add(_ name: String, _ status: Int) { lock.withLock { statuses[name, default: [:]][status, default: 0] += 1 } }
    var snapshot: [String: [Int: Int]] { lock.withLock { statuses } }
}

/// Raw bytes to the HTTP port and the status line back: requests no HTTP library would send.
/// Blocking, with a 5 s timeout each way; loopback only.
struct RawHTTPClient: Sendable {
    let host: String
    let port: UInt16

    /// The answer's status, or 0 when the host closed the connection without one.
    func exchange(_ request: [UInt8]) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return 0 }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return 0 }
        var offset = 0
        while offset < request.count {
            let written = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { break }  // the host may close early (an oversized request): read its answer
            offset += written
        }
        var answer = [UInt8](repeating: 0, count: 512)
        let read = answer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard read >= 12 else { return 0 }
        let line = String(decoding: answer.prefix(read), as: UTF8.self)
        let parts = line.split(separator: " ", maxSplits: 2)
        return parts.count >= 2 && parts[0].hasPrefix("HTTP/") ? Int(parts[1]) ?? 0 : 0
    }
}

private extension UDPSocket {
    /// Reads and forgets what arrived (the host's answers to checks the attacker sent from here).
    func drain() {
        for _ in 0..<16 where !receiveBatch().isEmpty {}
    }
}
