import Client
import Conference
import Foundation
import RTP
import SDP
import Sockets
import Streams
import Transport
import Wire

/// An edge host's relays (`"cluster": {"edge": true}`, docs/cluster.md): one per remote room
/// that has local viewers (or had, within the linger). Touched only on the media loop.
final class EdgeRelays {
    private(set) var relays: [String: EdgeRelay] = [:]
    /// Which relay holds each local viewer, by viewer id.
    private var viewerRooms: [String: String] = [:]

    /// The relay of `room`, made when missing; its pull goes to `ownerURL` (a relay that has no
    /// pull running takes a new owner URL: the room may have been placed anew).
    func relay(room: String, ownerURL: String, make: () -> EdgeRelay) -> EdgeRelay {
        if let relay = relays[room] {
            relay.ownerChanged(to: ownerURL)
            return relay
        }
        let relay = make()
        relays[room] = relay
        return relay
    }

    func viewerJoined(_ id: String, room: String) { viewerRooms[id] = room }
    func viewerLeft(_ id: String) { viewerRooms[id] = nil }
    func relay(holding viewer: String) -> EdgeRelay? { viewerRooms[viewer].flatMap { relays[$0] } }

    /// A relay with no viewer and no pull is forgotten.
    func idle(_ relay: EdgeRelay) {
        if relays[relay.room] === relay { relays[relay.room] = nil }
    }

    func stopAll() {
        for relay in relays.values { relay.stop() }
        relays = [:]
        viewerRooms = [:]
    }

    /// Local viewers of every relayed room.
    var viewerCount: Int { relays.values.reduce(0) { $0 + $1.viewerCount } }
}

/// The shell around one `ViewerRelay` on the media loop: local viewers' transports on the
/// host's media port, the pull from the owner on a socket of its own (Tessera's client stack:
/// `ClientOffer`, `HostHTTPClient`, a controlling ICE agent and DTLS client), and one timer.
final class EdgeRelay {
    let room: String
    private(set) var ownerURL: String
    private var core: ViewerRelay
    private let media: MediaHost
    private let port: MediaPort
    private let loop: EventLoop
    private let log: HostLog
    private let token: String?
    private weak var directory: EdgeRelays?
    /// Local viewers' peers on the port, by viewer id; those not yet secure wait in `pending`
    /// (the relay sends a viewer nothing before DTLS is done: its first key frame would be lost).
    private var peers: [String: MediaPort.PeerID] = [:]
    private var links: [String: EdgeViewerLink] = [:]
    private var pending: [String: (streams: ViewerRelay.ViewerStreams, since: Instant)] = [:]
    private var pull: UpstreamPull?
    private let timer: DeadlineTimer
    private var stopped = false

    /// A viewer that is not secure within this is dropped (as a room's never-connected join).
    static let connectTimeout: Duration = .seconds(30)

    init(room: String, ownerURL: String, media: MediaHost, port: MediaPort, log: HostLog, token: String?, directory: EdgeRelays,
         linger: Duration = ViewerRelay.defaultLinger) {
        self.room = room
        self.ownerURL = ownerURL
        self.media = media
        self.port = port
        loop = port.loop
        self.log = log
        self.token = token
        self.directory = directory
        core = ViewerRelay(room: room, wallClock: .reading(port.loop.clock), seed: UInt64.random(in: 0...UInt64.max), linger: linger)
        timer = DeadlineTimer(loop: port.loop)
        timer.action = { [weak self] now in
            guard let self else { return }
            self.expirePending(now: now)
            self.core.handleTimeout(now: now)
            self.carryOut()
        }
        log.info("edgeRelayOpened", room: room, ["owner": ownerURL])
    }

    var viewerCount: Int { peers.count }
    var isPulling: Bool { core.pullState != .idle }
    var counters: (fromOwner: Int, toViewers: Int, keyFramesAsked: Int) {
        (core.packetsFromOwner, core.packetsToViewers, core.keyFramesAskedUpstream)
    }

    func ownerChanged(to url: String) {
        if core.pullState == .idle { ownerURL = url }
    }

    /// A local viewer whose offer was answered: its transport goes on the port; it is fanned out
    /// to once secure. Returns its id.
    func join(accepted: AcceptedOffer, transport: PeerTransport) -> String {
        let id = UUID().uuidString.lowercased()
        let link = EdgeViewerLink(id: id, relay: self)
        links[id] = link
        pending[id] = (ViewerRelay.ViewerStreams(accepted.negotiated), loop.clock.now())
        peers[id] = port.add(transport, localUfrag: accepted.localICE.ufrag, sink: link)
        directory?.viewerJoined(id, room: room)
        log.info("viewerJoined", room: room, participant: id, ["id": id, "watches": "room", "via": "edge"])
        carryOut()
        return id
    }

    /// DELETE of a local viewer, or its transport failed.
    func leave(_ id: String, reason: String = "left") {
        guard let peer = peers.removeValue(forKey: id) else { return }
        links[id] = nil
        pending[id] = nil
        port.remove(peer)
        directory?.viewerLeft(id)
        core.removeViewer(id, now: loop.clock.now())
        log.info("viewerLeft", room: room, participant: id, ["id": id, "reason": reason])
        carryOut()
    }

    /// The host stops: the pull goes (DELETE at the owner), and the viewers' transports.
    func stop() {
        stopped = true
        pull?.stop()
        pull = nil
        for (_, peer) in peers { port.remove(peer) }
        peers = [:]
        timer.cancel()
    }

    fileprivate func viewer(_ id: String, didEmit event: PeerTransport.Event) {
        let now = loop.clock.now()
        switch event {
        case .secure:
            if let waiting = pending.removeValue(forKey: id) { core.addViewer(id, streams: waiting.streams, now: now) }
        case .rtcp(let bytes):
            core.receiveViewerRTCP(bytes, from: id, now: now)
        case .rtp, .iceConnected:
            break  // a viewer sends no media
        case .failed(let failure):
            leave(id, reason: failure == .consentLost ? "consent lost" : "transport failed")
            return
        }
        carryOut()
    }

    private func expirePending(now: Instant) {
        for (id, waiting) in pending where now - waiting.since >= Self.connectTimeout { leave(id, reason: "never connected") }
    }

    // The pull's events, on the loop.
    fileprivate func pullConnected(_ upstream: ViewerRelay.Upstream, from pull: UpstreamPull) {
        guard pull === self.pull else { return }
        log.info("edgePullConnected", room: room, ["owner": ownerURL])
        core.pullConnected(upstream, now: loop.clock.now())
        carryOut()
    }

    fileprivate func pullRTP(_ bytes: [UInt8], from pull: UpstreamPull, now: Instant) {
        guard pull === self.pull else { return }
        core.receiveUpstreamRTP(bytes, now: now)
    }

    fileprivate func pullRTCP(_ bytes: [UInt8], from pull: UpstreamPull, now: Instant) {
        guard pull === self.pull else { return }
        core.receiveUpstreamRTCP(bytes, now: now)
    }

    /// After a batch of the pull's packets: what they made is sent.
    fileprivate func pullServiced(_ pull: UpstreamPull) {
        guard pull === self.pull else { return }
        carryOut()
    }

    fileprivate func pullFailed(_ why: String, from pull: UpstreamPull) {
        guard pull === self.pull else { return }
        log.warning("edgePullEnded", room: room, ["owner": ownerURL, "reason": why, "viewersEnded": "\(core.viewerCount + pending.count)"])
        self.pull = nil
        pull.stop()
        core.pullEnded(reason: why, now: loop.clock.now())
        // Viewers still connecting end too: there is nothing to show them.
        for id in pending.keys { leave(id, reason: "the room's stream from its owner ended") }
        carryOut()
    }

    /// Does what the relay asked, then arms the timer.
    private func carryOut() {
        var sent = false
        for output in core.takeOutputs() {
            switch output {
            case .startPull:
                guard !stopped else { break }
                let pull = UpstreamPull(room: room, ownerURL: ownerURL, media: media, token: token, relay: self)
                self.pull = pull
                log.info("edgePullStarting", room: room, ["owner": ownerURL])
                pull.start()
            case .stopPull:
                log.info("edgePullStopped", room: room, ["owner": ownerURL, "reason": "no viewer for \(core.linger)"])
                pull?.stop()
                pull = nil
            case .sendRTP(let id, let bytes):
                if let peer = peers[id] { sent = port.sendRTP(bytes, to: peer) || sent }
            case .sendRTCP(let id, let bytes):
                if let peer = peers[id] { sent = port.sendRTCP(bytes, to: peer) || sent }
            case .sendUpstreamRTCP(let bytes):
                pull?.sendRTCP(bytes)
            case .endViewer(let id, let reason):
                if sent { port.flush() }  // its BYE leaves before its transport goes
                sent = false
                leave(id, reason: reason)
            }
        }
        if sent { port.flush() }
        pull?.flush()
        if core.isIdle, pending.isEmpty, peers.isEmpty {
            timer.cancel()
            directory?.idle(self)
            return
        }
        let due = [core.nextTimeout, pending.values.map { $0.since + Self.connectTimeout }.min()].compactMap { $0 }.min()
        if let due { timer.arm(at: due) } else { timer.cancel() }
    }
}

/// Takes a local viewer's transport events from the media port to its relay.
private final class EdgeViewerLink: PeerEventSink {
    let id: String
    weak var relay: EdgeRelay?
    init(id: String, relay: EdgeRelay) {
        self.id = id
        self.relay = relay
    }
    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        relay?.viewer(id, didEmit: event)
    }
}

/// The edge's one WHEP viewer at the owner: a recvonly offer POSTed to the owner's
/// `…/viewers`, then a controlling ICE agent and a DTLS client on a UDP socket of its own,
/// watched by the media loop. What it receives goes to its relay.
final class UpstreamPull {
    let room: String
    private let ownerURL: String
    private let loop: EventLoop
    private let media: MediaHost
    private let http: HostHTTPClient
    private weak var relay: EdgeRelay?
    private var socket: UDPSocket?
    private var transport: PeerTransport?
    private var answer: ClientAnswer?
    private var secured = false
    private var done = false
    private let audioSSRC = UInt32.random(in: 1...UInt32.max)
    private let videoSSRC = UInt32.random(in: 1...UInt32.max)
    private let videoRTXSSRC = UInt32.random(in: 1...UInt32.max)
    private lazy var timer: DeadlineTimer = {
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [weak self] now in
            guard let self else { return }
            self.transport?.handleTimeout(now: now)
            self.service(now: now)
        }
        return timer
    }()

    init(room: String, ownerURL: String, media: MediaHost, token: String?, relay: EdgeRelay) {
        self.room = room
        self.ownerURL = ownerURL
        self.media = media
        loop = media.loop
        self.relay = relay
        var credentials: HostHTTPClient.Credentials?
        if let token { credentials = { _, _ in token } }
        http = HostHTTPClient(base: ownerURL, credentials: credentials)
    }

    /// Posts the offer; the answer comes back on the loop.
    func start() {
        let socket: UDPSocket
        do { socket = try UDPSocket(bind: TransportAddress(ipv4: 0, 0, 0, 0, port: 0), batchSize: 32, receiveBufferBytes: 4 << 20) } catch {
            return fail("UDP socket: \(error)")
        }
        self.socket = socket
        let ice = ICECredentials.random()
        let offer = ClientOffer(ice: ice, fingerprint: media.certificate.fingerprint, cname: "tessera-edge", sections: [
            .opus(mid: "0", ssrc: audioSSRC, direction: .recvonly),
            .vp8(mid: "1", ssrc: videoSSRC, rtxSSRC: videoRTXSSRC, direction: .recvonly),
        ], offersAudioLevel: false)
        let confined = LoopConfined(self, on: loop), loop = self.loop
        http.send("POST", "/v1/rooms/\(room)/viewers", contentType: "application/sdp", body: offer.description.serializedBytes()) { result in
            loop.execute { confined.value.answered(result, ice: ice) }
        }
    }

    private func answered(_ result: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>, ice: ICECredentials) {
        guard !done, let socket else { return }
        let answer: ClientAnswer
        switch ClientAnswer.read(result, why: "POST at the owner") {
        case .failure(let failure): return fail("\(failure)")
        case .success(let read): answer = read.answer
        }
        self.answer = answer
        let now = loop.clock.now()
        do {
            transport = try answer.clientTransport(context: media.dtlsContext, localICE: ice, now: now)
            try loop.watch(fd: socket.fd) { [weak self] in self?.readSocket() }
        } catch {
            return fail("transport: \(error)")
        }
        transport?.handleTimeout(now: now)
        service(now: now)
    }

    /// DELETE at the owner (its one viewer of this edge goes) and the transport closes.
    func stop() {
        guard !done else { return }
        done = true
        if let location = answer?.location { http.send("DELETE", location) { _ in } }
        http.finishAndInvalidate()
        tearDown()
    }

    func sendRTCP(_ bytes: [UInt8]) {
        _ = transport?.sendRTCP(bytes)
    }

    func flush() {
        guard let transport, let socket else { return }
        let datagrams = transport.takeTransmits()
        if !datagrams.isEmpty { socket.send(datagrams) }
    }

    private func fail(_ why: String) {
        guard !done else { return }
        tearDown()
        relay?.pullFailed(why, from: self)
    }

    private func tearDown() {
        if let socket, transport != nil { loop.unwatch(fd: socket.fd) }
        timer.cancel()
        socket = nil
        transport = nil
    }

    private func readSocket() {
        guard let socket else { return }
        let now = loop.clock.now()
        socket.receive(from: answer?.candidate) { transport?.handleDatagram($0.bytes, from: $0.source, now: now) }
        service(now: now)
    }

    /// Takes the transport's events to the relay, sends what is queued, and arms the timer.
    private func service(now: Instant) {
        guard let transport, let answer else { return }
        while let event = transport.pollEvent() {
            switch event {
            case .secure:
                guard !secured else { break }
                secured = true
                let upstream = ViewerRelay.Upstream(audio: answer.hostSSRCs["0"].map { SSRC(rawValue: $0) },
                                                    video: answer.hostSSRCs["1"].map { SSRC(rawValue: $0) },
                                                    videoRTX: answer.hostRTX["1"], localSSRC: SSRC(rawValue: audioSSRC))
                relay?.pullConnected(upstream, from: self)
            case .rtp(let bytes): relay?.pullRTP(bytes, from: self, now: now)
            case .rtcp(let bytes): relay?.pullRTCP(bytes, from: self, now: now)
            case .failed(let failure):
                return fail("the pull's transport failed (\(failure))")
            case .iceConnected: break
            }
        }
        guard !done else { return }
        relay?.pullServiced(self)
        flush()
        if let due = self.transport?.nextTimeout(now: now) { timer.arm(at: due) }
    }
}
