import Sockets
import Transport
import Wire

/// What a `MediaPort` tells the owner of a peer: its transport's events, on the loop thread.
public protocol PeerEventSink: AnyObject {
    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event)
}

/// The one UDP port every peer shares (docs/api.md: demuxed by ICE username, then by address). A
/// datagram from a known address goes to that address's peer; otherwise only a STUN check whose
/// USERNAME starts with a peer's ufrag is taken, and once that peer's agent validates the check
/// the address is learned. Everything else is dropped and counted. Runs on one event loop.
///
/// Beside it, a TCP port for peers whose UDP is blocked (ICE-TCP, RFC 6544: the host's passive
/// candidates). Each accepted connection is a path of its own, named by its remote address; its
/// RFC 4571 frames are routed as datagrams from that address, and what the peer's transport sends
/// to that address goes back framed on the connection. A connection whose checks name no peer
/// within `tcpCheckTimeout` is closed, and at most `maximumTCPConnections` are open.
public final class MediaPort {
    public struct PeerID: Hashable, Sendable, CustomStringConvertible {
        public let value: UInt64
        public var description: String { "peer-\(value)" }
    }

    /// Datagrams dropped here, before any peer saw them.
    public struct Counters: Sendable, Equatable {
        public var datagramsIn = 0
        public var datagramsOut = 0
        public var bytesIn = 0
        public var bytesOut = 0
        /// From an unknown address and not a check naming a known ufrag.
        public var unroutable = 0
        /// TCP connections accepted, and those refused or closed for naming no peer in time.
        public var tcpAccepted = 0
        public var tcpRefused = 0
    }

    /// One accepted ICE-TCP connection.
    private struct TCPPath {
        let connection: TCPConnection
        var framing = StreamFraming()
        let openedAt: Instant
    }
    public static let maximumTCPConnections = 512
    public static let tcpCheckTimeout: Duration = .seconds(10)

    /// A class, not a struct: every datagram looks its peer up, and copying a struct out of the
    /// dictionary retained each field every time.
    private final class Peer {
        let transport: PeerTransport
        let ufrag: String
        /// Held strongly until `remove`: a weak reference gives its object a side table, and then
        /// every retain of it (one per datagram) takes the runtime's slow path. Sinks hold their
        /// rooms weakly, so this makes no cycle.
        let sink: PeerEventSink?
        var addresses: Set<TransportAddress>
        /// When its transport next needs the time.
        let timer: DeadlineTimer

        init(transport: PeerTransport, ufrag: String, sink: PeerEventSink?, addresses: Set<TransportAddress> = [], timer: DeadlineTimer) {
            self.transport = transport
            self.ufrag = ufrag
            self.sink = sink
            self.addresses = addresses
            self.timer = timer
        }
    }

    public let loop: EventLoop
    public let socket: UDPSocket
    public private(set) var counters = Counters()
    /// What the peers' transports dropped, and why: those gone, then those here.
    public var drops: PeerTransport.DropCounters { peers.values.reduce(retiredDrops) { $0 + $1.transport.drops } }
    private var retiredDrops = PeerTransport.DropCounters()
    private var peers: [PeerID: Peer] = [:]
    private var byUfrag: [String: PeerID] = [:]
    private var byAddress: [TransportAddress: PeerID] = [:]
    private var nextID: UInt64 = 0
    private var pendingSends: [(bytes: [UInt8], destination: TransportAddress)] = []
    /// The TCP port, when ICE-TCP is on.
    public let tcpListener: TCPListener?
    private var tcpPaths: [TransportAddress: TCPPath] = [:]
    /// Closes idle unnamed connections, and retries writes the kernel did not take.
    private var tcpTimer: DeadlineTimer?

    /// The impaired network between this socket and the peers (`testing.impair`): RTP and
    /// RTCP each way go through it; STUN and DTLS do not, so joins still work.
    private struct Impairment {
        var inbound: NetEm<UDPSocket.Datagram>
        var outbound: NetEm<Datagram>
        let timer: DeadlineTimer
    }
    private typealias Datagram = (bytes: [UInt8], destination: TransportAddress)
    private var impairment: Impairment?

    /// Binds and starts reading on `loop`. Call on the loop thread (or before it runs). With
    /// `impairment`, the media (RTP and RTCP) both ways meets that network (seeded).
    public init(loop: EventLoop, bind address: TransportAddress, tcpBind: TransportAddress? = nil,
                impairment: NetworkImpairment? = nil, seed: UInt64 = 1) throws {
        self.loop = loop
        socket = try UDPSocket(bind: address)
        tcpListener = try tcpBind.map { address throws in try TCPListener(bind: address) }
        if let impairment {
            let timer = DeadlineTimer(loop: loop)
            self.impairment = Impairment(inbound: NetEm(impairment, seed: seed), outbound: NetEm(impairment, seed: seed &+ 1), timer: timer)
            timer.action = { [unowned self] now in deliverImpaired(now: now) }
        }
        try loop.watch(fd: socket.fd) { [unowned self] in readAll() }
        if let tcpListener {
            let timer = DeadlineTimer(loop: loop)
            timer.action = { [unowned self] now in serviceTCP(now: now) }
            tcpTimer = timer
            try loop.watch(fd: tcpListener.fd) { [unowned self] in acceptTCP() }
        }
    }

    // MARK: ICE-TCP

    /// Open ICE-TCP connections.
    public var tcpConnectionCount: Int { tcpPaths.count }

    private func acceptTCP() {
        guard let tcpListener else { return }
        let now = loop.clock.now()
        for _ in 0..<64 {
            guard let connection = tcpListener.accept() else { break }
            guard tcpPaths.count < Self.maximumTCPConnections, tcpPaths[connection.remote] == nil else {
                counters.tcpRefused += 1
                continue  // closed as it goes
            }
            let remote = connection.remote
            do { try loop.watch(fd: connection.fd) { [unowned self] in readTCP(remote) } } catch {
                counters.tcpRefused += 1
                continue
            }
            counters.tcpAccepted += 1
            tcpPaths[remote] = TCPPath(connection: connection, openedAt: now)
        }
        tcpTimer?.arm(at: now + .seconds(1))
    }

    private func readTCP(_ remote: TransportAddress) {
        let now = loop.clock.now()
        for _ in 0..<16 {
            guard var path = tcpPaths[remote] else { return }
            guard let bytes = path.connection.read() else {
                closeTCP(remote)
                break
            }
            if bytes.isEmpty { break }
            let messages = path.framing.append(bytes)
            tcpPaths[remote] = path
            for message in messages { route(UDPSocket.Datagram(bytes: message, source: remote), now: now, impaired: false) }
        }
        flush()
    }

    private func closeTCP(_ remote: TransportAddress) {
        guard let path = tcpPaths.removeValue(forKey: remote) else { return }
        loop.unwatch(fd: path.connection.fd)
        if let id = byAddress.removeValue(forKey: remote) { peers[id]?.addresses.remove(remote) }
    }

    /// Closes connections that named no peer in time; retries writes the kernel did not take.
    private func serviceTCP(now: Instant) {
        var pendingWrites = false
        for (remote, path) in tcpPaths {
            if byAddress[remote] == nil, now - path.openedAt >= Self.tcpCheckTimeout {
                counters.tcpRefused += 1
                closeTCP(remote)
                continue
            }
            path.connection.flush()
            if path.connection.isClosed { closeTCP(remote) } else if path.connection.hasPending { pendingWrites = true }
        }
        guard !tcpPaths.isEmpty else { return }
        tcpTimer?.arm(at: now + (pendingWrites ? .milliseconds(5) : .seconds(1)))
    }

    /// RFC 7983: a first byte of 128…191 is RTP or RTCP (SRTP/SRTCP here).
    private static func isMedia(_ bytes: [UInt8]) -> Bool { bytes.first.map { (128...191).contains($0) } ?? false }

    /// Routes the impaired datagrams that have arrived and sends those due out, then waits for
    /// the next.
    private func deliverImpaired(now: Instant) {
        guard var impairment else { return }
        let arrived = impairment.inbound.receive(now: now)
        pendingSends += impairment.outbound.receive(now: now)
        self.impairment = impairment
        for datagram in arrived { route(datagram, now: now, impaired: true) }
        sendPending()
        if let next = [impairment.inbound.nextArrival, impairment.outbound.nextArrival].compactMap({ $0 }).min() {
            impairment.timer.arm(at: next)
        }
    }

    public var peerCount: Int { peers.count }
    /// Addresses routed to a peer, all peers together.
    var routedAddressCount: Int { byAddress.count }

    /// Adds a peer whose checks will name `localUfrag` (the host's ufrag in its answer).
    public func add(_ transport: PeerTransport, localUfrag: String, sink: PeerEventSink) -> PeerID {
        nextID += 1
        let id = PeerID(value: nextID)
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [weak self] now in
            guard let self, self.peers[id] != nil else { return }
            transport.handleTimeout(now: now)
            self.service(id, now: now)
            self.flush()
        }
        peers[id] = Peer(transport: transport, ufrag: localUfrag, sink: sink, timer: timer)
        byUfrag[localUfrag] = id
        service(id, now: loop.clock.now())
        return id
    }

    /// After an ICE restart, checks name the peer by `ufrag`; the old one names nothing.
    public func changeUfrag(of id: PeerID, to ufrag: String) {
        guard let peer = peers[id] else { return }
        if byUfrag[peer.ufrag] == id { byUfrag[peer.ufrag] = nil }
        peers[id] = Peer(transport: peer.transport, ufrag: ufrag, sink: peer.sink, addresses: peer.addresses, timer: peer.timer)
        byUfrag[ufrag] = id
    }

    /// Forgets a peer: its addresses, its ufrag and its timer.
    public func remove(_ id: PeerID) {
        guard let peer = peers.removeValue(forKey: id) else { return }
        retiredDrops = retiredDrops + peer.transport.drops
        if byUfrag[peer.ufrag] == id { byUfrag[peer.ufrag] = nil }
        for address in peer.addresses where byAddress[address] == id { byAddress[address] = nil }
        for address in peer.addresses { closeTCP(address) }
        peer.timer.cancel()
    }

    public func transport(_ id: PeerID) -> PeerTransport? { peers[id]?.transport }

    /// Protects and sends RTP to a peer; false if it cannot send yet.
    @discardableResult
    public func sendRTP(_ packet: consuming [UInt8], to id: PeerID) -> Bool {
        guard let transport = peers[id]?.transport, let datagram = transport.protectedRTP(packet) else { return false }
        if transport.hasTransmits { drainTransmits(of: transport) }
        pendingSends.append(datagram)
        return true
    }

    @discardableResult
    public func sendRTCP(_ packet: consuming [UInt8], to id: PeerID) -> Bool {
        guard let transport = peers[id]?.transport, transport.sendRTCP(packet) else { return false }
        drainTransmits(of: transport)
        return true
    }

    /// Sends what is queued in one batch. Call after a round of `sendRTP` (the read path calls it
    /// after each batch of datagrams).
    public func flush() {
        guard !pendingSends.isEmpty else { return }
        if var impairment {
            // Media goes onto the impaired network; the rest (STUN, DTLS) goes out now.
            let now = loop.clock.now()
            for datagram in pendingSends where Self.isMedia(datagram.bytes) { impairment.outbound.send(datagram, now: now) }
            pendingSends.removeAll { Self.isMedia($0.bytes) }
            self.impairment = impairment
            deliverImpaired(now: now)
            return
        }
        sendPending()
    }

    private func sendPending() {
        guard !pendingSends.isEmpty else { return }
        if !tcpPaths.isEmpty {
            var pendingWrites = false
            pendingSends.removeAll { datagram in
                guard let path = tcpPaths[datagram.destination] else { return false }
                if let framed = StreamFraming.frame(datagram.bytes), path.connection.send(framed) {
                    counters.datagramsOut += 1
                    counters.bytesOut += datagram.bytes.count
                }
                pendingWrites = pendingWrites || path.connection.hasPending
                return true
            }
            if pendingWrites { tcpTimer?.arm(at: loop.clock.now() + .milliseconds(5)) }
            guard !pendingSends.isEmpty else { return }
        }
        let sent = socket.send(pendingSends)
        counters.datagramsOut += sent
        counters.bytesOut += pendingSends.prefix(sent).reduce(0) { $0 + $1.bytes.count }
        pendingSends.removeAll(keepingCapacity: true)
    }

    private func readAll() {
        let now = loop.clock.now()
        for _ in 0..<16 {  // bounded, so timers and other sockets get their turn
            let batch = socket.receiveBatch()
            if batch.isEmpty { break }
            for datagram in batch { route(datagram, now: now, impaired: false) }
        }
        flush()
    }

    private func route(_ datagram: UDPSocket.Datagram, now: Instant, impaired: Bool) {
        if !impaired, impairment != nil, Self.isMedia(datagram.bytes) {
            impairment?.inbound.send(datagram, now: now)
            if let next = impairment?.inbound.nextArrival { impairment?.timer.arm(at: next) }
            return
        }
        counters.datagramsIn += 1
        counters.bytesIn += datagram.bytes.count
        let id: PeerID
        if let known = byAddress[datagram.source] {
            id = known
        } else if let ufrag = Self.checkUfrag(datagram.bytes), let named = byUfrag[ufrag] {
            id = named
        } else {
            counters.unroutable += 1
            return
        }
        guard let transport = peers[id]?.transport else { return }
        transport.handleDatagram(datagram.bytes, from: datagram.source, now: now)
        // Learn the address once the agent has accepted a check from it.
        if byAddress[datagram.source] == nil, transport.hasValidated(datagram.source) { learn(datagram.source, for: id) }
        service(id, now: now)
    }

    /// Routes `address` to peer `id`, and forgets the peer's addresses its transport no longer
    /// takes (it keeps its last 8): a peer that sends valid checks from port after port holds
    /// no more routes than that.
    private func learn(_ address: TransportAddress, for id: PeerID) {
        guard let transport = peers[id]?.transport else { return }
        byAddress[address] = id
        peers[id]?.addresses.insert(address)
        guard let addresses = peers[id]?.addresses, addresses.count > 8 else { return }
        for stale in addresses where !transport.hasValidated(stale) {
            peers[id]?.addresses.remove(stale)
            if byAddress[stale] == id { byAddress[stale] = nil }
            closeTCP(stale)
        }
    }

    /// The first half of a Binding request's USERNAME (RFC 8445 §7.2.2: `ourUfrag:theirUfrag`),
    /// read without verifying anything: the peer's agent does that.
    static func checkUfrag(_ datagram: [UInt8]) -> String? {
        guard DatagramKind(datagram: datagram) == .stun, let message = try? STUNMessage(parsing: datagram),
              message.type == .bindingRequest, let username = message.username,
              let colon = username.firstIndex(of: ":") else { return nil }
        return String(username[..<colon])
    }

    /// Hands a peer's events to its sink, queues its datagrams and re-arms its timer.
    private func service(_ id: PeerID, now: Instant) {
        guard let peer = peers[id] else { return }
        let transport = peer.transport
        drainTransmits(of: transport)
        while let event = transport.pollEvent() {
            peer.sink?.peer(id, didEmit: event)
            guard peers[id] != nil else { return }  // the sink removed it
        }
        guard let deadline = transport.nextTimeout(now: now) else { return }
        peer.timer.arm(at: deadline)
    }

    private func drainTransmits(of transport: PeerTransport) {
        while let transmit = transport.pollTransmit() { pendingSends.append(transmit) }
    }
}
