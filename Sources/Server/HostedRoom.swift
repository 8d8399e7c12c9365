import Compositing
import Conference
import Foundation
import Media
import SDP
import Sockets
import Streams
import Transport
import Wire

/// The shell around one `Room` engine on the media loop: it feeds the room what the
/// participants' transports deliver and the time, and carries out what the room asks: packets
/// to the media port (protected per peer there), pictures to the encoder threads, cameras' and
/// screens' frames to the host's decode workers (their pictures come back into the room on the
/// loop), events to the event streams, ticks to the recordings; then it arms one timer at the
/// room's next timeout.
final class HostedRoom {
    let room: Room
    private let loop: EventLoop
    private let port: MediaPort
    private let events: RoomEventHub
    /// Each participant's peer on the media port, by participant id.
    private var peers: [String: MediaPort.PeerID] = [:]
    /// The sinks that take each participant's transport events.
    private var links: [String: ParticipantLink] = [:]
    /// Each participant's offer and answer as last negotiated (a renegotiation starts from it).
    private var sessions: [String: AcceptedOffer] = [:]
    private let timer: DeadlineTimer
    /// One encoder thread per composite encoding, with the generation it serves.
    private var encoders: [CompositeEncoding.Kind: (generation: Int, worker: VideoEncodeWorker)] = [:]
    /// The host's decode workers, and the room's streams they decode now.
    private let decoders: VideoDecodePool
    private var decodeStreams: Set<VideoDecodeStream> = []
    /// Where the workers put the room's decode results (it holds the room weakly).
    private let inbox = DecodeInbox(nil)
    /// What the encoders did before they stopped, by kind (for metrics: an encoder stops while
    /// nobody receives the composite, and the next starts anew).
    private var retired: [CompositeEncoding.Kind: VideoEncodeWorker.Statistics] = [:]
    /// Recordings in progress, by id.
    private var recordings: [String: (file: String, recorder: TrackRecorder)] = [:]
    /// When a key frame was last asked for a recording that waits for one.
    private var recordingKeyFrameAskedAt: Instant?
    /// How long a recording waits for the key frame it asked before it asks again: longer than
    /// a picture takes to reach the encoder and come back (asked again at every 20 ms tick, the
    /// first one still in the encoder brought a second 100 ms later, to every receiver).
    static let recordingKeyFrameRetry: Duration = .milliseconds(300)
    /// Every recording's start and end, kept after the room closes.
    private let recordingLog: RecordingLog
    /// Called when the last participant left.
    private let onClose: (HostedRoom) -> Void
    private var closed = false
    /// Joins dropped for not connecting within `Room.connectTimeout` (metrics).
    private(set) var expiredJoins = 0
    private let log: HostLog
    /// The viewers' identities, by id: the room publishes no events for them, so their joins and
    /// leaves are logged here.
    private var viewers: [String: String] = [:]

    init(name: String, configuration: RoomConfiguration, port: MediaPort, events: RoomEventHub, recordingLog: RecordingLog,
         decoders: VideoDecodePool, log: HostLog, hostLoad: HostLoadMeter = HostLoadMeter(), onClose: @escaping (HostedRoom) -> Void) {
        self.recordingLog = recordingLog
        self.decoders = decoders
        self.log = log
        let labels: TextLabelRenderer?
        do { labels = try TextLabelRenderer() } catch {
            StartFailures.shared.record("text-renderer", error, log: log, room: name)  // tiles go without names
            labels = nil
        }
        room = Room(name: name, configuration: configuration, labels: labels, wallClock: .reading(port.loop.clock),
                    seed: UInt64.random(in: 0...UInt64.max))
        loop = port.loop
        self.port = port
        self.events = events
        self.onClose = onClose
        timer = DeadlineTimer(loop: port.loop)
        timer.action = { [weak self] now in
            guard let self else { return }
            self.applyDecoded(now: now)
            self.room.setHostLoad(hostLoad.sample(now: now), rooms: hostLoad.roomsOpen)
            self.room.handleTimeout(now: now)
            self.carryOut()
        }
        inbox.room = self
        log.info("roomOpened", room: name)
    }

    /// The encoder threads must not outlive the room, even when the host stops with rooms open,
    /// nor its decoders.
    deinit {
        for (_, encoder) in encoders { encoder.worker.stop() }
        for stream in decodeStreams { decoders.stop(stream) }
    }

    var name: String { room.name }
    var participants: [Participant] { room.participants }

    /// Adds a participant whose offer was answered, and attaches its transport to the port.
    func join(identity: String, name: String?, accepted: AcceptedOffer, transport: PeerTransport, isViewer: Bool) -> Participant {
        let id = UUID().uuidString.lowercased()
        let participant = room.join(id: id, identity: identity, name: name, negotiated: accepted.negotiated, isViewer: isViewer,
                                    seed: UInt64.random(in: 0...UInt64.max), now: loop.clock.now())
        if isViewer {
            viewers[id] = identity
            log.info("viewerJoined", room: self.name, participant: identity, ["id": id, "watches": "room"])
        }
        attach(id, accepted: accepted, transport: transport)
        return participant
    }

    /// Adds a viewer of one participant's camera or screen (`Room.joinAsTrackViewer`).
    func joinAsTrackViewer(accepted: AcceptedOffer, transport: PeerTransport, publisher: String,
                           source: VideoSource) throws(SubscriptionError) -> Participant {
        let id = UUID().uuidString.lowercased()
        let viewer: Participant
        do {
            viewer = try room.joinAsTrackViewer(id: id, negotiated: accepted.negotiated, publisher: publisher, source: source,
                                                seed: UInt64.random(in: 0...UInt64.max), now: loop.clock.now())
        } catch {
            carryOut()
            throw error
        }
        viewers[id] = viewer.identity
        log.info("viewerJoined", room: name, participant: viewer.identity,
                 ["id": id, "watches": "\(room.participant(id: publisher)?.identity ?? publisher)/\(source.rawValue)"])
        attach(id, accepted: accepted, transport: transport)
        return viewer
    }

    private func attach(_ id: String, accepted: AcceptedOffer, transport: PeerTransport) {
        let link = ParticipantLink(id: id, participant: room.participant(id: id), room: self)
        links[id] = link
        sessions[id] = accepted
        peers[id] = port.add(transport, localUfrag: accepted.localICE.ufrag, sink: link)
        carryOut()
    }

    /// `POST …/subscriptions` (`Room.subscribe`).
    func subscribe(_ id: String, to publisher: String, source: VideoSource) throws(SubscriptionError) -> SubscriptionState {
        defer { carryOut() }
        let state = try room.subscribe(id, to: publisher, source: source, now: loop.clock.now())
        log.debug("subscribed", room: name, participant: room.participant(id: id)?.identity,
                  ["id": id, "track": "\(state.participant)/\(state.source.rawValue)", "mid": state.mid, "count": "\(state.count)"])
        return state
    }

    /// `DELETE …/subscriptions/{publisher}/{source}` (`Room.unsubscribe`).
    func unsubscribe(_ id: String, from publisher: String, source: VideoSource, all: Bool) throws(SubscriptionError) -> Int {
        defer { carryOut() }
        let count = try room.unsubscribe(id, from: publisher, source: source, all: all)
        log.debug("unsubscribed", room: name, participant: room.participant(id: id)?.identity,
                  ["id": id, "track": "\(room.participant(id: publisher)?.identity ?? publisher)/\(source.rawValue)", "count": "\(count)"])
        return count
    }

    /// Removes a participant (DELETE, or its transport failed); idempotent.
    func leave(_ id: String, reason: String = "left") {
        guard detach(id, reason: reason) else { return }
        room.leave(id, reason: reason, now: loop.clock.now())
        carryOut()
        if room.isEmpty { close() }
    }

    /// Closes a participant's transport and forgets it; false when it was not here. A viewer's
    /// leaving is logged here with `reason` (a participant's, from the room's `left` event).
    private func detach(_ id: String, reason: String) -> Bool {
        guard let peer = peers.removeValue(forKey: id) else { return false }
        links[id] = nil
        sessions[id] = nil
        port.remove(peer)
        if let identity = viewers.removeValue(forKey: id) {
            log.info("viewerLeft", room: name, participant: identity, ["id": id, "reason": reason])
        }
        return true
    }

    /// The room closed (its last participant left) or the host stops: recordings finish, the
    /// encoder threads and the timer stop.
    func close() {
        guard !closed else { return }
        closed = true
        stopAllRecordings(reason: "room closed")
        room.close()
        carryOut()
        timer.cancel()
        log.info("roomClosed", room: name)
        onClose(self)
    }

    /// The participant's session as last negotiated.
    func session(_ id: String) -> AcceptedOffer? { sessions[id] }

    /// Takes a renegotiation's answer: the room follows its m-lines (`Room.renegotiate`); on new
    /// ICE credentials its transport restarts ICE and the port knows it by its new ufrag. False
    /// when the participant is gone or renegotiated meanwhile from another session than `previous`.
    func renegotiated(_ id: String, from previous: AcceptedOffer, to accepted: AcceptedOffer) -> Bool {
        guard let peer = peers[id], sessions[id]?.negotiated.answer == previous.negotiated.answer,
              let transport = port.transport(peer) else { return false }
        sessions[id] = accepted
        defer { carryOut() }
        let identity = room.participant(id: id)?.identity
        let mediaChanged = accepted.negotiated.media != previous.negotiated.media
        log.debug("renegotiated", room: name, participant: identity,
                  ["id": id, "sections": "\(accepted.negotiated.media.count)", "mediaChanged": "\(mediaChanged)"])
        if mediaChanged {
            room.renegotiate(id, negotiated: accepted.negotiated, now: loop.clock.now())
        }
        if accepted.restartsICE(from: previous) {
            log.debug("iceRestart", room: name, participant: identity, ["id": id])
            transport.restartICE(local: accepted.localICE, remote: accepted.remoteICE, now: loop.clock.now())
            port.changeUfrag(of: peer, to: accepted.localICE.ufrag)
        }
        return true
    }

    /// `PATCH {"hear": …, "muted": …}` (`Room.patch`).
    func patch(_ id: String, hear: [String: Bool], audioMuted: Bool?, videoMuted: Bool?) -> Participant? {
        defer { carryOut() }
        return room.patch(id, hear: hear, audioMuted: audioMuted, videoMuted: videoMuted)
    }

    /// `PUT …/placeholder` (`Room.setPlaceholder`).
    func setPlaceholder(_ id: String, picture: I420Frame?) -> Bool {
        defer { carryOut() }
        return room.setPlaceholder(id, picture: picture)
    }

    /// `PUT …/layout` (`Room.setLayout`).
    func setLayout(_ layout: LayoutRequest) throws(JSONDocumentError) -> TemplateDescription {
        defer { carryOut() }
        return try room.setLayout(layout)
    }

    /// A participant's transport said something.
    fileprivate func transport(_ id: String, _ participant: Participant?, didEmit event: PeerTransport.Event) {
        let now = loop.clock.now()
        applyDecoded(now: now)
        switch event {
        case .iceConnected(let address):
            log.debug("iceConnected", room: name, participant: room.participant(id: id)?.identity, ["id": id, "address": address.description])
            room.connected(id)
        case .secure:
            log.debug("secure", room: name, participant: room.participant(id: id)?.identity, ["id": id])
            room.secure(id, now: now)
        case .rtp(let bytes):
            if let participant { room.receiveRTP(bytes, from: participant, now: now) } else { room.receiveRTP(bytes, from: id, now: now) }
        case .rtcp(let bytes): room.receiveRTCP(bytes, from: id, now: now)
        case .failed(let failure):
            leave(id, reason: failure == .consentLost ? "consent lost" : "transport failed")
            return
        }
        carryOut()
    }

    /// Does what the room asked, then arms the timer for its next timeout.
    private func carryOut() {
        var sent = false
        while let output = room.pollOutput() {
            // Consumed, so that a packet's bytes have one owner and SRTP protects them in place.
            switch consume output {
            case .sendRTP(let id, let bytes):
                if let peer = peers[id] { sent = port.sendRTP(bytes, to: peer) || sent }
            case .sendRTCP(let id, let bytes):
                if let peer = peers[id] { sent = port.sendRTCP(bytes, to: peer) || sent }
            case .encode(let request):
                encoder(for: request).submit(.init(picture: request.picture, keyFrame: request.keyFrame, cpuUsed: request.configuration.cpuUsed,
                                                           profile: request.configuration.profile))
            case .stopEncoder(let kind):
                stopEncoder(kind)
            case .decode(let request):
                decodeStreams.insert(request.stream)
                decoders.decode(request, into: inbox)
            case .stopDecoder(let stream):
                if decodeStreams.remove(stream) != nil { decoders.stop(stream) }
            case .event(let event):
                events.publish(event)
            case .recordingTick(let deadline):
                for (id, recording) in recordings {
                    recording.recorder.tick(now: deadline)
                    if !recording.recorder.isRecording { recordingFailed(id) }
                }
                // The key frame asked at the start may have gone to a picture the encoder dropped.
                if recordings.values.contains(where: \.recorder.waitsForKeyFrame),
                   recordingKeyFrameAskedAt.map({ deadline - $0 >= Self.recordingKeyFrameRetry }) ?? true {
                    recordingKeyFrameAskedAt = deadline
                    room.requestRecordingKeyFrame()
                }
            case .recordVideo(let frame):
                for recording in recordings.values { recording.recorder.recordEncodedVideo(frame) }
            case .expired(let id):
                _ = detach(id, reason: "never connected")
                expiredJoins += 1
            case .closed(let id):
                // Its last packets (the BYE) leave before its transport goes.
                if sent { port.flush() }
                sent = false
                _ = detach(id, reason: "track ended")
            }
        }
        if sent { port.flush() }
        for failure in room.takeStartFailures() { StartFailures.shared.record(failure.component, failure.error, log: log, room: name) }
        if let next = room.nextTimeout { timer.arm(at: next) } else { timer.cancel() }
        if room.isEmpty, peers.isEmpty, !closed { close() }
    }

    /// The decode workers' results waiting in the inbox go into the room, each stream's in
    /// order: before every input (so that a frame whose picture is in does not count as out to
    /// its worker), and when a worker wakes the loop (`takeDecoded`).
    private func applyDecoded(now: Instant) {
        guard inbox.hasResults else { return }
        for (stream, result) in inbox.take() { room.pictureDecoded(result, of: stream, now: now) }
    }

    /// A worker put results into an empty inbox: the room takes them, and what they asked for
    /// (PLIs) is carried out.
    func takeDecoded() {
        guard inbox.hasResults else { return }
        applyDecoded(now: loop.clock.now())
        carryOut()
    }

    // MARK: Encoders

    /// The encoder thread of the request's kind and generation, started when missing (an older
    /// generation's thread is stopped). Its frames come back on the loop, tagged with the
    /// generation, so a stopped encoder's late frames go nowhere.
    private func encoder(for request: CompositeEncodeRequest) -> VideoEncodeWorker {
        if let running = encoders[request.kind], running.generation == request.generation { return running.worker }
        stopEncoder(request.kind)
        let kind = request.kind, generation = request.generation
        let target = WeakHostedRoom(self)
        let loop = self.loop
        let worker = VideoEncodeWorker(name: "vp8-\(kind.rawValue)", configuration: request.configuration,
                                       scaledTo: request.scaledTo, log: log, room: name) { delivery, _ in
            loop.execute {
                guard let hosted = target.room else { return }
                hosted.room.encoded(delivery.frames, kind: kind, generation: generation, encodeTime: delivery.encodeTime, now: loop.clock.now())
                hosted.carryOut()
            }
        }
        encoders[kind] = (generation, worker)
        return worker
    }

    private func stopEncoder(_ kind: CompositeEncoding.Kind) {
        guard let running = encoders.removeValue(forKey: kind) else { return }
        running.worker.stop()
        retired[kind] = (retired[kind] ?? .init()).adding(running.worker.statistics)
    }

    /// The main encoders' counters in this room (those stopped and the one running); nil before
    /// one was started.
    var encodeStatistics: VideoEncodeWorker.Statistics? {
        let running = encoders[.main]?.worker.statistics
        guard let past = retired[.main] else { return running }
        return running.map { past.adding($0) } ?? past
    }
    /// Frames the encoding of `kind` encoded in this room.
    func framesEncoded(_ kind: CompositeEncoding.Kind) -> Int {
        (retired[kind]?.framesEncoded ?? 0) + (encoders[kind]?.worker.statistics.framesEncoded ?? 0)
    }
    /// Whether an encoder thread of `kind` runs now.
    func encoderRunning(_ kind: CompositeEncoding.Kind) -> Bool { encoders[kind] != nil }

    // MARK: Recordings

    /// Starts recording the room's composite and whole mix into `path`; returns the wall-clock
    /// time the file's time zero stands for. The video is the main encoding's frames as they are
    /// sent (no second encode); the mix is encoded for the file.
    func startRecording(id: String, file: String, path: String) throws(RecordingError) -> Date {
        let track = room.startRoomMix()  // asks the main encoding for a key frame
        recordingKeyFrameAskedAt = loop.clock.now()
        let canvas = room.compositor.canvasSize
        let recorder = TrackRecorder(encodedVideo: .init(width: canvas.width, height: canvas.height, framesPerSecond: room.compositor.fps),
                                     audioTrack: track)
        let start = loop.clock.now()
        do { try recorder.startRecording(fileName: path, now: start) } catch {
            StartFailures.shared.record("recorder", error, log: log, room: name)  // the caller answers the request with the reason
            log.warning("recordingFailed", room: name, ["id": id, "file": file, "reason": error.description])
            if recordings.isEmpty { room.stopRoomMix() }
            throw error
        }
        recordings[id] = (file, recorder)
        let ntp = room.wallClock.ntp(at: start)
        let began = Date(timeIntervalSince1970: ntp.seconds - Double(NTPTimestamp.unixEpochOffsetSeconds))
        recordingLog.started(id: id, room: name, file: file, path: path, at: began)
        log.info("recordingStarted", room: name, ["id": id, "file": file, "path": path])
        return began
    }

    /// The recordings in progress: id and file, by id.
    var recordingsInProgress: [(id: String, file: String)] {
        recordings.map { ($0.key, $0.value.file) }.sorted { $0.id < $1.id }
    }

    /// Finishes a recording: the file is complete and playable when this returns; nil when
    /// there is no such recording. `reason` is logged: `stopped` (by the API), `room closed`,
    /// `host stopping`.
    func stopRecording(id: String, reason: String = "stopped") throws(RecordingError) -> String? {
        guard let recording = recordings.removeValue(forKey: id) else { return nil }
        if recordings.isEmpty { room.stopRoomMix() }
        do { try recording.recorder.stop() } catch {
            recordingLog.ended(id: id, at: Date(), failure: error.description)
            log.warning("recordingFailed", room: name, ["id": id, "file": recording.file, "reason": error.description])
            throw error
        }
        recordingLog.ended(id: id, at: Date())
        log.info("recordingStopped", room: name, ["id": id, "file": recording.file, "reason": reason])
        return recording.file
    }

    /// A recording whose file could not be written (a full disk) ended by itself: it is let go
    /// with `recordingStopped` and the reason; the room goes on.
    private func recordingFailed(_ id: String) {
        guard let recording = recordings.removeValue(forKey: id) else { return }
        if recordings.isEmpty { room.stopRoomMix() }
        let why = recording.recorder.errors.first.map(\.description) ?? "the file could not be written"
        recordingLog.ended(id: id, at: Date(), failure: why)
        log.warning("recordingFailed", room: name, ["id": id, "file": recording.file, "reason": why])
        events.publish(RoomEvent(.recordingStopped, room: name, reason: "\(recording.file): \(why)"))
    }

    /// Finishes every recording (the room closed, or the host is stopping).
    func stopAllRecordings(reason: String) {
        for id in recordings.keys { _ = try? stopRecording(id: id, reason: reason) }
    }
}

/// Takes one participant's transport events from the media port to its room.
private final class ParticipantLink: PeerEventSink {
    let id: String
    /// The room's participant, so that a packet needs no lookup by id. Strong (the link goes when
    /// the participant leaves): a weak reference would give every Participant a side table, and
    /// each of its retains, many per packet and per tick, the runtime's slow path.
    let participant: Participant?
    weak var room: HostedRoom?
    init(id: String, participant: Participant?, room: HostedRoom) {
        self.id = id
        self.participant = participant
        self.room = room
    }
    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        room?.transport(id, participant, didEmit: event)
    }
}

/// The room as an encoder thread's callback holds it: weakly (the room holds the thread).
private final class WeakHostedRoom: @unchecked Sendable {
    weak var room: HostedRoom?
    init(_ room: HostedRoom) { self.room = room }
}
