import Compositing
import Media
import RTP
import SDP
import Streams
import Wire

/// A conference room as an engine in the str0m sense: joins, leaves, choices, layouts, each
/// participant's decrypted RTP and RTCP, and the encoders' frames go in with the current time;
/// what comes out (`pollOutput`) is what to send to whom, what to encode, and what to publish;
/// `nextTimeout` says when to call `handleTimeout`. No socket, no clock read (work is timed for
/// metrics only), no thread: the shell carries out the outputs.
///
/// Audio: every 20 ms each participant's microphone gives one frame and each listener gets one
/// Opus packet of everyone sounding but itself (`RoomAudioMixer`: encode once per distinct mix).
/// Video: every 1/fps the layout (a preset, recomputed on joins, leaves and the active speaker,
/// or a template kept as given) is drawn by one `VideoCompositor` and the picture goes to the
/// encoder of each encoding someone needs; each encoded frame is packetized once and re-headered
/// per receiver. Key frame requests (a new receiver, PLI or FIR) are paced per encoding.
/// Cameras and screens are decoded by the shell: the room assembles their frames and hands them
/// out (`RoomOutput.decode`, at most `ParticipantInbound.decodeQueueDepth` of a stream at once),
/// and takes the pictures back (`pictureDecoded`).
/// Receivers whose feedback says their bandwidth is short get a lower or a small encoding (or no
/// video, under 60 kbit/s) and switch at its key frame (`CompositeEncodingChooser`).
///
/// Every mutation must be followed by draining `pollOutput()`.
public final class Room {
    public let name: String
    public let configuration: RoomConfiguration
    /// In joining order: the order presets place people in.
    public private(set) var participants: [Participant] = []
    public let compositor: VideoCompositor
    public private(set) var layout: LayoutRequest = .preset(.grid)
    /// Per-guest mixes, keyed by participant id.
    public let mixer: RoomAudioMixer<Participant>
    /// Keyed by `Participant.serial`: every member's level goes in every audio tick.
    private var speakerDetector = ActiveSpeakerDetector<Int>()
    private var audioTicks = TickSchedule(maximumLateness: Room.audioMaximumLateness)
    private var videoTicks = TickSchedule(maximumLateness: Room.videoMaximumLateness)
    private let main: CompositeEncoding
    /// Whether the main encoder runs (it stops while nobody receives the composite).
    private var mainRunning = false
    /// The composite encoders' speed, from their encode times and the host's load.
    public private(set) var encoderSpeed: CompositeEncoderSpeed
    /// The canvas the config or the template asks; the compositor draws `encoderSpeed`'s
    /// `drawnCanvas` of it.
    private var templateCanvas: VideoSize
    /// The lower and small encodings, while some receiver needs them.
    private var scaled: [CompositeEncoding.Kind: CompositeEncoding] = [:]
    private var generations = 0
    /// RTP timestamps of both encodings count 90 kHz from this capture time, so a receiver
    /// switched between them sees one continuous clock.
    private var timestampEpoch: Instant?
    private let timestampOffset: UInt32
    private var outputs = FIFOQueue<RoomOutput>()
    /// The whole room's mix, while a recording takes it.
    public private(set) var mixTrack: AudioTrack?

    /// The audio tick.
    public static let audioInterval: Duration = .milliseconds(20)
    /// A join not secure (ICE and DTLS done) this long after its answer is dropped, and frees
    /// what it held: a peer that never connects, or a flood of joins that never will, cannot
    /// hold a place in the room. Browsers connect in well under a second on a LAN and in a few
    /// over relays.
    public static let connectTimeout: Duration = .seconds(20)
    /// Beyond this a late audio tick does not catch up (a burst of frames): the grid restarts.
    public static let audioMaximumLateness: Duration = .milliseconds(100)
    public static let videoMaximumLateness: Duration = .milliseconds(200)
    /// A position's colour while its participant sends no picture.
    public static let placeholderColor = YUVColor(y: 48, u: 128, v: 128)

    /// Counters for metrics.
    public private(set) var framesComposed = 0
    public private(set) var composeTime = Duration.zero
    public private(set) var framesSent = 0
    /// Ticks that came over their lateness bound and restarted their grid.
    public var audioScheduleResets: Int { audioTicks.resets }
    public var videoScheduleResets: Int { videoTicks.resets }

    /// Maps the shell's instants to NTP wall-clock time: the sender reports' NTP↔RTP mapping.
    public let wallClock: NTPClockMapping

    /// `labels` draws names on tiles (nil: none, when the fonts could not be loaded); `wallClock`
    /// is read by the shell once (engines read no clock).
    public init(name: String, configuration: RoomConfiguration, labels: TextLabelRenderer?, wallClock: NTPClockMapping, seed: UInt64) {
        self.name = name
        self.wallClock = wallClock
        self.configuration = configuration
        var generator = SplitMix64(seed: seed)
        timestampOffset = .random(in: 0...UInt32.max, using: &generator)
        mixer = RoomAudioMixer(configuration: .init(returnsOwnVoice: configuration.returnsOwnVoice, maxVoices: configuration.maxVoices))
        templateCanvas = VideoSize(width: configuration.width, height: configuration.height)
        compositor = VideoCompositor(id: name, canvasSize: templateCanvas, fps: configuration.fps)
        compositor.labelRenderer = labels
        compositor.start()
        main = CompositeEncoding(kind: .main, size: nil, bitrate: configuration.bitrate, generation: 0)
        encoderSpeed = CompositeEncoderSpeed(width: configuration.width, height: configuration.height, fps: configuration.fps)
        followEncoderStep()
    }

    /// Starts the composite at `step` of `CompositeEncoderSpeed.steps` when that is cheaper than
    /// its canvas's (the step the host's other rooms run at); before the first tick.
    public func startEncoderSpeed(atLeast step: Int) {
        encoderSpeed.startAt(atLeast: step)
        followEncoderStep()
    }

    /// The share of the machine's cores the host's process uses (nil: not known) and how many
    /// rooms it holds, for the encoders' speed (`CompositeEncoderSpeed`); the shell gives them
    /// about once a second.
    public func setHostLoad(_ load: Double?, rooms: Int = 1) {
        encoderSpeed.setHostLoad(load, rooms: rooms)
    }

    // MARK: Outputs

    /// The next thing to do, or nil when there is none.
    public func pollOutput() -> RoomOutput? { outputs.popFirst() }

    /// When `handleTimeout` next has work: the next audio or video tick, or RTCP due.
    public var nextTimeout: Instant? {
        var next = audioTicks.next
        if let video = videoTicks.next, video < (next ?? video + .seconds(1)) { next = video }
        if let rtcp = rtcpSchedule.peek(), rtcp < (next ?? rtcp + .seconds(1)) { next = rtcp }
        if let connect = soonestConnectDeadline, connect < (next ?? connect + .seconds(1)) { next = connect }
        return next
    }

    /// When participants' RTCP is due, by serial: an entry at or before each one's `rtcpDue`
    /// (`Participant.rtcpQueued`); entries of those who left, or superseded by an earlier one,
    /// are skipped when they come up. A timeout takes only those due, not a walk over a room of
    /// hundreds whose deadlines fall at every tick.
    private var rtcpSchedule = DeadlineHeap<Int>()
    /// Reused by each timeout for the participants whose RTCP came due.
    private var rtcpDueNow: [Participant] = []
    /// No later than the earliest join's connect deadline (kept as joins come, recomputed when
    /// it passes), for the same reason.
    private var soonestConnectDeadline: Instant?

    public var isEmpty: Bool { participants.isEmpty }

    public func participant(id: String) -> Participant? { byID[id] }
    /// The participants by id, for the per-packet lookup.
    private var byID: [String: Participant] = [:]
    /// The participants by serial, and the serial the next one takes.
    private var bySerial: [Int: Participant] = [:]
    private var joins = 0
    /// The participants a video tick visits, in joining order: those receiving a camera or a
    /// screen or sent the composite, or with video work left (kept at joins, leaves and
    /// renegotiations, the only changes that add video). An audio room of hundreds has none:
    /// walking every member 30 times a second cost a cache miss or two a member.
    private var videoMembers: [Participant] = []
    private func refreshVideoMembers() {
        videoMembers = participants.filter { $0.inbound.needsVideoTick || $0.outbound.receivesVideo || !$0.rendering.isEmpty }
    }
    public func participant(identity: String) -> Participant? { participants.first { $0.identity == identity } }

    // MARK: Joins and leaves

    /// Adds a participant (or a viewer) whose offer was answered with `negotiated`. Its
    /// transport is not up yet: nothing is sent it before `secure`.
    @discardableResult
    public func join(id: String, identity: String, name: String?, negotiated: NegotiatedSession, isViewer: Bool = false,
                     forwardsOnly: Bool = false, seed: UInt64, now: Instant) -> Participant {
        joins += 1
        let participant = Participant(id: id, serial: joins, identity: identity, name: name, isViewer: isViewer, forwardsOnly: forwardsOnly,
                                      negotiated: negotiated, seed: seed, wallClock: wallClock, configuration: configuration, now: now)
        participant.connectDeadline = now + Self.connectTimeout
        soonestConnectDeadline = min(soonestConnectDeadline ?? now + Self.connectTimeout, now + Self.connectTimeout)
        participants.append(participant)
        byID[id] = participant
        bySerial[participant.serial] = participant
        refreshVideoMembers()
        for (component, error) in participant.inbound.startFailures { startFailures.append((component, error)) }
        mixer.add(participant, receiver: participant.inbound.audioReceiver, listens: participant.outbound.receivesAudio)
        refreshHearing()
        switch layout {
        case .preset: applyLayout(publish: true)
        case .custom(let description) where !isViewer && description.positions.contains(where: { $0.participant == identity }):
            applyLayout(publish: false)  // one who left and joins again takes its positions back
        case .custom: refreshCameraCaps()  // not in the template: its camera gets the least
        }
        if !isViewer { emit(.event(RoomEvent(.joined, room: self.name, participant: id, identity: identity))) }
        audioTicks.start(now: now, interval: Self.audioInterval)
        videoTicks.start(now: now, interval: compositor.tickInterval)
        return participant
    }

    /// Takes a participant's renegotiated session (`PATCH` with an SDP offer): m-lines it added
    /// are received and sent on, m-lines it stopped end their tracks (`trackEnded`, reason
    /// "m-line stopped"); its mix, composite and tile follow.
    public func renegotiate(_ id: String, negotiated: NegotiatedSession, now: Instant) {
        guard let participant = participant(id: id) else { return }
        let camera = participant.inbound.cameraTrack
        let failuresKnown = participant.inbound.startFailures.count
        let wasSending = VideoSource.allCases.filter { participant.inbound.sends($0) }
        let changes = participant.inbound.renegotiate(negotiated)
        emitDecoding(participant)
        for source in changes.ended {
            emit(.event(RoomEvent(.trackEnded, room: name, participant: id, identity: participant.identity, source: source,
                                  reason: "m-line stopped")))
        }
        if let paused = changes.cameraPaused {
            // A camera turned off (or on) by its m-line's direction: muted as by PATCH.
            cameraMutedByMedia(participant, paused, reason: paused ? "m-line not sending" : "m-line sending")
            if !paused { restartForwarding(of: TrackReference(participant: id, source: .camera)) }
        }
        startFailures += participant.inbound.startFailures.dropFirst(failuresKnown)
        participant.outbound.renegotiate(negotiated, now: now)
        reindexForwarding()
        // A camera or screen whose m-line stopped (or stopped sending) ends its subscriptions.
        for source in wasSending where !participant.inbound.sends(source) || (source == .camera && participant.inbound.cameraTrack !== camera) {
            endForwarding(of: TrackReference(participant: id, source: source), now: now)
        }
        mixer.add(participant, receiver: participant.inbound.audioReceiver, listens: participant.outbound.receivesAudio)
        refreshHearing()
        if participant.inbound.cameraTrack !== camera {
            participant.refreshCameraMute()
            applyLayout(publish: false)
        }
        refreshVideoMembers()
        serviceRTCP(participant, now: now)
    }

    /// ICE checks arrived.
    public func connected(_ id: String) {
        guard let participant = participant(id: id), participant.state == .connecting else { return }
        participant.state = .connected
    }

    /// The transport is secure: media may flow. A receiver of the composite needs a key frame,
    /// and gets one at the next tick (at most one such per `newReceiverKeyFrameGap`).
    public func secure(_ id: String, now: Instant) {
        guard let participant = participant(id: id), participant.state != .left else { return }
        participant.state = .secure
        participant.connectDeadline = nil
        if participant.outbound.receivesVideo { main.keyFrameSoon = true }
        serviceRTCP(participant, now: now)
    }

    /// Removes a participant: its tracks end (`trackEnded`), `left` with `reason`; presets close
    /// its gap and a template shows its placeholder. The last one leaving stops the ticks.
    public func leave(_ id: String, reason: String = "left", now: Instant) {
        guard let index = participants.firstIndex(where: { $0.id == id }) else { return }
        let participant = participants.remove(at: index)
        byID[id] = nil
        bySerial[participant.serial] = nil
        refreshVideoMembers()
        participant.state = .left
        participant.inbound.end()
        emitDecoding(participant)
        for source in participant.inbound.publishedSources {
            emit(.event(RoomEvent(.trackEnded, room: name, participant: id, identity: participant.identity, source: source)))
        }
        if !participant.isViewer {
            emit(.event(RoomEvent(.left, room: name, participant: id, identity: participant.identity, reason: reason)))
        }
        mixer.remove(participant)
        refreshHearing()
        speakerDetector.remove(participant: participant.serial)
        reindexForwarding()
        for source in VideoSource.allCases { endForwarding(of: TrackReference(participant: id, source: source), now: now) }
        if case .preset = layout { applyLayout(publish: true) }
        if participants.isEmpty { close() }
    }

    /// Stops the ticks and the encoders (the last participant left, or the host stops).
    public func close() {
        audioTicks.stop()
        videoTicks.stop()
        rtcpSchedule.removeAll()
        for participant in participants { participant.rtcpQueued = nil }
        soonestConnectDeadline = nil
        emit(.stopEncoder(.main))
        mainRunning = false
        for kind in scaled.keys { emit(.stopEncoder(kind)) }
        scaled = [:]
        for participant in participants {
            participant.inbound.stopDecoders()
            emitDecoding(participant)
        }
    }

    /// Whether any composite encoder runs now (none while nobody receives the composite and
    /// nothing records it).
    public var encodersRunning: Bool { mainRunning || !scaled.isEmpty }

    /// Nobody receives the composite and nothing records it: its encoders stop. The main
    /// encoding's next picture starts a new encoder, whose first frame is a key frame.
    private func stopEncoders() {
        if mainRunning {
            emit(.stopEncoder(.main))
            mainRunning = false
            generations += 1
            main.generation = generations
        }
        stopScaledEncoders()
    }

    /// Stops the lower and small encodings (nobody receives them).
    private func stopScaledEncoders() {
        for kind in scaled.keys { emit(.stopEncoder(kind)) }
        scaled = [:]
    }

    // MARK: Choices

    /// `PATCH {"hear": …, "muted": …}`: `hear` changes only this participant's mix (by
    /// identity); `muted.audio` takes its voice out of every mix, `muted.video` shows its
    /// placeholder. Each change of `muted` publishes `trackMuted` or `trackUnmuted`.
    @discardableResult
    public func patch(_ id: String, hear: [String: Bool] = [:], audioMuted: Bool? = nil, videoMuted: Bool? = nil) -> Participant? {
        guard let participant = participant(id: id) else { return nil }
        for (identity, hears) in hear where identity != participant.identity {
            if hears { participant.notHeard.remove(identity) } else { participant.notHeard.insert(identity) }
        }
        for (source, muted, current) in [("microphone", audioMuted, participant.audioMuted), ("camera", videoMuted, participant.videoMuted)] {
            guard let muted, muted != current else { continue }
            if source == "microphone" {
                participant.audioMuted = muted
            } else {
                participant.videoMuted = muted
                participant.refreshCameraMute()  // its tile shows the placeholder
                // Its subscribers get nothing while muted, and start again at a key frame.
                if !muted { restartForwarding(of: TrackReference(participant: id, source: .camera)) }
            }
            emit(.event(RoomEvent(muted ? .trackMuted : .trackUnmuted, room: name, participant: id, identity: participant.identity,
                                  source: source)))
        }
        refreshHearing()
        return participant
    }

    /// The media muted or unmuted a participant's camera (not PATCH): its tile follows, and
    /// `trackMuted` or `trackUnmuted` says why.
    private func cameraMutedByMedia(_ participant: Participant, _ muted: Bool, reason: String) {
        participant.refreshCameraMute()
        emit(.event(RoomEvent(muted ? .trackMuted : .trackUnmuted, room: name, participant: participant.id, identity: participant.identity,
                              source: "camera", reason: reason)))
    }

    /// Shows `picture` in place of the participant's camera while it is muted, ended or stalled
    /// (placed like the camera: fit or fill); nil goes back to the placeholder colour. A picture
    /// larger than the canvas is scaled down to fit it once here, not at every tick.
    @discardableResult
    public func setPlaceholder(_ id: String, picture: I420Frame?) -> Bool {
        guard let participant = participant(id: id), !participant.isViewer else { return false }
        let canvas = compositor.canvasSize
        participant.placeholderPicture = picture.map { picture in
            guard picture.width > canvas.width || picture.height > canvas.height else { return picture }
            let scale = min(Double(canvas.width) / Double(picture.width), Double(canvas.height) / Double(picture.height))
            return picture.scaled(width: max(2, Int(Double(picture.width) * scale)), height: max(2, Int(Double(picture.height) * scale)))
        }
        applyLayout(publish: false)
        return true
    }

    /// Tells the mixer whom each participant does not hear and whose voice is muted.
    private func refreshHearing() {
        let byIdentity = Dictionary(participants.map { ($0.identity, $0) }, uniquingKeysWith: { first, _ in first })
        for participant in participants {
            mixer.setNotHeard(Set(participant.notHeard.compactMap { byIdentity[$0] }), by: participant)
            mixer.setMuted(participant, participant.audioMuted)
        }
    }

    // MARK: Layout

    /// The identities present (not viewers), in joining order.
    public var identities: [String] { participants.filter { !$0.isViewer }.map(\.identity) }

    /// Uses `layout` from the next picture on, and publishes `layoutChanged`. A template must
    /// name only participants present.
    @discardableResult
    public func setLayout(_ layout: LayoutRequest) throws(JSONDocumentError) -> TemplateDescription {
        if case .custom(let description) = layout {
            let present = Set(identities)
            for (index, position) in description.positions.enumerated() where !present.contains(position.participant) {
                throw JSONDocumentError(field: "positions[\(index)].participant", reason: "\(position.participant) is not in room \(name)")
            }
        }
        self.layout = layout
        switch layout {
        case .custom(let description):
            templateCanvas = description.canvas.size
            compositor.fps = description.canvas.fps
            compositor.background = description.canvas.backgroundColor ?? .black
        case .preset:
            templateCanvas = VideoSize(width: configuration.width, height: configuration.height)
            compositor.fps = configuration.fps
            compositor.background = YUVColor(hex: TemplateDescription.Canvas.defaultBackground) ?? .black
        }
        compositor.canvasSize = encoderSpeed.drawnCanvas(templateCanvas)
        applyLayout(publish: true)
        return currentDescription
    }

    /// The template in use, in the contract's format: a custom one as given, a preset as the
    /// positions it gives now (on the canvas asked, whatever the encoder step draws).
    public var currentDescription: TemplateDescription {
        let canvas = TemplateDescription.Canvas(width: templateCanvas.width, height: templateCanvas.height,
                                                fps: compositor.fps, background: TemplateDescription.Canvas.defaultBackground)
        return layout.template(participants: identities, activeSpeaker: activeSpeaker, screenSharer: screenSharer, canvas: canvas)
    }

    /// Takes the encoder step's mix complexity (at most the configured one), and draws the
    /// canvas it calls for: a changed size re-sizes every tile (and the simulcast layers the
    /// cameras' tiles want) and restarts the main encoder at a key frame.
    private func followEncoderStep() {
        mixer.setComplexity(min(mixer.configuration.encoder.complexity, encoderSpeed.setting.mixComplexity))
        let drawn = encoderSpeed.drawnCanvas(templateCanvas)
        guard drawn != compositor.canvasSize else { return }
        compositor.canvasSize = drawn
        applyLayout(publish: false)
    }

    /// The active speaker's identity; nil until someone has spoken.
    public var activeSpeaker: String? { speakerDetector.current.flatMap { bySerial[$0]?.identity } }
    /// Whose screen share the presets put in the main tile; nil while nobody shares.
    public private(set) var screenSharer: String?

    /// Resolves the current description to tracks and gives it to the compositor.
    private func applyLayout(publish: Bool) {
        let description = currentDescription
        // The first guest of each identity, looked up once per position (a room of hundreds).
        var guests: [String: Participant] = [:]
        for participant in participants where !participant.isViewer && guests[participant.identity] == nil { guests[participant.identity] = participant }
        let positions = description.positions.enumerated().map { index, position -> VideoTrackPositionInfo in
            let shownParticipant = configuration.camerasInWrongSlots
                ? description.positions[(index + 1) % description.positions.count].participant : position.participant
            let participant = guests[shownParticipant]
            // One who is not here is a stand-in track freed at once: the position shows its
            // placeholder (as it does for a screen not shared: a track with no pictures).
            let track = position.source == .camera ? participant?.inbound.cameraTrack : participant?.inbound.screenTrack
            let shown = track ?? VideoTrack(id: "\(position.participant)/\(position.source.rawValue)")
            return VideoTrackPositionInfo(track: shown, normalizedRect: position.rect, contentMode: position.contentMode,
                                          mirror: position.mirror ?? false, rotation: position.videoRotation,
                                          placeholder: position.source == .camera
                                              ? participant?.placeholderPicture.map(TilePlaceholder.picture) ?? .color(Self.placeholderColor)
                                              : .color(Self.placeholderColor),
                                          label: participant.map { $0.name ?? $0.identity } ?? position.participant,
                                          debugOverlay: description.showsDebugOverlay(position))
        }
        compositor.setTemplate(CompositeTemplate(positions: positions))
        if publish { emit(.event(RoomEvent(.layoutChanged, room: name))) }
        refreshCameraCaps(layout: description)
    }

    // MARK: Camera caps

    /// Sizes each camera's bitrate cap (REMB) to its largest tile (`CameraBitrateRule`).
    public var cameraBitrateRule = CameraBitrateRule()

    /// Gives each camera its cap from the layout, the speaker and the subscriptions; a changed
    /// cap goes out at once (the next RTCP service, due now). Called when any of them changes.
    func refreshCameraCaps(layout: TemplateDescription? = nil) {
        let senders = participants.filter { !$0.isViewer && $0.inbound.sends(.camera) }
        let forwarded = Set(forwarding.keys.filter { $0.source == .camera && forwarding[$0]?.isEmpty == false }.map(\.participant))
        // Tiles as drawn: on the half canvas of a loaded host, each a quarter of the pixels.
        var drawn = layout ?? currentDescription
        drawn.canvas.width = compositor.canvasSize.width
        drawn.canvas.height = compositor.canvasSize.height
        // The host has no estimate of its own of a camera's path (the sender estimates it from
        // transport-cc feedback), so none bounds the caps.
        let caps = cameraBitrateRule.caps(cameras: senders.map { ($0.id, $0.identity) }, layout: drawn,
                                          speaker: activeSpeaker, forwarded: forwarded)
        let tiles = CameraBitrateRule.largestCameraTiles(in: drawn)
        var shown: Set<String> = []
        for participant in senders {
            // A simulcast camera's layer: its largest tile's width; a subscribed camera's
            // subscribers get what is decoded, so the largest layer. Only the first guest of
            // an identity is drawn (`applyLayout`).
            let width = shown.insert(participant.identity).inserted ? tiles[participant.identity]?.width : nil
            participant.inbound.setCameraWantedWidth(forwarded.contains(participant.id) ? Int.max : width)
        }
        for participant in participants {
            // A browser takes a REMB as the ceiling of its whole transport, whatever SSRCs it
            // names: one sharing a screen too is left the screen's room beside its camera's cap.
            // A simulcast camera sends its lower layers too, below the one its tile wants:
            // about half as much again (Chrome gives a 640x360 layer ~600 kbit/s, its 320x180
            // and 160x90 ones ~250 together), else the sender would drop the layer the tile wants.
            let layered = caps[participant.id].map { participant.inbound.cameraLayers == nil ? $0 : $0 * 3 / 2 }
            let cap = layered.map { participant.inbound.sends(.screen) ? $0 + cameraBitrateRule.maximum : $0 }
            guard participant.inbound.setCameraBitrateCap(cap), participant.state == .secure else { continue }
            // Only a secure participant's RTCP is serviced: one still connecting hears its cap at `secure`.
            scheduleRTCP(participant, due: participant.inbound.nextTimeout)
        }
    }

    /// The caps the room's cameras were last sent (bit/s), summed: for metrics.
    public var cameraBitrateCapsSent: Int { participants.reduce(0) { $0 + ($1.inbound.cameraBitrateCapSent ?? 0) } }
    /// REMB messages sent to the room's cameras.
    public var cameraCapMessagesSent: Int { participants.reduce(0) { $0 + $1.inbound.rembsSent } }

    // MARK: Media in

    /// One decrypted RTP packet from a participant.
    public func receiveRTP(_ bytes: [UInt8], from id: String, now: Instant) {
        guard let participant = participant(id: id) else { return }
        receiveRTP(bytes, from: participant, now: now)
    }

    /// The same, from the participant itself as the shell holds it: no lookup by id at every
    /// packet. One that has left takes nothing.
    public func receiveRTP(_ bytes: [UInt8], from participant: Participant, now: Instant) {
        guard participant.state != .left else { return }
        let id = participant.id
        let reception = participant.inbound.receiveRTP(bytes, now: now)
        emitDecoding(participant)
        if let muted = reception.cameraMutedBySender {
            // The sender muted its camera itself (a browser's disabled track sends black): its
            // tile shows the placeholder until a picture comes.
            cameraMutedByMedia(participant, muted, reason: muted ? "sender muted" : "sender unmuted")
        }
        if let (source, packet) = reception.video, !forwarding.isEmpty {
            forward(packet, of: TrackReference(participant: id, source: source), from: participant, now: now)
        }
        switch reception.notice {
        case .published(let source)?:
            emit(.event(RoomEvent(.trackPublished, room: name, participant: id, identity: participant.identity, source: source)))
        case .undecodable(let source)?:
            emit(.event(RoomEvent(.trackEnded, room: name, participant: id, identity: participant.identity, source: source,
                                  reason: "decoder failed to start")))
        case nil:
            break
        }
        serviceRTCPIfDue(participant, now: now)
    }

    /// The shell's decoder finished one of the room's decode jobs (`RoomOutput.decode`): a camera's
    /// picture is held for lip sync and shown with its sound, a screen's at once; a frame the
    /// decoder refused asks its sender for a key frame. The results of each stream must come in
    /// the order of its jobs; those of a stream that ended are dropped.
    public func pictureDecoded(_ result: VideoDecodeResult, of stream: VideoDecodeStream, now: Instant) {
        guard let participant = participant(id: stream.participant) else { return }
        let failuresKnown = participant.inbound.startFailures.count
        let decoded = participant.inbound.pictureDecoded(result, of: stream, now: now)
        startFailures += participant.inbound.startFailures.dropFirst(failuresKnown)
        if let muted = decoded.cameraMutedBySender {
            cameraMutedByMedia(participant, muted, reason: muted ? "sender muted" : "sender unmuted")
        }
        if let source = decoded.ended {
            emit(.event(RoomEvent(.trackEnded, room: name, participant: participant.id, identity: participant.identity,
                                  source: source.rawValue, reason: "decoder failed to start")))
        }
        emitDecoding(participant)
        serviceRTCP(participant, now: now)
    }

    /// Hands on the participant's decode jobs and stopped decoders.
    private func emitDecoding(_ participant: Participant) {
        for output in participant.inbound.takeOutputs() { emit(output) }
    }

    /// One decrypted compound RTCP packet from a participant: about what it sends (sender
    /// reports) and about what it is sent (reports, REMB, PLI, FIR).
    public func receiveRTCP(_ bytes: [UInt8], from id: String, now: Instant) {
        guard let participant = participant(id: id), let packets = try? RTCPPacket.parseCompound(bytes) else { return }
        participant.inbound.receiveRTCP(packets, now: now)
        let (requests, retransmissions) = participant.outbound.receiveRTCP(packets, now: now)
        if let loss = participant.outbound.mixLossPercent { mixer.setReportedLoss(participant, percent: loss) }
        for bytes in retransmissions { emit(.sendRTP(participant: id, bytes: bytes)) }
        for track in participant.outbound.forwardedKeyFrameRequests(packets) {
            guard let owner = self.participant(id: track.participant) else { continue }
            owner.inbound.requestKeyFrame(of: track.source, now: now)
            serviceRTCP(owner, now: now)
        }
        for request in requests {
            let pacer = encoding(participant.outbound.videoEncoding)
            switch request {
            case .pictureLoss(let sender):
                pacer.pacer.receivedPictureLossIndication(PictureLossIndication(senderSSRC: sender, mediaSSRC: CompositeEncoding.internalSSRC))
            case .fullIntra(let sender, let sequenceNumber):
                pacer.pacer.receivedFullIntraRequest(FullIntraRequest(
                    senderSSRC: sender, entries: [FIREntry(ssrc: CompositeEncoding.internalSSRC, sequenceNumber: sequenceNumber)]))
            }
        }
        serviceRTCP(participant, now: now)
    }

    /// The encoding of `kind`; the main one when that one is not running.
    private func encoding(_ kind: CompositeEncoding.Kind) -> CompositeEncoding {
        kind == .main ? main : (scaled[kind] ?? main)
    }

    /// Key frames asked of the main encoder after pacing.
    public var keyFramesRequested: Int64 { main.keyFramesRequested }

    /// Composite and mix packets sent again because a receiver asked (NACK).
    public var packetsResent: Int64 { participants.reduce(0) { $0 + $1.outbound.packetsResent } }
    /// Composite packets asked for that could not be resent (each brought a key frame instead).
    public var resendsRefused: Int64 { participants.reduce(0) { $0 + $1.outbound.resendsRefused } }

    /// Whether the encoding of `kind` runs now (the main one always does while the room is open).
    func runsEncoding(_ kind: CompositeEncoding.Kind) -> Bool { kind == .main || scaled[kind] != nil }

    /// Receivers sent each encoding now.
    public func receivers(of kind: CompositeEncoding.Kind) -> Int {
        participants.filter { $0.receivesVideoNow && !$0.outbound.awaitingKeyFrame && $0.outbound.videoEncoding == kind }.count
    }
    /// Receivers of the composite whose video is paused (their feedback is under 60 kbit/s).
    public var pausedReceivers: Int {
        participants.filter { $0.state == .secure && $0.outbound.receivesVideo && $0.outbound.wantedVideoEncoding == nil }.count
    }

    /// Sends the participant's RTCP that is due, and notes when more will be.
    func serviceRTCP(_ participant: Participant, now: Instant) {
        guard participant.state == .secure else { return }
        // The reports are read through the participant: a copy of its outbound state (a large
        // struct) would retain every reference in it.
        for compound in participant.inbound.pollRTCP(now: now, senderReports: { participant.outbound.senderReports(now: $0) }) {
            emit(.sendRTCP(participant: participant.id, bytes: compound))
        }
        scheduleRTCP(participant, due: participant.inbound.nextTimeout)
    }

    /// After a media packet: the participant's RTCP goes now only when the packet made some due
    /// (a NACK for a gap it showed, a key frame request); else the room's timeout sends it at
    /// its time. Polling at every packet built and dropped every stream's feedback lists for
    /// nothing: 25,000 times a second in an audio room of 500.
    private func serviceRTCPIfDue(_ participant: Participant, now: Instant) {
        guard participant.state == .secure else { return }
        // Asked once: it visits each of the participant's receive streams.
        let due = participant.inbound.nextTimeout
        if let due, due <= now { serviceRTCP(participant, now: now) } else { scheduleRTCP(participant, due: due) }
    }

    /// Notes when the participant's RTCP is next due, for `nextTimeout`.
    private func scheduleRTCP(_ participant: Participant, due: Instant?) {
        participant.rtcpDue = due
        guard let due, participant.rtcpQueued.map({ due < $0 }) ?? true else { return }
        rtcpSchedule.push(due, id: participant.serial)
        participant.rtcpQueued = due
    }

    // MARK: Time

    /// Runs what is due by `now`: the audio tick, the video tick, RTCP.
    public func handleTimeout(now: Instant) {
        if let soonest = soonestConnectDeadline, soonest <= now {
            for participant in participants {
                guard let deadline = participant.connectDeadline, deadline <= now else { continue }
                leave(participant.id, reason: "never connected", now: now)
                emit(.expired(participant: participant.id))
            }
            soonestConnectDeadline = participants.compactMap(\.connectDeadline).min()
        }
        if let deadline = audioTicks.due(now: now, interval: Self.audioInterval) { audioTick(deadline: deadline) }
        if let deadline = videoTicks.due(now: now, interval: compositor.tickInterval) { videoTick(deadline: deadline, now: now) }
        // Those due are taken first, then serviced: one whose RTCP comes due again at once
        // waits for the next timeout, as every other. (`rtcpDueNow` is empty between timeouts.)
        while let (at, serial) = rtcpSchedule.peekEntry(), at <= now {
            rtcpSchedule.pop()
            guard let participant = bySerial[serial], participant.rtcpQueued == at else { continue }
            participant.rtcpQueued = nil
            rtcpDueNow.append(participant)
        }
        for participant in rtcpDueNow {
            // Its deadline may have moved later since it was queued: queued again at it.
            if let due = participant.rtcpDue, due <= now { serviceRTCP(participant, now: now) } else { scheduleRTCP(participant, due: participant.rtcpDue) }
        }
        rtcpDueNow.removeAll(keepingCapacity: true)
    }

    /// One audio tick: mix for the deadline (not the wake-up time, so the media clock stays
    /// regular), follow the speaker, feed recordings, send.
    private func audioTick(deadline: Instant) {
        mixer.tick(now: deadline)
        for error in mixer.takeStartFailures() { startFailures.append(("opus-encoder", error)) }
        followSpeaker(now: deadline)
        if let whole = mixer.roomMixLastTick, let mixTrack {
            mixTrack.push(whole, now: deadline)
            emit(.recordingTick(deadline))
        }
        mixer.forEachPacket { participant, payload in
            guard participant.state == .secure, let bytes = participant.outbound.mixPacket(payload, now: deadline) else { return }
            emit(.sendRTP(participant: participant.id, bytes: bytes))
        }
    }

    /// `trackRendering` when a live camera's or screen's pictures start or come back,
    /// `trackStalled` when it has shown none for 2 s (`VideoTrack.isRendering`); an ended one
    /// says `trackEnded`.
    private func noteRendering(of participant: Participant, now: Instant) {
        noteRendering(of: participant, source: "camera", track: participant.inbound.cameraTrack, now: now)
        noteRendering(of: participant, source: "screen", track: participant.inbound.screenTrack, now: now)
    }

    private func noteRendering(of participant: Participant, source: String, track: VideoTrack, now: Instant) {
        let rendering = track.isRendering(now: now)
        guard rendering != participant.rendering.contains(source) else { return }
        if rendering { participant.rendering.insert(source) } else { participant.rendering.remove(source) }
        guard track.readyState == .live else { return }
        emit(.event(RoomEvent(rendering ? .trackRendering : .trackStalled, room: name, participant: participant.id,
                              identity: participant.identity, source: source)))
    }

    /// The participant whose screen share a preset shows: the first, in joining order, whose
    /// screen renders. A share that stops (its section stopped or made inactive, or 2 s without
    /// a picture) gives the main tile back. Read from `rendering`, which the video tick has just
    /// brought up to date for every participant with video (no track is asked: a room of
    /// hundreds of audio guests ticks video 30 times a second).
    private func followScreenShare() {
        let sharer = videoMembers.first { !$0.isViewer && $0.rendering.contains("screen") }?.identity
        guard sharer != screenSharer else { return }
        screenSharer = sharer
        if case .preset = layout { applyLayout(publish: true) }
    }

    /// Takes one audio tick's levels: a new active speaker is published and moves into the main
    /// tile of a preset that has one.
    private func followSpeaker(now: Instant) {
        mixer.forEachLevel { participant, level in speakerDetector.update(participant: participant.serial, level: level, now: now) }
        guard let serial = speakerDetector.evaluate(now: now), let speaker = bySerial[serial] else { return }
        emit(.event(RoomEvent(.activeSpeakerChanged, room: name, participant: speaker.id, identity: speaker.identity)))
        if case .preset(let preset) = layout, preset != .grid { applyLayout(publish: true) } else { refreshCameraCaps() }
    }

    /// One video tick: draw for the deadline and hand the picture to the encoders (only when
    /// someone can receive it, or a recording takes it). Receivers whose wanted encoding differs
    /// from the one they get ask that encoding for a key frame: they switch at it.
    private func videoTick(deadline: Instant, now: Instant) {
        // A guest with no video at all and nothing shown as rendering is skipped.
        for participant in videoMembers where participant.inbound.needsVideoTick || !participant.rendering.isEmpty {
            participant.inbound.abandonStalledVideo(now: now)
            emitDecoding(participant)
            participant.inbound.releaseCamera(now: deadline, drawInterval: compositor.tickInterval)
            noteRendering(of: participant, now: deadline)
        }
        followScreenShare()
        let receivers = videoMembers.filter(\.receivesVideoNow)
        encoderSpeed.ticked(lateness: now - deadline)
        if encoderSpeed.evaluate(now: now, frameInterval: compositor.tickInterval) { followEncoderStep() }
        // With nobody receiving, a recording keeps the main encoding running (it muxes its
        // frames): stopping it there would start a new encoder, at a key frame, every tick.
        if receivers.isEmpty { mixTrack == nil ? stopEncoders() : stopScaledEncoders() }
        if !receivers.isEmpty || mixTrack != nil {
            let began = ContinuousClock.now
            compositor.tick(now: deadline)
            composeTime += ContinuousClock.now - began
            framesComposed += 1
        }
        // A recording takes the main encoding's frames: it runs while one does, watched or not.
        guard !receivers.isEmpty || mixTrack != nil, let picture = compositor.outputTrack?.latestFrame(now: deadline) else { return }
        // A paused receiver resumes at a key frame of the encoding it will want then.
        for participant in videoMembers where participant.state == .secure && participant.outbound.receivesVideo
            && participant.outbound.wantedVideoEncoding == nil {
            participant.outbound.awaitingKeyFrame = true
            participant.outbound.videoSwitchRequested = false
        }
        var needed: Set<CompositeEncoding.Kind> = []
        for participant in receivers {
            if let wanted = participant.outbound.wantedVideoEncoding { needed.insert(wanted) }
            if !participant.outbound.awaitingKeyFrame { needed.insert(participant.outbound.videoEncoding) }
        }
        for kind in [CompositeEncoding.Kind.low, .small] {
            if needed.contains(kind), scaled[kind] == nil {
                // A fresh encoder's first frame is a key frame: the switchers need nothing more.
                generations += 1
                let (size, bitrate) = kind == .low
                    ? (VideoSize(width: configuration.lowWidth, height: configuration.lowHeight), configuration.lowBitrate)
                    : (VideoSize(width: configuration.smallWidth, height: configuration.smallHeight), configuration.smallBitrate)
                scaled[kind] = CompositeEncoding(kind: kind, size: size, bitrate: bitrate, generation: generations)
            } else if !needed.contains(kind), scaled[kind] != nil {
                scaled[kind] = nil
                emit(.stopEncoder(kind))
            }
        }
        for participant in receivers {
            guard let wanted = participant.outbound.wantedVideoEncoding else { continue }
            if wanted == participant.outbound.videoEncoding && !participant.outbound.awaitingKeyFrame {
                participant.outbound.videoSwitchRequested = false  // changed its mind, or switched
            } else if !participant.outbound.videoSwitchRequested {
                participant.outbound.videoSwitchRequested = true
                encoding(wanted).keyFrameSoon = true
            }
        }
        if timestampEpoch == nil { timestampEpoch = picture.timestamp }
        for encoding in [main] + [CompositeEncoding.Kind.low, .small].compactMap({ scaled[$0] }) {
            let size = encoding.size ?? compositor.canvasSize
            let configuration = VP8Encoder.Configuration(width: size.width, height: size.height, framesPerSecond: compositor.fps,
                                                         bitrate: encoding.bitrate, cpuUsed: encoderSpeed.cpuUsed, profile: encoderSpeed.profile,
                                                         skipsSettledBlocks: true)
            if encoding.kind == .main { mainRunning = true }
            emit(.encode(CompositeEncodeRequest(kind: encoding.kind, generation: encoding.generation, picture: picture,
                                                keyFrame: encoding.keyFrameDue(now: deadline), configuration: configuration,
                                                scaledTo: encoding.size)))
        }
    }

    /// Encoded frames of one encoding, from the shell's encoder of `generation`: sent to
    /// everyone who gets that encoding; a receiver waiting to switch to it switches at its key
    /// frame (its SSRC and sequence numbering go on, and both encodings share one timestamp
    /// clock, so the switch is seamless). Frames of a stopped encoder are dropped. `encodeTime` is
    /// how long the encoder took for them (its thread's wall clock), for `encoderSpeed`.
    public func encoded(_ frames: [EncodedVideoFrame], kind: CompositeEncoding.Kind, generation: Int, encodeTime: Duration = .zero,
                        now: Instant) {
        guard let encoding = kind == .main ? main : scaled[kind], encoding.generation == generation, let epoch = timestampEpoch else { return }
        encoderSpeed.encoded(encodeTime)
        for var frame in frames {
            let since = max(.zero, frame.captureTime - epoch).nanosecondsClamped
            frame.rtpTimestamp = UInt32(truncatingIfNeeded: since / 1_000_000_000 * 90_000 + since % 1_000_000_000 * 90_000 / 1_000_000_000)
            if kind == .main, mixTrack != nil { emit(.recordVideo(frame)) }
            if encoding.packetizer == nil {
                encoding.packetizer = VideoSender(payloadType: PayloadType(rawValue: 96), ssrc: CompositeEncoding.internalSSRC,
                                                  timestampOffset: timestampOffset)
            }
            guard let packets = encoding.packetizer?.packetize(frame), !packets.isEmpty else { continue }
            var sent = false
            for participant in participants where participant.receivesVideoNow {
                if frame.isKeyFrame, participant.outbound.wantedVideoEncoding == kind,
                   participant.outbound.videoEncoding != kind || participant.outbound.awaitingKeyFrame {
                    participant.outbound.videoEncoding = kind
                    participant.outbound.awaitingKeyFrame = false
                    participant.outbound.videoBitrateChanged(encoding.bitrate)
                }
                guard participant.outbound.videoEncoding == kind, !participant.outbound.awaitingKeyFrame else { continue }
                for bytes in participant.outbound.compositePackets(packets, captureTime: frame.captureTime, now: now) {
                    emit(.sendRTP(participant: participant.id, bytes: bytes))
                }
                sent = true
            }
            if sent { framesSent += 1 }
        }
    }

    // MARK: Recording

    /// Starts the whole room's mix as a track (for recordings); the composite is drawn and its
    /// main encoding runs from now on even when nobody receives it (`RoomOutput.recordVideo`
    /// hands its frames out), beginning at a key frame. Returns the mix track.
    public func startRoomMix() -> AudioTrack {
        let track = mixTrack ?? AudioTrack(id: "\(name)/mix")
        mixTrack = track
        mixer.producesRoomMix = true
        requestRecordingKeyFrame()
        return track
    }

    /// The main encoding makes a key frame soon (at the key frame pacer's pace): a recording
    /// waits for one to begin its video.
    public func requestRecordingKeyFrame() { main.keyFrameSoon = true }

    /// Ends the room's mix track (the last recording stopped).
    public func stopRoomMix() {
        mixer.producesRoomMix = false
        mixTrack?.end()
        mixTrack = nil
    }

    // MARK: Failures

    /// Decoders and encoders that could not start, by component, since the last call.
    public func takeStartFailures() -> [(component: String, error: any Error)] {
        defer { startFailures.removeAll() }
        return startFailures
    }
    private var startFailures: [(component: String, error: any Error)] = []

    func emit(_ output: RoomOutput) { outputs.append(output) }

    /// Who subscribes to each track, by subscriber id (`reindexForwarding`).
    var forwarding: [TrackReference: [String]] = [:]
}
