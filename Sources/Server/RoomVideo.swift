import Conference
import Sockets
import Compositing
import Foundation
import Synchronization
import Media
import RTP
import Streams
import Wire

/// A room's video shell: the 1/fps tick on the media loop that draws the room's composite with
/// one `VideoCompositor`, hands the picture to one VP8 encoder on its own thread
/// (`VideoEncodeWorker`), and sends each encoded frame to every participant on its first video
/// section: packetized once, re-headered per receiver (its SSRC, its sequence numbers; the same
/// payload and timestamp for all: encode once, send many).
///
/// The layout is a preset (grid by default), recomputed whenever someone joins or leaves, or a
/// custom template set through the API. Key frame requests (a new receiver, a PLI or FIR from
/// any receiver) are coalesced by one `KeyFrameRequestPacer`: one key frame per 500 ms however
/// many ask, per encoding. Receivers whose bandwidth estimate is low (`LowBandwidthDetector`)
/// get a second, lower encoding of the same composite (scaled on its own encoder thread, which
/// runs only while someone gets it or is switching to it); a receiver switches at a key frame of
/// the other encoding, keeping its SSRC and sequence numbering. The room's audio levels feed an `ActiveSpeakerDetector`; the speaker, side by side
/// and picture-in-picture presets put its pick in the main tile. Lives on the media loop thread; started with the room's first participant and
/// stopped when the room closes.
final class RoomVideo {
    /// What decides the positions: a preset, recomputed on every join and leave, or a template
    /// given through the API, kept as given (a leaver's tile shows its placeholder).
    typealias Layout = LayoutRequest

    /// One encoding of the composite: its encoder thread, its packetizer and its key frame
    /// pacing. The main one is at the canvas size; the lower one (`HostConfig.Video.lowWidth`…)
    /// runs only while some receiver's bandwidth estimate is low.
    final class Encoding {
        /// Which encoding.
        enum Kind: String, Sendable {
            /// The canvas size, at `video.bitrate`.
            case main
            /// `video.lowWidth` × `video.lowHeight` at `video.lowBitrate`.
            case low
        }

        let kind: Kind
        /// The picture size it encodes; nil for the canvas size as it is.
        let size: VideoSize?
        let bitrate: Int
        var worker: VideoEncodeWorker?
        /// Packetizes each encoded frame once; receivers get copies with their own header fields.
        var packetizer: VideoSender?
        /// One key frame per `minimumInterval`, whoever asks. Requests are re-addressed to its
        /// (internal) SSRC, since every receiver has its own host SSRC for the same stream.
        var pacer = KeyFrameRequestPacer(mediaSSRC: RoomVideo.pacerSSRC)
        /// A key frame wanted at the next tick (a new receiver, or one switching to it).
        var keyFrameSoon = false
        var lastSoonKeyFrame: Instant?

        init(kind: Kind, size: VideoSize?, bitrate: Int) {
            self.kind = kind
            self.size = size
            self.bitrate = bitrate
        }

        /// Whether the tick at `now` encodes a key frame: a new receiver's (soon), or a paced request's.
        func keyFrameDue(now: Instant) -> Bool {
            if keyFrameSoon, lastSoonKeyFrame.map({ now - $0 >= RoomVideo.newReceiverKeyFrameGap }) ?? true {
                keyFrameSoon = false
                lastSoonKeyFrame = now
                pacer.keyFrameEncoded(now: now)  // it answers the requests held until now too
                return true
            }
            return pacer.pollKeyFrame(now: now)
        }
    }

    let room: String
    let compositor: VideoCompositor
    private(set) var layout: Layout = .preset(.grid)
    private let loop: EventLoop
    private let defaults: HostConfig.Video
    private let events: RoomEventHub
    /// In joining order: the order presets place people in.
    private var sessions: [ParticipantSession] = []
    /// Who speaks, from the room's audio levels (with hysteresis).
    private var speakerDetector = ActiveSpeakerDetector()
    private var tick: MediaTick?
    /// The canvas-size encoding everyone gets unless their bandwidth is low.
    private let main: Encoding
    /// The lower encoding, while any receiver gets it or is switching to it.
    private var low: Encoding?
    private static let pacerSSRC = SSRC(rawValue: 1)
    /// RTP timestamps of both encodings count 90 kHz from this capture time, so that a receiver
    /// switched between them sees one continuous clock.
    private var timestampEpoch: Instant?
    /// Shared by both encodings' packetizers, for the same reason.
    private let timestampOffset = UInt32.random(in: 0...UInt32.max)
    /// Frames the lower encoding encoded in workers since stopped.
    private var retiredLowFramesEncoded = 0
    /// Draws participants' names on their tiles; nil when the fonts could not be loaded.
    private let labels: TextLabelRenderer?
    /// Ticks that came more than `maximumLateness` late and restarted the schedule from now.
    var scheduleResets: Int { tick?.resets ?? 0 }
    /// Encoded frames sent (to anyone).
    private(set) var framesSent = 0
    /// Beyond this, a late tick does not try to catch up: the schedule restarts from now.
    static let maximumLateness: Duration = .milliseconds(200)
    /// A position's colour while its participant sends no picture.
    static let placeholderColor = YUVColor(y: 48, u: 128, v: 128)

    /// A deliberate fault for tests of checkers: each camera drawn in the next position's slot.
    private let camerasInWrongSlots: Bool

    init(room: String, loop: EventLoop, configuration: HostConfig.Video, events: RoomEventHub, camerasInWrongSlots: Bool = false) {
        self.room = room
        self.camerasInWrongSlots = camerasInWrongSlots
        self.loop = loop
        defaults = configuration
        self.events = events
        main = Encoding(kind: .main, size: nil, bitrate: configuration.bitrate)
        compositor = VideoCompositor(id: room, resolutionSize: VideoSize(width: configuration.width, height: configuration.height),
                                     fps: configuration.fps)
        do { labels = try TextLabelRenderer() } catch {
            StartFailures.shared.record("text-renderer", error)  // tiles go without names
            labels = nil
        }
        compositor.labelRenderer = labels
        compositor.start()
        tick = MediaTick(loop: loop, interval: { [compositor] in compositor.tickInterval }, maximumLateness: Self.maximumLateness) {
            [weak self] deadline in self?.fire(deadline: deadline)
        }
    }

    /// The encoder thread must not outlive the room, even when the host stops with rooms open.
    deinit {
        main.worker?.stop()
        low?.worker?.stop()
    }

    var isRunning: Bool { tick?.isRunning ?? false }
    /// Pictures drawn, and the time drawing took (the shell measures it: the compositor reads no clock).
    private(set) var framesComposed = 0
    private(set) var composeTime = Duration.zero
    /// A recording takes the composite: it is drawn even when no participant receives video.
    var isRecorded = false
    /// The encoder thread's counters; nil before the first picture was encoded.
    var encodeStatistics: VideoEncodeWorker.Statistics? { main.worker?.statistics }
    /// Frames the lower encoding has encoded in this room.
    var lowFramesEncoded: Int { retiredLowFramesEncoded + (low?.worker?.statistics.framesEncoded ?? 0) }
    /// Receivers sent the lower encoding now.
    var lowReceivers: Int { sessions.filter { $0.receivesVideoNow && $0.videoEncoding == .low }.count }

    /// Adds a participant: its camera joins the layout (presets are recomputed); the first starts
    /// the tick.
    func add(_ session: ParticipantSession) {
        sessions.append(session)
        session.video = self
        if case .preset = layout { applyLayout(publish: true) }
        tick?.start()
    }

    /// Removes a participant: presets close its gap; a custom template shows its placeholder.
    func remove(_ session: ParticipantSession) {
        sessions.removeAll { $0 === session }
        if session.video === self { session.video = nil }
        speakerDetector.remove(participant: session.identity)
        if case .preset = layout { applyLayout(publish: true) }
    }

    /// Stops the tick and the encoder thread (the room closed).
    func stop() {
        tick?.stop()
        main.worker?.stop()
        main.worker = nil
        stopLowEncoding()
        compositor.stop()
    }

    // MARK: Layout

    /// The identities present, in joining order.
    var identities: [String] { sessions.filter { !$0.isViewer }.map(\.identity) }

    /// The template in use, in the contract's format: a custom one as given, a preset as the
    /// positions it produces now.
    var currentDescription: TemplateDescription {
        let canvas = TemplateDescription.Canvas(width: compositor.resolutionSize.width, height: compositor.resolutionSize.height,
                                                fps: compositor.fps, background: backgroundHex)
        switch layout {
        case .custom(let description): return description
        case .preset(let preset):
            return TemplateDescription(canvas: canvas, positions: preset.positions(participants: identities,
                                                                                   activeSpeaker: speakerDetector.current))
        }
    }

    /// The canvas background as `#rrggbb` (the contract's default unless a template set one).
    private var backgroundHex: String {
        if case .custom(let description) = layout { return description.canvas.background }
        return TemplateDescription.Canvas.defaultBackground
    }

    /// Uses `layout` from the next picture on and tells the room (`layoutChanged`). The caller
    /// has checked that a custom template names only participants present.
    func setLayout(_ layout: Layout) {
        self.layout = layout
        switch layout {
        case .custom(let description):
            compositor.resolutionSize = description.canvas.size
            compositor.fps = description.canvas.fps
            compositor.background = description.canvas.backgroundColor ?? .black
        case .preset:
            compositor.resolutionSize = VideoSize(width: defaults.width, height: defaults.height)
            compositor.fps = defaults.fps
            compositor.background = YUVColor(hex: TemplateDescription.Canvas.defaultBackground) ?? .black
        }
        applyLayout(publish: true)
    }

    /// Resolves the current description to tracks and gives it to the compositor.
    private func applyLayout(publish: Bool) {
        let description = currentDescription
        let positions = description.positions.enumerated().map { index, position -> VideoTrackPositionInfo in
            let shownParticipant = camerasInWrongSlots
                ? description.positions[(index + 1) % description.positions.count].participant : position.participant
            let session = sessions.first { $0.identity == shownParticipant }
            // A track nobody sends (a screen not shared) is a stand-in freed at once: the
            // position shows its placeholder.
            let track = position.source == .camera ? session?.cameraTrack : nil
            let shown = track ?? VideoTrack(id: "\(position.participant)/\(position.source.rawValue)")
            return VideoTrackPositionInfo(track: shown, normalizedRect: position.rect, contentMode: position.contentMode,
                                          placeholder: .color(Self.placeholderColor),
                                          label: session.map { $0.name ?? $0.identity } ?? position.participant)
        }
        compositor.setTemplate(CompositeTemplate(positions: positions))
        if publish { events.publish(RoomEvent(.layoutChanged, room: room)) }
    }

    /// The active speaker's identity; nil until someone has spoken.
    var activeSpeaker: String? { speakerDetector.current }

    /// Takes one audio tick's levels (dBov by identity): a new active speaker is published
    /// (`activeSpeakerChanged`) and moves into the main tile of a preset that has one.
    func audioLevels(_ levels: [String: Double], now: Instant) {
        for (identity, level) in levels { speakerDetector.update(participant: identity, level: level, now: now) }
        guard let speaker = speakerDetector.evaluate(now: now) else { return }
        let session = sessions.first { $0.identity == speaker }
        events.publish(RoomEvent(.activeSpeakerChanged, room: room, participant: session?.id, identity: speaker))
        if case .preset(let preset) = layout, preset != .grid { applyLayout(publish: true) }
    }

    // MARK: Key frames

    /// A receiver asked for a key frame (a PLI about its host video SSRC) of the encoding it
    /// is sent.
    func pictureLossIndicated(by sender: SSRC, encoding: Encoding.Kind) {
        self.encoding(encoding).pacer.receivedPictureLossIndication(PictureLossIndication(senderSSRC: sender, mediaSSRC: Self.pacerSSRC))
    }

    /// A receiver sent a FIR entry about its host video SSRC with command `sequenceNumber`
    /// (a repeated number from the same sender is ignored, RFC 5104 §4.3.1.2).
    func fullIntraRequested(by sender: SSRC, sequenceNumber: UInt8, encoding: Encoding.Kind) {
        self.encoding(encoding).pacer.receivedFullIntraRequest(
            FullIntraRequest(senderSSRC: sender, entries: [FIREntry(ssrc: Self.pacerSSRC, sequenceNumber: sequenceNumber)]))
    }

    /// The encoding of `kind`; the main one when the lower one is not running (its requests
    /// then have nothing to ask).
    private func encoding(_ kind: Encoding.Kind) -> Encoding {
        kind == .low ? (low ?? main) : main
    }

    /// A receiver became able to decode (its transport is secure): it needs a key frame, and
    /// gets one at the next tick rather than after the 500 ms PLI pacing (joins are bounded by the
    /// HTTP API, not by packets; still, at most one such key frame per `newReceiverKeyFrameGap`).
    /// New receivers start on the main encoding.
    func receiverStarted() {
        main.keyFrameSoon = true
    }

    static let newReceiverKeyFrameGap: Duration = .milliseconds(100)

    /// Key frames asked of the main encoder after pacing.
    var keyFramesRequested: Int64 { main.pacer.keyFramesRequested }

    // MARK: The tick

    /// One tick: draw for the deadline and hand the picture to the encoder threads (only when
    /// someone can receive it, or a recording takes it). Receivers whose wanted encoding
    /// differs from the one they get ask that encoding for a key frame: they switch at it.
    private func fire(deadline: Instant) {
        let now = loop.clock.now()
        for session in sessions { session.abandonStalledVideo(now: now) }
        let receivers = sessions.filter(\.receivesVideoNow)
        if !receivers.isEmpty || isRecorded {
            let began = ContinuousClock.now
            compositor.tick(now: deadline)
            composeTime += ContinuousClock.now - began
            framesComposed += 1
        }
        guard !receivers.isEmpty, let picture = compositor.outputTrack?.latestFrame(now: deadline) else { return }
        let lowNeeded = receivers.contains { $0.wantedVideoEncoding == .low || $0.videoEncoding == .low }
        if lowNeeded, low == nil {
            // A fresh encoder's first frame is a key frame: the switchers need nothing more.
            low = Encoding(kind: .low, size: VideoSize(width: defaults.lowWidth, height: defaults.lowHeight), bitrate: defaults.lowBitrate)
        } else if !lowNeeded {
            stopLowEncoding()
        }
        for session in receivers {
            if session.wantedVideoEncoding == session.videoEncoding {
                session.videoSwitchRequested = false  // changed its mind, or switched
            } else if !session.videoSwitchRequested {
                session.videoSwitchRequested = true
                encoding(session.wantedVideoEncoding).keyFrameSoon = true
            }
        }
        if timestampEpoch == nil { timestampEpoch = picture.timestamp }
        for encoding in [main, low].compactMap({ $0 }) {
            let keyFrame = encoding.keyFrameDue(now: deadline)
            encoder(for: encoding).submit(.init(picture: picture, keyFrame: keyFrame))
        }
    }

    /// Stops the lower encoding's thread (nobody gets it); its frame count is kept for metrics.
    private func stopLowEncoding() {
        guard let low else { return }
        if let worker = low.worker {
            retiredLowFramesEncoded += worker.statistics.framesEncoded
            worker.stop()
        }
        self.low = nil
    }

    /// The encoding's thread, started with its first picture. Its callback holds the room weakly
    /// (the room holds the worker) and runs the sending on the loop. The lower encoding's thread
    /// scales the composite itself (once per picture, off the loop).
    private func encoder(for encoding: Encoding) -> VideoEncodeWorker {
        if let worker = encoding.worker { return worker }
        let target = WeakRoomVideo(self)
        let loop = self.loop
        let size = encoding.size ?? compositor.resolutionSize
        let configuration = VP8Encoder.Configuration(width: size.width, height: size.height,
                                                     framesPerSecond: compositor.fps, bitrate: encoding.bitrate)
        let kind = encoding.kind
        let worker = VideoEncodeWorker(name: "tessera-video-\(kind.rawValue)", configuration: configuration, scaledTo: encoding.size) {
            frames, worker in loop.execute { target.room?.send(frames, from: kind, worker: worker) }
        }
        encoding.worker = worker
        return worker
    }

    /// Sends encoded frames of one encoding (back on the loop) to everyone who gets it; a
    /// receiver waiting to switch to it switches at its key frame (the same SSRC and sequence
    /// numbering for the receiver, and the shared timestamp clock, so the switch is seamless).
    private func send(_ frames: [EncodedVideoFrame], from kind: Encoding.Kind, worker: VideoEncodeWorker.ID) {
        let encoding = kind == .main ? main : low
        // Frames of a worker stopped meanwhile (the lower encoding ended, the canvas changed) go
        // nowhere, even when a new worker now serves the same encoding.
        guard let encoding, encoding.worker?.id == worker, let epoch = timestampEpoch else { return }
        for var frame in frames {
            let since = max(.zero, frame.captureTime - epoch).nanosecondsClamped
            frame.rtpTimestamp = UInt32(truncatingIfNeeded: since / 1_000_000_000 * 90_000 + since % 1_000_000_000 * 90_000 / 1_000_000_000)
            if encoding.packetizer == nil {
                encoding.packetizer = VideoSender(payloadType: PayloadType(rawValue: 96), ssrc: Self.pacerSSRC, timestampOffset: timestampOffset)
            }
            guard let packets = encoding.packetizer?.packetize(frame), !packets.isEmpty else { continue }
            var sent = false
            for session in sessions {
                if frame.isKeyFrame, session.videoEncoding != kind, session.wantedVideoEncoding == kind {
                    session.videoEncoding = kind
                }
                if session.videoEncoding == kind, session.sendVideo(packets) { sent = true }
            }
            if sent {
                framesSent += 1
                sessions.first?.port.flush()
            }
        }
    }
}

/// A weak reference to a room's video, carried to the loop by the encoder thread's callback.
/// Only the loop thread reads `room`.
final class WeakRoomVideo: @unchecked Sendable {
    weak var room: RoomVideo?
    init(_ room: RoomVideo) { self.room = room }
}

/// One VP8 encoder on its own thread, so that a slow encode never delays packet handling
/// (docs/architecture.md, threads). Pictures wait in a queue of at most `depth`; a full queue drops
/// its oldest picture (a late composite is worth less than the next one) and keeps its key frame
/// request for the picture that replaces it. Encoded frames go to `deliver`, on the worker
/// thread; the caller hops back to its loop. The encoder is made and used only on the thread.
final class VideoEncodeWorker: @unchecked Sendable {
    /// A picture to encode, and whether it must be a key frame.
    struct Job: Sendable {
        var picture: I420Frame
        var keyFrame: Bool
    }

    /// Counters, read from any thread.
    struct Statistics: Sendable, Equatable {
        var framesEncoded = 0
        var keyFramesEncoded = 0
        /// Pictures dropped because the queue was full.
        var picturesDropped = 0
        /// Pictures the encoder refused.
        var encodeErrors = 0
        /// The encoder could not start: the worker ended and takes no pictures.
        var failed = false
        var totalEncodeTime: Duration = .zero
        var longestEncode: Duration = .zero
        /// Mean encode time per picture, milliseconds.
        var meanEncodeMilliseconds: Double {
            framesEncoded == 0 ? 0 : Double(totalEncodeTime.nanosecondsClamped) / 1e6 / Double(framesEncoded)
        }
    }

    /// Most pictures waiting at once.
    static let depth = 2

    /// Which worker made a frame: unique for the process's life.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }
    private static let nextID = Atomic<UInt64>(0)
    let id = ID(value: nextID.add(1, ordering: .relaxed).newValue)

    // Under `condition`.
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var stopping = false
    private var counters = Statistics()

    /// Starts the thread. `deliver` gets each picture's encoded frames (usually one). With
    /// `scaledTo`, pictures of another size are scaled to it on the thread before encoding.
    init(name: String, configuration: VP8Encoder.Configuration, scaledTo size: VideoSize? = nil,
         deliver: @escaping @Sendable ([EncodedVideoFrame], ID) -> Void) {
        let id = self.id
        let thread = Thread { [self] in run(configuration: configuration, size: size) { deliver($0, id) } }
        thread.name = String(name.prefix(15))
        thread.start()
    }

    var statistics: Statistics { condition.withLock { counters } }

    /// Queues a picture; drops the oldest waiting one when `depth` are waiting.
    func submit(_ job: Job) {
        condition.withLock {
            guard !counters.failed else { return }
            var job = job
            while queue.count >= Self.depth {
                let dropped = queue.removeFirst()
                job.keyFrame = job.keyFrame || dropped.keyFrame
                counters.picturesDropped += 1
            }
            queue.append(job)
            condition.signal()
        }
    }

    /// Ends the thread after the picture in hand; waiting pictures are dropped.
    func stop() {
        condition.withLock {
            stopping = true
            queue.removeAll()
            condition.signal()
        }
    }

    private func run(configuration: VP8Encoder.Configuration, size: VideoSize?, deliver: @Sendable ([EncodedVideoFrame]) -> Void) {
        // Made once: an encoder that cannot start ends the worker (counted and logged), rather
        // than being tried again for every picture.
        let encoder: VP8Encoder
        do { encoder = try VP8Encoder(configuration) } catch {
            StartFailures.shared.record("vp8-encoder", error)
            condition.withLock {
                counters.failed = true
                queue.removeAll()
            }
            return
        }
        let clock = ContinuousClock()
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if stopping {
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            condition.unlock()
            if job.keyFrame { encoder.requestKeyFrame() }
            let began = clock.now
            let picture = size.map { job.picture.scaled(width: $0.width, height: $0.height) } ?? job.picture
            let frames: [EncodedVideoFrame]
            do { frames = try encoder.encode(picture) } catch {
                // One bad picture (a size the encoder refuses) is dropped; the next may encode.
                frames = []
                condition.withLock { counters.encodeErrors += 1 }
            }
            let elapsed = clock.now - began
            condition.withLock {
                counters.framesEncoded += 1
                counters.keyFramesEncoded += frames.filter(\.isKeyFrame).count
                counters.totalEncodeTime += elapsed
                counters.longestEncode = max(counters.longestEncode, elapsed)
            }
            if !frames.isEmpty { deliver(frames) }
        }
    }
}
