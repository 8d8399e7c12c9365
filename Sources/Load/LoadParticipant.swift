import Client
import Foundation
import Compositing
import Media
import RTP
import SDP
import Sockets
import Streams
import Transport
import Wire

/// One synthetic participant: a real WebRTC peer over its own UDP socket (controlling ICE, DTLS
/// client, SRTP, RTCP: Tessera's transport in the client role). It sends its pre-encoded tone
/// (or silence) and picture loop, and checks what the host sends back: its mix by Goertzel per
/// speaker frequency, the composite's packets, and (when it `decodes`) the composite's pictures.
/// Loop thread only.
final class LoadParticipant {
    enum State: Equatable {
        case absent, posting, connecting, connected
    }

    /// What one participant saw over the run: the figures behind the checks.
    struct Results {
        var joins = 0
        var failures: [String] = []
        /// POST to secure, per join.
        var joinMilliseconds: [Double] = []
        /// POST to the first composite frame (decoded when the participant decodes, else whole).
        var firstFrameMilliseconds: Double?
        var audioPacketsReceived = 0
        var videoPacketsReceived = 0
        /// Composite packets that came again (on the host's RTX stream) after a NACK.
        var retransmissionsReceived = 0
        var packetsExpected: Int64 = 0
        var packetsLost: Int64 = 0
        /// RTP packets its own impaired network (`--loss`) dropped on their way to it: the loss
        /// that is the impairment's, not the host's.
        var packetsLostOnTheWay: Int64 = 0
        var jitterMilliseconds: [Double] = []
        var videoFramesReceived = 0
        /// When each whole composite frame arrived, seconds into the run (its received frame rate
        /// over the steady window).
        var frameArrivals: [Double] = []
        var framesDecoded = 0
        var freezes = 0
        var freezeMilliseconds = 0.0
        var longestFreezeMilliseconds = 0.0
        /// Key frames of the composite that arrived (the first, and each one repair asked for).
        var keyFramesReceived = 0
        /// Generic NACKs and key frame requests it sent about the composite.
        var nacksSent = 0
        var keyFrameRequestsSent = 0
        /// After `--blackout`: how soon its first mix packet, and its first whole composite
        /// frame, arrived.
        var audioRecoveryMilliseconds: Double?
        var videoRecoveryMilliseconds: Double?
        /// Mix packets expected and never received (each one its player conceals).
        var audioPacketsExpected: Int64 = 0
        var audioPacketsLost: Int64 = 0
        var connectedMilliseconds = 0.0
        /// Per speaker index: mix frames in which that speaker should have been heard, and was.
        var framesExpectingSpeaker: [Int: Int] = [:]
        var framesHearingSpeaker: [Int: Int] = [:]
        /// Mix frames checked for the participant's own tone, and those that held it.
        var framesCheckedForOwnTone = 0
        var framesWithOwnTone = 0
        var slotChecks = 0
        var slotChecksPassed = 0
        var slotFailures: [String] = []
        var audioLatencies: [(at: Double, milliseconds: Double)] = []
        var videoLatencies: [(at: Double, milliseconds: Double)] = []
        /// Lip sync as a receiver that plays by the host's sender reports sees it: for each tone
        /// onset, the speaker's camera frame captured with it (within half a frame) shown in the
        /// composite against the onset heard in the mix, both on the host's clock through its
        /// sender reports (positive: lips late).
        var avOffsetMilliseconds: [Double] = []
        /// The host of the first join's session, and each rejoin after a failed transport
        /// (`--rejoin`); why it was still out at the end, if it was.
        var firstHost: String?
        var rejoins: [LoadReport.Rejoin] = []
        var rejoinUnfinished: String?
    }

    let index: Int
    let identity: String
    let isSpeaker: Bool
    let decodes: Bool
    private let model: LoadRoomModel
    private let loop: EventLoop
    private let http: HostHTTPClient
    private let certificate: DTLSCertificate
    private let dtlsContext: DTLSContext
    private let toneLoop: ToneLoop?
    private let silence: [UInt8]
    /// Its camera's streams: one, or three simulcast layers (`--simulcast`).
    private var camera: [CameraLayer]
    private let audioSSRC = UInt32.random(in: 1...UInt32.max)

    /// One stream of its camera: a simulcast layer (by rid) or the only one.
    private struct CameraLayer {
        let rid: String?
        let pictures: PictureLoop
        let ssrc = UInt32.random(in: 1...UInt32.max)
        let rtxSSRC = UInt32.random(in: 1...UInt32.max)
        var sender: VideoSender?
        var stream: RTPSendStream?
    }

    /// The host's latest REMB cap of the camera (bit/s): simulcast layers are sent from the
    /// smallest up while their rates fit under it, as Chrome allocates its layers; nil for none.
    private var cameraCap: Int?

    /// Whether simulcast layer `index` fits under the REMB cap with the layers below it (the
    /// smallest always goes).
    private func layerFits(_ index: Int) -> Bool {
        guard index > 0, let cameraCap, camera.count > 1 else { return true }
        return camera[...index].reduce(0) { $0 + $1.pictures.bitsPerSecond } <= cameraCap
    }

    /// The ids the host's answer gave the rid extensions, when it took the simulcast layers.
    private var ridExtensionIDs: (rid: UInt8, repaired: UInt8?)?

    private static func ridExtensionIDs(_ media: MediaDescription?) -> (rid: UInt8, repaired: UInt8?)? {
        let maps = media?.extensionMaps ?? []
        guard let rid = maps.first(where: { $0.uri == HeaderExtensionURI.rtpStreamID.rawValue }).flatMap({ UInt8(exactly: $0.id) }) else { return nil }
        return (rid, maps.first { $0.uri == HeaderExtensionURI.repairedRTPStreamID.rawValue }.flatMap { UInt8(exactly: $0.id) })
    }

    private(set) var state = State.absent
    private(set) var results = Results()
    /// RTP packets sent, retransmissions included.
    private(set) var packetsSent = 0

    // One join's state.
    private var socket: UDPSocket?
    /// The lossy network its media meets (`--loss`, `--jitter`…), both ways; nil for none.
    private var network: (inbound: NetEm<UDPSocket.Datagram>, outbound: NetEm<Datagram>)?
    private typealias Datagram = (bytes: [UInt8], destination: TransportAddress)
    private var transport: PeerTransport?
    private var answer: ClientAnswer?
    private var receiver: PeerReceiver?
    private var hostAudio: SSRC?
    private var hostVideo: SSRC?
    private var hostVideoRTX: RTXConfiguration?
    /// The mix in sequence order, as a player's jitter buffer plays it.
    private var mixReorder = MixReorder()
    /// Per speaker: the send time of the last onset timed.
    private var timedOnset: [Int: Instant] = [:]
    /// Per speaker, for lip sync: its last tone onset (its capture in NTP seconds, and its delay
    /// to the host's mix clock through the host's audio SR) until a frame is measured against
    /// it; its last camera frames shown (capture, and delay to the host's composite clock); and
    /// the last frame code seen in its tile.
    private var lipSyncOnset: [Int: (captured: Double, delay: Double)] = [:]
    private var shownFrames: [Int: [(captured: Double, delay: Double)]] = [:]
    private var lastCodeSeen: [Int: Int] = [:]
    /// When its transport or receive side next needs the time.
    private lazy var timer: DeadlineTimer = {
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [unowned self] _ in
            let now = self.now
            self.transport?.handleTimeout(now: now)
            self.service(now: now)
        }
        return timer
    }()
    private var postedAt: Instant?
    private var connectedAt: Instant?
    /// The stream of mix packets so far (its last two), decoded in `model.mixDecoding`.
    private var mixStream: SharedMixDecoding.Key?
    /// The last mix packet's timestamp and sound: an onset may start in it.
    private var previousMix: (timestamp: UInt32, samples: [Int16])?
    private var videoReceiver: VideoReceiver?
    private var keyFramesSeen = 0
    private var lastFrameTimestamp: UInt32?
    private var lastFrameArrival: Instant?
    /// Per speaker: mix frames in a row without its tone.
    private var quietFrames: [Int]
    /// How steadily each speaker is in this listener's mix: the share of the recent judged frames
    /// holding its tone (a moving average over about half a second).
    private var presence: [Double]
    /// Whether the host mixes only some of the speakers (Top K): then a speaker's onset is timed
    /// only while it is steadily in the mix, since one outside it is not heard at its onset (it
    /// comes in whenever the host gives it a place), and Opus's intermodulation of two mixed tones
    /// can put a few percent of a frame at a third speaker's frequency, which looked like that
    /// speaker's onset 0.8 s late.
    private let mixesSomeSpeakers: Bool
    private var decodedSinceCheck = 0
    /// Generation of the join, so an answer to an abandoned join is ignored.
    private var generation = 0

    // `--rejoin`.
    /// When the last RTP or RTCP came from the host (a transport that hears nothing for
    /// `LoadOptions.rejoinSilence` has failed).
    private var lastHeardAt: Instant?
    /// A failed transport being replaced: when its media stopped, when that was noticed, why,
    /// the tries so far and the last one's problem; nil while none is.
    private var lost: (stoppedAt: Instant, noticedAt: Instant, reason: String, attempts: Int, problem: String?, host: String?)?
    /// The host of the current join's session.
    private var sessionHost: String?
    /// Bumped to cancel a scheduled try.
    private var rejoinToken = 0

    // Sending.
    private var audioSequence = UInt16.random(in: 0...UInt16.max)
    private var audioTimestamp = UInt32.random(in: 0...UInt32.max)
    private var audioCount = 0
    /// Silent frames in a row, for DTX (`ClientAnswer.opusDTX`).
    private var silentFrames = 0
    /// With DTX, as WebRTC's Opus encoder does it: after 10 silent frames (200 ms) a frame of
    /// no bytes (the TOC alone, RFC 6716 §3.2.1) says DTX starts, then every 20th frame (400 ms)
    /// is an update, each followed by such a frame again; the frames left out take no sequence
    /// number, only RTP time.
    static let framesBeforeDTX = 10
    static let framesPerDTXUpdate = 20
    private var videoTimestamp = UInt32.random(in: 0...UInt32.max)
    /// The picture of the loop sent next, on every layer: the layers are one capture (a key
    /// frame request of any layer restarts them all at the loop's key frame).
    private var loopFrame = 0
    /// What it sends, as a browser keeps it: the sender reports' NTP↔RTP mapping of each
    /// stream (the host lines a guest's camera up with its voice by them), and the camera's last
    /// 512 packets for the host's NACKs.
    private var audioStream: RTPSendStream?

    init(index: Int, model: LoadRoomModel, loop: EventLoop, http: HostHTTPClient, certificate: DTLSCertificate,
         dtlsContext: DTLSContext, toneLoop: ToneLoop?, silence: [UInt8], pictureLoops: [(rid: String?, pictures: PictureLoop)]) {
        self.index = index
        identity = model.identities[index]
        isSpeaker = index < model.options.speakers
        decodes = index < model.options.decoders
        self.model = model
        self.loop = loop
        self.http = http
        self.certificate = certificate
        self.dtlsContext = dtlsContext
        self.toneLoop = toneLoop
        self.silence = silence
        camera = pictureLoops.map { CameraLayer(rid: $0.rid, pictures: $0.pictures) }
        quietFrames = model.speakers.map { _ in 0 }
        presence = model.speakers.map { _ in 0 }
        mixesSomeSpeakers = model.options.maxVoices > 0 && model.options.speakers > model.options.maxVoices
    }

    private var now: Instant { loop.clock.now() }

    /// The SSRCs it sends and those the host sends it: what `--attack`'s forged RTCP claims.
    var ssrcs: [UInt32] { [audioSSRC] + camera.flatMap { [$0.ssrc, $0.rtxSSRC] } + [hostAudio, hostVideo].compactMap { $0?.rawValue } }

    private func seconds(_ duration: Duration) -> Double {
        duration.seconds
    }

    private var runSeconds: Double { seconds(now - model.start) }

    // MARK: Joining and leaving

    /// Posts the offer (to `base`, or the run's `--url`); the answer comes back on the loop.
    func join(via base: String? = nil) {
        guard state == .absent else { return }
        generation += 1
        let generation = self.generation
        let socket: UDPSocket
        // Loopback hosts are reached from 127.0.0.1; a remote one (--allow-remote) from any address.
        let local = LoadOptions.isLoopback(model.options.host) ? TransportAddress(ipv4: 127, 0, 0, 1, port: 0)
                                                               : TransportAddress(ipv4: 0, 0, 0, 0, port: 0)
        do {
            socket = try UDPSocket(bind: local, batchSize: 8, receiveBufferBytes: 1 << 20)
        } catch {
            return fail("UDP socket: \(error)")
        }
        self.socket = socket
        if let impairment = model.options.impairment {
            let seed = model.options.seed &+ UInt64(index) &* 0x9E37_79B9 &+ UInt64(generation) &* 7
            network = (NetEm(impairment, seed: seed), NetEm(impairment, seed: seed &+ 1))
        }
        state = .posting
        results.joins += 1
        postedAt = now
        let ice = ICECredentials.random()
        // An audio-only run offers no video at all: the host composes and sends nothing for it.
        var sections: [ClientOffer.Section] = [.opus(mid: "0", ssrc: audioSSRC)]
        if camera.count > 1 {
            sections.append(.vp8(mid: "1", layers: camera.map { ClientOffer.SimulcastLayer(rid: $0.rid ?? "", ssrc: $0.ssrc, rtxSSRC: $0.rtxSSRC) }))
        } else if let single = camera.first {
            sections.append(.vp8(mid: "1", ssrc: single.ssrc, rtxSSRC: single.rtxSSRC))
        }
        let offer = ClientOffer(ice: ice, fingerprint: certificate.fingerprint, cname: identity, sections: sections,
                                offersAudioLevel: model.options.audioLevels)
        let body = offer.description.serializedBytes()
        let path = "/v1/rooms/\(model.options.room)/participants?identity=\(identity)&name=Load%20\(index)"
        let loop = self.loop
        let confined = LoopConfined(self, on: loop)
        http.send("POST", (base ?? "") + path, contentType: "application/sdp", body: body) { result in
            loop.execute { confined.value.answered(result, ice: ice, generation: generation) }
        }
    }

    private func answered(_ result: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>, ice: ICECredentials, generation: Int) {
        guard generation == self.generation, state == .posting, let socket else { return }
        let answer: ClientAnswer, reply: HostHTTPClient.Reply
        switch ClientAnswer.read(result) {
        case .failure(let failure): return failOrRetry("\(failure)")
        case .success(let read): (answer, reply) = read
        }
        self.answer = answer
        // In a cluster the session is named on the room's host; else it is the host asked.
        sessionHost = HostHTTPClient.origin(of: answer.location) ?? HostHTTPClient.origin(of: reply.url)
        if results.firstHost == nil { results.firstHost = sessionHost }
        if let sessionHost { model.roomHost = sessionHost }
        let now = self.now
        do {
            transport = try answer.clientTransport(context: dtlsContext, localICE: ice, now: now)
            try loop.watch(fd: socket.fd) { [unowned self] in readSocket() }
        } catch {
            return failOrRetry("transport: \(error)")
        }
        hostAudio = answer.hostSSRCs["0"].map { SSRC($0) }
        hostVideo = answer.hostSSRCs["1"].map { SSRC($0) }
        var receiver = PeerReceiver(localSSRC: SSRC(audioSSRC), cname: identity, reducedSize: true, seed: UInt64(index + 1), now: now)
        if let hostAudio { receiver.add(.init(mediaSSRC: hostAudio, clockRate: 48_000, isVideo: false, nack: false)) }
        hostVideoRTX = answer.hostRTX["1"]
        if let hostVideo { receiver.add(.init(mediaSSRC: hostVideo, clockRate: 90_000, isVideo: true, rtx: hostVideoRTX, nack: true)) }
        // The host's NACKs about our camera are answered on our RTX stream when it took it.
        let videoAnswer = answer.description.media.first { $0.mid == "1" }
        let acceptsRTX = videoAnswer?.rtpMaps.contains { $0.encodingName.lowercased() == "rtx" } ?? false
        var audioConfiguration = RTPSendStream.Configuration(ssrc: SSRC(audioSSRC), clockRate: 48_000)
        audioConfiguration.retransmission.capacity = 1  // the mix is not resent: only the reports' counts
        audioStream = RTPSendStream(configuration: audioConfiguration, clock: model.wallClock)
        for index in camera.indices {
            let layer = camera[index]
            let rtx = acceptsRTX ? RTXConfiguration(ssrc: SSRC(layer.rtxSSRC), payloadType: PayloadType(97), associatedPayloadType: PayloadType(96)) : nil
            var configuration = RTPSendStream.Configuration(ssrc: SSRC(layer.ssrc), clockRate: 90_000, rtx: rtx)
            configuration.retransmission.capacity = 512
            camera[index].stream = RTPSendStream(configuration: configuration, clock: model.wallClock, firstRTXSequenceNumber: .random(in: 0...UInt16.max))
            camera[index].sender = VideoSender(payloadType: PayloadType(96), ssrc: SSRC(layer.ssrc))
        }
        loopFrame = 0
        cameraCap = nil
        // A simulcast layer names its rid in each packet (RFC 8852), as the host's answer agreed.
        ridExtensionIDs = Self.ridExtensionIDs(videoAnswer)
        self.receiver = receiver
        if decodes {
            do {
                let videoReceiver = try VideoReceiver()
                videoReceiver.onKeyFrameNeeded = { [unowned self] in
                    if let hostVideo { self.receiver?.requestKeyFrame(ssrc: hostVideo, now: self.now) }
                }
                self.videoReceiver = videoReceiver
            } catch { return fail("VP8 decoder: \(error)") }
        }
        state = .connecting
        transport?.handleTimeout(now: now)
        service(now: now)
    }

    /// Leaves the room: DELETE (`answered` runs on the loop when the host has answered it, or
    /// at once if there was nothing to delete), then the transport closes.
    func leave(answered: (@Sendable () -> Void)? = nil) {
        if let lost {
            // Left (churn, or the run's end) while replacing a failed transport.
            results.rejoinUnfinished = "\(identity): its transport failed (\(lost.reason)) at \(String(format: "%.1f", seconds(lost.stoppedAt - model.start))) s and \(lost.attempts) tries had not brought media back" + (lost.problem.map { " (last: \($0))" } ?? "")
            self.lost = nil
        }
        rejoinToken += 1
        if let location = answer?.location {
            let loop = self.loop
            http.send("DELETE", location) { _ in
                if let answered { loop.execute(answered) }
            }
        } else {
            answered?()
        }
        tearDown()
    }

    /// A failed join or a transport that failed: counted, and the participant stays out.
    private func fail(_ why: String) {
        results.failures.append("\(identity): \(why)")
        tearDown()
    }

    /// A join that did not work: while replacing a failed transport (`--rejoin`), the next try;
    /// else a failure, as without `--rejoin`.
    private func failOrRetry(_ why: String) {
        guard lost != nil else { return fail(why) }
        tearDown()
        lost?.problem = why
        scheduleRejoin()
    }

    /// `--rejoin`: the transport failed (or went silent). The host may be gone: the session is
    /// deleted if it is not (so that the identity is free), and the participant joins again,
    /// same room and identity, through the hosts of `--url` in turn.
    private func transportLost(_ why: String) {
        let now = self.now
        let stoppedAt = lastHeardAt ?? connectedAt ?? now
        if let location = answer?.location { http.send("DELETE", location) { _ in } }
        let failedHost = sessionHost
        tearDown()
        if let replacing = lost {
            // A rejoin's transport that connected but brought no media: one more failed try of
            // the same rejoin (its tries and time stay bounded), not a new one.
            lost?.problem = why
            lost?.host = failedHost ?? replacing.host
        } else {
            lost = (stoppedAt, now, why, 0, nil, failedHost)
        }
        scheduleRejoin()
    }

    /// The next try of a rejoin, after a wait that doubles (none before the first), while tries
    /// and time are left; else the participant fails.
    private func scheduleRejoin() {
        guard let lost else { return }
        let now = self.now
        guard lost.attempts < LoadOptions.rejoinAttempts, now - lost.noticedAt < LoadOptions.rejoinWindow else {
            self.lost = nil
            return fail("transport failed (\(lost.reason)); \(lost.attempts) rejoins within \(LoadOptions.rejoinWindow) did not bring media back"
                        + (lost.problem.map { " (last: \($0))" } ?? ""))
        }
        var wait = Duration.zero
        if lost.attempts > 0 {
            wait = LoadOptions.rejoinBackoff.first
            for _ in 1..<lost.attempts where wait < LoadOptions.rejoinBackoff.last { wait = wait * 2 }
            wait = min(wait, LoadOptions.rejoinBackoff.last)
        }
        rejoinToken += 1
        let token = rejoinToken
        loop.schedule(at: now + wait) { [unowned self] in
            guard token == rejoinToken, state == .absent, var lost = self.lost else { return }
            // The hosts in turn, the one whose transport failed last: it is the likeliest gone.
            let others = model.options.urls.filter { $0 != lost.host }
            let urls = others.isEmpty ? model.options.urls : others
            let base = urls.isEmpty ? nil : urls[lost.attempts % urls.count]
            lost.attempts += 1
            self.lost = lost
            join(via: base)
        }
    }

    private func tearDown() {
        let now = self.now
        if state == .connected {
            model.sendingSince[index] = nil
            model.lastMembershipChange = now
            if let connectedAt { results.connectedMilliseconds += seconds(now - connectedAt) * 1000 }
        }
        collectStatistics()
        if let socket, transport != nil { loop.unwatch(fd: socket.fd) }
        timer.cancel()
        socket = nil
        transport = nil
        answer = nil
        receiver = nil
        connectedAt = nil
        videoReceiver = nil
        mixStream = nil
        previousMix = nil
        lipSyncOnset = [:]
        shownFrames = [:]
        audioStream = nil
        for index in camera.indices {
            camera[index].stream = nil
            camera[index].sender = nil
        }
        lastFrameArrival = nil
        lastFrameTimestamp = nil
        lastHeardAt = nil
        sessionHost = nil
        state = .absent
        generation += 1
    }

    /// Adds this join's receive statistics to the results.
    private func collectStatistics() {
        guard let receiver else { return }
        for statistics in receiver.statistics {
            results.packetsExpected += statistics.packetsExpected
            results.packetsLost += statistics.cumulativeLost
            results.jitterMilliseconds.append(seconds(statistics.jitterDuration) * 1000)
            if statistics.ssrc == hostAudio {
                results.audioPacketsExpected += statistics.packetsExpected
                results.audioPacketsLost += statistics.cumulativeLost
            }
        }
    }

    /// Loss over the run so far (this join's included).
    var lossFraction: Double {
        var expected = results.packetsExpected, lost = results.packetsLost
        for statistics in receiver?.statistics ?? [] {
            expected += statistics.packetsExpected
            lost += statistics.cumulativeLost
        }
        return expected > 0 ? Double(lost) / Double(expected) : 0
    }

    // MARK: Transport

    private func readSocket() {
        guard let socket else { return }
        let now = self.now
        socket.receive(from: answer?.candidate) { datagram in
            if model.isDark(now) { return }  // `--blackout`: nothing gets through
            if network != nil, Self.isMedia(datagram.bytes) {
                if network?.inbound.send(datagram, now: now) == false, MuxedPacketKind.classify(datagram.bytes) == .rtp {
                    results.packetsLostOnTheWay += 1
                }
            } else {
                transport?.handleDatagram(datagram.bytes, from: datagram.source, now: now)
            }
        }
        service(now: now)
    }

    /// RFC 7983: a first byte of 128…191 is RTP or RTCP; STUN and DTLS are not impaired.
    private static func isMedia(_ bytes: [UInt8]) -> Bool { bytes.first.map { (128...191).contains($0) } ?? false }

    /// Sends what the transport queued, takes its events, and sets the timer for what is due next.
    private func service(now: Instant) {
        guard let transport else { return }
        for datagram in network?.inbound.receive(now: now) ?? [] {
            transport.handleDatagram(datagram.bytes, from: datagram.source, now: now)
        }
        while let event = transport.pollEvent() {
            switch event {
            case .secure:
                guard state == .connecting, let postedAt else { break }
                state = .connected
                connectedAt = now
                results.joinMilliseconds.append(seconds(now - postedAt) * 1000)
                model.sendingSince[index] = now
                model.lastMembershipChange = now
            case .rtp(let bytes):
                lastHeardAt = now
                received(rtp: bytes, now: now)
            case .rtcp(let bytes):
                lastHeardAt = now
                received(rtcp: bytes)
            case .failed(let failure):
                if lost != nil { return failOrRetry("transport failed: \(failure)") }
                if model.options.rejoin && state == .connected { return transportLost("\(failure)") }
                return fail("transport failed: \(failure)")
            case .iceConnected: break
            }
        }
        guard self.transport != nil else { return }
        if let silentSince = silenceWatchedSince, now - silentSince >= LoadOptions.rejoinSilence {
            return transportLost("nothing from the host for \(LoadOptions.rejoinSilence)")
        }
        if var receiver {
            let streams = [audioStream] + camera.map(\.stream)
            for compound in receiver.pollRTCP(now: now, senderReports: { now in streams.compactMap { $0?.makeSenderReport(now: now) } }) {
                _ = transport.sendRTCP(compound)
            }
            results.nacksSent = receiver.nacksSent
            results.keyFrameRequestsSent = receiver.keyFrameRequestsSent
            self.receiver = receiver
        }
        flush()
        var due = transport.nextTimeout(now: now)
        if let reportDue = receiver?.nextTimeout { due = due.map { min($0, reportDue) } ?? reportDue }
        for arrival in [network?.inbound.nextArrival, network?.outbound.nextArrival].compactMap({ $0 }) {
            due = due.map { min($0, arrival) } ?? arrival
        }
        if let silentSince = silenceWatchedSince {
            let deadline = silentSince + LoadOptions.rejoinSilence
            due = due.map { min($0, deadline) } ?? deadline
        }
        guard let due else { return }
        timer.arm(at: due)
    }

    /// `--rejoin`, connected: since when the host has been silent (its last packet, or the
    /// moment the transport became secure).
    private var silenceWatchedSince: Instant? {
        guard model.options.rejoin, state == .connected else { return nil }
        return lastHeardAt ?? connectedAt
    }

    private func flush() {
        guard let transport, let socket else { return }
        var datagrams: [Datagram] = transport.takeTransmits()
        if var network {
            let now = self.now
            for datagram in datagrams where Self.isMedia(datagram.bytes) { network.outbound.send(datagram, now: now) }
            datagrams.removeAll { Self.isMedia($0.bytes) }
            datagrams += network.outbound.receive(now: now)
            self.network = network
        }
        if model.isDark(now) { return }  // `--blackout`: nothing gets through
        if !datagrams.isEmpty { socket.send(datagrams) }
    }

    // MARK: Sending

    private func send(_ packet: RTPPacket, mid: String, level: AudioLevel? = nil, extensions: [RTPHeaderExtension] = []) -> [UInt8]? {
        var packet = packet
        if let id = answer?.midExtensionID { packet.extensions = [RTPHeaderExtension(id: id, data: Array(mid.utf8))] }
        packet.extensions += extensions
        if let level, let id = answer?.audioLevelExtensionID { packet.extensions.append(RTPHeaderExtension(id: id, data: level.extensionData)) }
        guard let transport, let bytes = try? packet.serialized(), transport.sendRTP(bytes) else { return nil }
        packetsSent += 1
        return bytes
    }

    /// One 20 ms audio packet: the tone loop's next (timing its onsets), or silence. `capturedAt`
    /// is the tick's deadline, the instant its sound stands for (the sender reports map its
    /// timestamp there, and onsets are timed from it), however late the loop sends it.
    func sendAudio(now: Instant, capturedAt: Instant) {
        guard state == .connected else { return }
        for packet in mixReorder.release(now: now) { heard(packet, now: now) }  // a gap waited long enough
        let payload: [UInt8], level: AudioLevel
        if let toneLoop {
            let position = audioCount % ToneLoop.packetsPerLoop
            (payload, level) = (toneLoop.packets[position], toneLoop.levels[position])
            if position == ToneLoop.onsetPacket { model.toneOnsetSent(by: index, at: capturedAt) }
        } else {
            (payload, level) = (silence, ToneLoop.silentLevel)
        }
        audioCount += 1
        silentFrames = level.level >= AudioReceiver.silentLevel ? silentFrames + 1 : 0
        let inDTX = answer?.opusDTX == true && silentFrames > Self.framesBeforeDTX
        let sinceUpdate = (silentFrames - Self.framesBeforeDTX) % Self.framesPerDTXUpdate
        if !inDTX || sinceUpdate <= 1 {
            let sent = inDTX && sinceUpdate == 1 ? payload.prefix(1).map { $0 & 0xFC } : payload
            if let bytes = send(RTPPacket(payloadType: PayloadType(111), sequenceNumber: audioSequence, timestamp: audioTimestamp,
                                          ssrc: SSRC(audioSSRC), payload: sent[...]), mid: "0", level: level) {
                audioStream?.packetSent(bytes: bytes, timestamp: audioTimestamp, payloadSize: sent.count, now: now, captureTime: capturedAt)
            }
            audioSequence &+= 1
        }
        audioTimestamp &+= UInt32(AudioFrame.samplesPer20ms)
        flush()
    }

    /// One picture: the loop's next frame, with its capture instant (the tick's deadline) kept
    /// for the latency.
    func sendVideo(now: Instant, capturedAt: Instant) {
        guard state == .connected, let format = model.options.video, let length = camera.first?.pictures.frames.count else { return }
        model.pictureSent(by: index, frame: loopFrame, at: capturedAt)
        for index in camera.indices where layerFits(index) {
            guard var sender = camera[index].sender else { continue }
            var frame = camera[index].pictures.frames[loopFrame]
            frame.rtpTimestamp = videoTimestamp
            var extensions: [RTPHeaderExtension] = []
            if let rid = camera[index].rid, let id = ridExtensionIDs?.rid { extensions.append(RTPHeaderExtension(id: id, data: Array(rid.utf8))) }
            for packet in sender.packetize(frame) {
                if let bytes = send(packet, mid: "1", extensions: extensions) {
                    camera[index].stream?.packetSent(bytes: bytes, timestamp: packet.timestamp, payloadSize: packet.payload.count, now: now,
                                                     captureTime: capturedAt)
                }
            }
            camera[index].sender = sender
        }
        loopFrame = (loopFrame + 1) % length
        videoTimestamp &+= UInt32(90_000 / format.framesPerSecond)
        flush()
    }

    private func received(rtcp bytes: [UInt8]) {
        guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
        let now = self.now
        receiver?.receiveRTCP(packets, now: now)
        _ = audioStream?.receivedRTCP(packets, now: now)
        for index in camera.indices {
            for bytes in camera[index].stream?.receivedRTCP(packets, now: now) ?? [] where sendRetransmission(bytes, of: camera[index]) {
                packetsSent += 1
            }
        }
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli) where camera.contains(where: { $0.ssrc == pli.mediaSSRC.rawValue }):
                loopFrame = 0
            case .fullIntraRequest(let fir) where fir.entries.contains(where: { entry in camera.contains { $0.ssrc == entry.ssrc.rawValue } }):
                loopFrame = 0
            case .receiverEstimatedMaximumBitrate(let remb) where remb.ssrcs.contains(where: { ssrc in camera.contains { $0.ssrc == ssrc.rawValue } }):
                cameraCap = Int(clamping: remb.bitrate)
            default: break
            }
        }
    }

    /// A retransmission of a camera layer: a simulcast layer's names the rid it repairs
    /// (RFC 8852 §3.2), so the host can place an RTX stream it has not seen.
    private func sendRetransmission(_ bytes: [UInt8], of layer: CameraLayer) -> Bool {
        guard let rid = layer.rid, let id = ridExtensionIDs?.repaired, var packet = try? RTPPacket.parse(bytes) else {
            return transport?.sendRTP(bytes) == true
        }
        packet.setHeaderExtensionData(id: id, Array(rid.utf8)[...])
        guard let repaired = try? packet.serialized() else { return false }
        return transport?.sendRTP(repaired) == true
    }

    // MARK: Receiving and checking

    private func received(rtp bytes: [UInt8], now: Instant) {
        guard var receiver, let packet = try? RTPPacket.parse(bytes) else { return }
        let reception = receiver.receive(packet, now: now)
        self.receiver = receiver
        guard case .media(let media) = reception else { return }
        if let lost {
            // Media flows again after a rejoin: the gap is over.
            results.rejoins.append(LoadReport.Rejoin(failedAt: seconds(lost.stoppedAt - model.start), reason: lost.reason,
                                                     host: sessionHost ?? "?", attempts: lost.attempts,
                                                     gapMilliseconds: seconds(now - lost.stoppedAt) * 1000))
            self.lost = nil
        }
        if let blackout = model.blackout, now >= blackout.upperBound {
            let since = seconds(now - blackout.upperBound) * 1000
            if media.ssrc == hostAudio, results.audioRecoveryMilliseconds == nil { results.audioRecoveryMilliseconds = since }
            if media.ssrc == hostVideo, media.marker, results.videoRecoveryMilliseconds == nil { results.videoRecoveryMilliseconds = since }
        }
        if media.ssrc == hostAudio {
            results.audioPacketsReceived += 1
            for packet in mixReorder.insert(media, now: now) { heard(packet, now: now) }
        } else if media.ssrc == hostVideo {
            results.videoPacketsReceived += 1
            if packet.ssrc == hostVideoRTX?.ssrc { results.retransmissionsReceived += 1 }
            saw(media, now: now)
        }
    }

    /// Frames quieter than this (dBFS) are not judged: the tones are sent at -15 dBFS, so a
    /// quieter mix is a gap (every speaker between tones, or the host's tick skipping).
    static let judgedLevel = -40.0
    /// A speaker's tone is present in a frame when it holds this share of the frame's energy.
    static let tonePresence = 0.03
    /// A listener's own tone counts as mixed back from this share: with k speakers mixed at
    /// equal level each holds about 1/k (a third with three), while Opus's artefacts put up to
    /// 0.05 at a frequency between two other tones (`ToneMeterTests`).
    static let ownTonePresence = 0.15
    /// An onset follows at least this many frames without the tone (the sender's gap is five).
    static let onsetQuietFrames = 3

    /// A mix packet: each speaker's tone measured; onsets timed.
    private func heard(_ packet: RTPPacket, now: Instant) {
        guard let (stream, heard) = model.mixDecoding.hear(Array(packet.payload), after: mixStream, now: now) else {
            mixStream = nil
            return
        }
        mixStream = stream
        let previous = previousMix.flatMap { $0.timestamp &+ UInt32(AudioFrame.samplesPer20ms) == packet.timestamp ? $0.samples : nil }
        previousMix = (packet.timestamp, heard.samples)
        guard let connectedAt, now - connectedAt >= .seconds(1) else { return }  // the host's jitter buffer fills
        let level = heard.level
        for (speaker, fraction) in heard.fractions.enumerated() {
            // A frame under the judged level holds no tone, whatever shares its noise has (when
            // every speaker's gap falls at once, the whole mix is such a frame).
            defer { quietFrames[speaker] = fraction < 0.01 || level <= Self.judgedLevel ? quietFrames[speaker] + 1 : 0 }
            guard level > Self.judgedLevel else { continue }
            if speaker == index {
                results.framesCheckedForOwnTone += 1
                if fraction > Self.ownTonePresence { results.framesWithOwnTone += 1 }
            } else if model.hasBeenSending(speaker, for: .milliseconds(1500), now: now) {
                results.framesExpectingSpeaker[speaker, default: 0] += 1
                if fraction > Self.tonePresence { results.framesHearingSpeaker[speaker, default: 0] += 1 }
                let steady = presence[speaker] >= 0.5
                presence[speaker] += (fraction > Self.tonePresence ? 1 - presence[speaker] : -presence[speaker]) / 25
                if mixesSomeSpeakers && !steady { continue }
                // Each onset is timed once: the tone coming back after a dropout in the middle
                // (Opus concealing a loss or two of a pure tone goes quiet for a few frames) is
                // not its start.
                if quietFrames[speaker] >= Self.onsetQuietFrames, fraction > 0.05,
                   let sent = model.latestOnset(of: speaker, before: now), timedOnset[speaker] != sent {
                    timedOnset[speaker] = sent
                    // An onset sent into a blackout never arrived: what is heard is the tone coming back.
                    guard !model.isDark(sent) else { continue }
                    results.audioLatencies.append((runSeconds, seconds(now - sent) * 1000))
                    // Where in the packet the tone starts, to the sample, as a receiver plays it.
                    lipSyncOnset[speaker] = nil
                    if let hostAudio, let clock = receiver?.senderClock(of: hostAudio), let previous,
                       let sample = ToneOnset.locate(frequency: model.speakers[speaker].frequency, previous: previous, current: heard.samples) {
                        let captured = model.ntpSeconds(at: sent)
                        let heardAt = clock.seconds(at: packet.timestamp) + Double(sample) / Double(AudioFrame.sampleRate)
                        lipSyncOnset[speaker] = (captured, heardAt - captured)
                        measureLipSync(of: speaker)
                    }
                }
            }
        }
    }

    /// A composite packet: frames, freezes, and the decoded pictures' checks.
    private func saw(_ packet: RTPPacket, now: Instant) {
        if VP8PayloadDescriptor.beginsKeyFrame(packet.payload) {
            results.keyFramesReceived += 1
        }
        if packet.marker, packet.timestamp != lastFrameTimestamp {
            lastFrameTimestamp = packet.timestamp
            results.videoFramesReceived += 1
            results.frameArrivals.append(runSeconds)
            if let last = lastFrameArrival, now - last > .milliseconds(200), !(model.blackout.map { $0.overlaps(last..<now) } ?? false) {
                results.freezes += 1
                results.freezeMilliseconds += seconds(now - last) * 1000
                results.longestFreezeMilliseconds = max(results.longestFreezeMilliseconds, seconds(now - last) * 1000)
            }
            lastFrameArrival = now
            if !decodes, results.firstFrameMilliseconds == nil, let postedAt {
                results.firstFrameMilliseconds = seconds(now - postedAt) * 1000
            }
        }
        guard let videoReceiver else { return }
        let pictures = videoReceiver.receive(packet, now: now)
        for (picture, timestamp) in zip(pictures, videoReceiver.lastTimestamps) { showLipSync(picture, rtpTimestamp: timestamp, now: now) }
        for picture in pictures {
            results.framesDecoded += 1
            if results.firstFrameMilliseconds == nil, let postedAt { results.firstFrameMilliseconds = seconds(now - postedAt) * 1000 }
            decodedSinceCheck += 1
            // Every sixth picture (5 a second at 30 fps) is checked: enough samples, a fraction of the cost.
            if decodedSinceCheck >= 6 {
                decodedSinceCheck = 0
                check(picture, now: now)
            }
        }
        let keyFrames = videoReceiver.statistics.keyFramesDecoded
        if keyFrames != keyFramesSeen, let hostVideo {
            keyFramesSeen = keyFrames
            receiver?.keyFrameReceived(ssrc: hostVideo)
        }
    }

    /// Each speaker's tile: when its frame code changes (a new camera frame shows), the frame's
    /// capture and its delay to the host's composite clock (through the host's video SR).
    private func showLipSync(_ picture: I420Frame, rtpTimestamp: UInt32, now: Instant) {
        guard let hostVideo, let clock = receiver?.senderClock(of: hostVideo),
              let layout = model.settledLayout(now: now), let format = model.options.video,
              Self.isDrawn(picture, on: layout.canvas) else { return }
        let canvas = VideoSize(width: picture.width, height: picture.height)
        // Around a blackout both streams restart: what they measure then is the restart.
        if let blackout = model.blackout, now >= blackout.lowerBound && now < blackout.upperBound + .seconds(2) { return }
        for position in layout.positions where position.source == .camera {
            guard let sender = model.indexOf[position.participant], model.speakers.indices.contains(sender) else { continue }
            let placement = TilePlacement(tile: position.rect.pixels(in: canvas), source: (format.width, format.height),
                                          contentMode: position.contentMode)
            guard let code = FrameCode.read({ u, v in placement.point(u, v).map { picture.pixel(x: $0.x, y: $0.y).y } }),
                  code != lastCodeSeen[sender] else { continue }
            let isNewFrame = lastCodeSeen[sender] != nil
            lastCodeSeen[sender] = code
            guard isNewFrame, let captured = model.pictureSentSeconds(of: sender, frame: code, seenAt: now) else { continue }
            shownFrames[sender, default: []].append((captured, clock.seconds(at: rtpTimestamp) - captured))
            if shownFrames[sender, default: []].count > 15 { shownFrames[sender]?.removeFirst() }
            measureLipSync(of: sender)
        }
    }

    /// The A/V offset of `speaker`'s last onset, once the frame captured with it has shown
    /// (the mix and the composite come in either order).
    private func measureLipSync(of speaker: Int) {
        guard let onset = lipSyncOnset[speaker], let format = model.options.video,
              let frame = shownFrames[speaker]?.first(where: { abs($0.captured - onset.captured) <= 0.5 / Double(format.framesPerSecond) })
        else { return }
        lipSyncOnset[speaker] = nil
        results.avOffsetMilliseconds.append((frame.delay - onset.delay) * 1000)
    }

    /// Whether `picture` is the composite of a template on `canvas`: its size, or half of it (a
    /// loaded host of several rooms draws the half canvas, docs/config.md "Many rooms"); the
    /// rects are fractions, so the slots are where they are on either. A picture of another
    /// size is from before a template change.
    static func isDrawn(_ picture: I420Frame, on canvas: TemplateDescription.Canvas) -> Bool {
        (picture.width == canvas.width && picture.height == canvas.height)
            || (picture.width == canvas.width / 4 * 2 && picture.height == canvas.height / 4 * 2)
    }

    /// Each camera's colour in its slot, and each readable frame code's latency.
    private func check(_ picture: I420Frame, now: Instant) {
        guard let layout = model.settledLayout(now: now), let format = model.options.video,
              Self.isDrawn(picture, on: layout.canvas) else { return }
        let canvas = VideoSize(width: picture.width, height: picture.height)
        for position in layout.positions where position.source == .camera {
            guard let sender = model.indexOf[position.participant],
                  model.hasBeenSending(sender, for: .seconds(2), now: now) else { continue }
            let placement = TilePlacement(tile: position.rect.pixels(in: canvas), source: (format.width, format.height),
                                          contentMode: position.contentMode)
            let (u, v) = SyntheticSignal.colourPoint
            guard let point = placement.point(u, v) else { continue }
            let seen = picture.pixel(x: point.x, y: point.y)
            let expected = SyntheticSignal.colour(index: sender)
            results.slotChecks += 1
            if abs(Int(seen.y) - Int(expected.y)) <= 40 && abs(Int(seen.u) - Int(expected.u)) <= 20
                && abs(Int(seen.v) - Int(expected.v)) <= 20 {
                results.slotChecksPassed += 1
            } else if results.slotFailures.count < 5 {
                results.slotFailures.append(String(format: "at %.1f s the slot of %@ (%@) showed %@, not its colour %@",
                                                   runSeconds, position.participant, "\(point.x),\(point.y)",
                                                   seen.description, expected.description))
            }
            let code = FrameCode.read { u, v in placement.point(u, v).map { picture.pixel(x: $0.x, y: $0.y).y } }
            if let code, let latency = model.pictureLatency(of: sender, frame: code, seenAt: now) {
                results.videoLatencies.append((runSeconds, seconds(latency) * 1000))
            }
        }
    }

    /// The participant's figures at the end (this join's statistics included).
    func closeResults() -> Results {
        collectStatistics()
        receiver = nil
        return results
    }
}

/// Where a point of a source picture lands in its tile of the composite, for the content mode
/// the layout names (computed here independently of the host's compositor, which it checks).
struct TilePlacement {
    let tile: PixelRect
    let source: (width: Int, height: Int)
    let contentMode: ContentMode

    /// The composite pixel showing the source point (`u`, `v`) (fractions); nil if cropped away.
    func point(_ u: Double, _ v: Double) -> (x: Int, y: Int)? {
        guard tile.width > 0, tile.height > 0, source.width > 0, source.height > 0 else { return nil }
        let scaleX = Double(tile.width) / Double(source.width), scaleY = Double(tile.height) / Double(source.height)
        let scale = contentMode == .fill ? max(scaleX, scaleY) : min(scaleX, scaleY)
        let shownWidth = Double(source.width) * scale, shownHeight = Double(source.height) * scale
        let left = Double(tile.x) + (Double(tile.width) - shownWidth) / 2
        let top = Double(tile.y) + (Double(tile.height) - shownHeight) / 2
        let x = Int(left + u * shownWidth), y = Int(top + v * shownHeight)
        guard x >= tile.x, x < tile.x + tile.width, y >= tile.y, y < tile.y + tile.height else { return nil }
        return (x, y)
    }
}
