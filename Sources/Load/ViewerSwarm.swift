import Client
import Foundation
import RTP
import Sockets
import Streams
import Transport
import Wire

/// `tessera view`: N composite viewers (WHEP, recvonly: `POST /v1/rooms/{room}/viewers`) of one
/// room at one host, each a real WebRTC peer over its own UDP socket (controlling ICE, DTLS
/// client, SRTP) made of Tessera's client stack. They count the composite's frames (its
/// packets with the marker bit) and the mix's packets; they decode nothing, so many fit on one
/// core. Used to load edge hosts (docs/cluster.md, "Viewers at edge hosts").
public final class ViewerSwarm {
    public struct Options: Sendable {
        public var url: String
        public var room: String
        public var viewers: Int
        public var duration: Duration
        /// Joins per second.
        public var joinRate: Double
        /// Signs a viewer's token when the host has auth on.
        public var token: String?
        public init(url: String, room: String, viewers: Int, duration: Duration, joinRate: Double = 20, token: String? = nil) {
            self.url = url
            self.room = room
            self.viewers = viewers
            self.duration = duration
            self.joinRate = joinRate
            self.token = token
        }
    }

    /// What each viewer received.
    public struct Result: Sendable {
        public var connected = false
        public var videoFrames = 0
        public var videoPackets = 0
        public var audioPackets = 0
        public var failure: String?
    }

    public enum Failure: Error, CustomStringConvertible {
        case setup(String)
        public var description: String {
            switch self {
            case .setup(let why): "cannot start: \(why)"
            }
        }
    }

    private let options: Options
    private let http: HostHTTPClient

    public init(options: Options) {
        self.options = options
        var credentials: HostHTTPClient.Credentials?
        if let token = options.token { credentials = { _, _ in token } }
        http = HostHTTPClient(base: options.url, credentials: credentials)
    }

    /// Joins the viewers, keeps them `duration`, DELETEs them, and answers what each received.
    public func run() throws(Failure) -> [Result] {
        let loop: EventLoop
        let context: DTLSContext
        let certificate: DTLSCertificate
        do {
            loop = try EventLoop()
            certificate = try DTLSCertificate(commonName: "tessera-view")
            context = try DTLSContext(certificate: certificate)
        } catch {
            throw .setup("\(error)")
        }
        let start = loop.clock.now() + .milliseconds(50)
        let viewers = (0..<options.viewers).map { index in
            SwarmViewer(index: index, room: options.room, loop: loop, http: http, certificate: certificate, context: context)
        }
        for (index, viewer) in viewers.enumerated() {
            loop.schedule(at: start + .nanoseconds(Int64(Double(index) / options.joinRate * 1e9))) { viewer.join() }
        }
        loop.schedule(at: start + options.duration) {
            var left = viewers.count
            if left == 0 { loop.stop() }
            for viewer in viewers {
                viewer.leave {
                    left -= 1
                    if left == 0 { loop.stop() }
                }
            }
            // DELETEs that get no answer do not hold the run.
            loop.schedule(at: loop.clock.now() + .seconds(5)) { loop.stop() }
        }
        loop.run()
        http.cancelAll()
        return viewers.map(\.result)
    }
}

/// One viewer of the swarm.
private final class SwarmViewer {
    let index: Int
    let room: String
    let loop: EventLoop
    let http: HostHTTPClient
    let certificate: DTLSCertificate
    let context: DTLSContext
    private(set) var result = ViewerSwarm.Result()
    private var socket: UDPSocket?
    private var transport: PeerTransport?
    private var answer: ClientAnswer?
    private var receiver: PeerReceiver?
    private var hostVideo: SSRC?
    private var hostAudio: SSRC?
    private let ownSSRC = UInt32.random(in: 1...UInt32.max)
    private var leaving = false
    private lazy var timer: DeadlineTimer = {
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [unowned self] now in
            self.transport?.handleTimeout(now: now)
            self.service(now: now)
        }
        return timer
    }()

    init(index: Int, room: String, loop: EventLoop, http: HostHTTPClient, certificate: DTLSCertificate, context: DTLSContext) {
        self.index = index
        self.room = room
        self.loop = loop
        self.http = http
        self.certificate = certificate
        self.context = context
    }

    func join() {
        do { socket = try UDPSocket(bind: TransportAddress(ipv4: 0, 0, 0, 0, port: 0), batchSize: 16, receiveBufferBytes: 1 << 20) } catch {
            return fail("UDP socket: \(error)")
        }
        let ice = ICECredentials.random()
        let offer = ClientOffer(ice: ice, fingerprint: certificate.fingerprint, cname: "viewer-\(index)", sections: [
            .opus(mid: "0", ssrc: ownSSRC, direction: .recvonly),
            .vp8(mid: "1", ssrc: ownSSRC &+ 1, rtxSSRC: ownSSRC &+ 2, direction: .recvonly),
        ], offersAudioLevel: false)
        let confined = LoopConfined(self, on: loop), loop = self.loop
        http.send("POST", "/v1/rooms/\(room)/viewers", contentType: "application/sdp", body: offer.description.serializedBytes()) { result in
            loop.execute { confined.value.answered(result, ice: ice) }
        }
    }

    private func answered(_ result: Swift.Result<HostHTTPClient.Reply, HostHTTPClient.Failure>, ice: ICECredentials) {
        guard !leaving, let socket else { return }
        let answer: ClientAnswer
        switch ClientAnswer.read(result) {
        case .failure(let failure): return fail("\(failure)")
        case .success(let read): answer = read.answer
        }
        self.answer = answer
        let now = loop.clock.now()
        do {
            transport = try answer.clientTransport(context: context, localICE: ice, now: now)
            try loop.watch(fd: socket.fd) { [unowned self] in readSocket() }
        } catch {
            return fail("transport: \(error)")
        }
        hostAudio = answer.hostSSRCs["0"].map { SSRC(rawValue: $0) }
        hostVideo = answer.hostSSRCs["1"].map { SSRC(rawValue: $0) }
        var receiver = PeerReceiver(localSSRC: SSRC(rawValue: ownSSRC), cname: "viewer-\(index)", reducedSize: true, seed: UInt64(index + 1), now: now)
        if let hostAudio { receiver.add(.init(mediaSSRC: hostAudio, clockRate: 48_000, isVideo: false, nack: false)) }
        if let hostVideo { receiver.add(.init(mediaSSRC: hostVideo, clockRate: 90_000, isVideo: true, rtx: answer.hostRTX["1"], nack: true)) }
        self.receiver = receiver
        transport?.handleTimeout(now: now)
        service(now: now)
    }

    /// DELETE, then the transport closes; `done` runs on the loop once the host answered (or at
    /// once when there is nothing to delete).
    func leave(done: @escaping () -> Void) {
        leaving = true
        let location = answer?.location
        tearDown()
        guard let location else { return done() }
        let box = LoopConfined(done, on: loop), loop = self.loop
        http.send("DELETE", location) { _ in loop.execute { box.value() } }
    }

    private func fail(_ why: String) {
        if result.failure == nil { result.failure = "viewer \(index): \(why)" }
        tearDown()
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

    private func service(now: Instant) {
        guard let transport else { return }
        while let event = transport.pollEvent() {
            switch event {
            case .secure: result.connected = true
            case .rtp(let bytes): received(bytes, now: now)
            case .rtcp(let bytes):
                if let packets = try? RTCPPacket.parseCompound(bytes) { receiver?.receiveRTCP(packets, now: now) }
            case .failed(let failure): return fail("transport failed: \(failure)")
            case .iceConnected: break
            }
        }
        guard let live = self.transport, let socket else { return }
        if var receiver {
            for compound in receiver.pollRTCP(now: now) { _ = live.sendRTCP(compound) }
            self.receiver = receiver
        }
        let datagrams = live.takeTransmits()
        if !datagrams.isEmpty { socket.send(datagrams) }
        let due = [live.nextTimeout(now: now), receiver?.nextTimeout].compactMap { $0 }.min()
        if let due { timer.arm(at: due) }
    }

    private func received(_ bytes: [UInt8], now: Instant) {
        guard let packet = try? RTPPacket.parse(bytes), var receiver else { return }
        let reception = receiver.receive(packet, now: now)
        self.receiver = receiver
        guard case .media(let media) = reception else { return }
        if media.ssrc == hostVideo {
            result.videoPackets += 1
            if media.marker { result.videoFrames += 1 }
        } else if media.ssrc == hostAudio {
            result.audioPackets += 1
        }
    }
}
