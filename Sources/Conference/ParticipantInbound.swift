import Compositing
import Media
import RTP
import SDP
import Streams
import Wire

/// What a participant sends, as the room receives it, sans-IO: decrypted RTP and RTCP come in
/// with the time; receive repair (`PeerReceiver`: loss and jitter statistics, NACK with RTX
/// unwrapped, PLI, receiver reports at the RFC 3550 interval), the microphone's jitter buffer and
/// decoder (`AudioReceiver`, read by the room's mix tick), and the camera's and the screen's
/// frames (`VideoFrameReceiver`: assembled here, decoded by the shell on a decode worker; the
/// pictures come back through `pictureDecoded` into `cameraTrack`, through lip sync, and
/// `screenTrack`), with the stall rule: a frame missing packets for `incompleteFrameTimeout` is
/// given up so that the frames behind it, or a key frame, can come. RTCP to send back is polled
/// (`pollRTCP`), decode jobs too (`takeOutputs`); nothing is sent from here.
public final class ParticipantInbound {
    /// How long a frame may miss packets (NACK's chance) before it is given up.
    public static let incompleteFrameTimeout: Duration = .milliseconds(150)
    /// A camera's (or screen's) frames out to its decoder at once, at most: 133 ms at 30 fps. A
    /// frame beyond is dropped, and so is every frame after it until a key frame, which is asked
    /// for (`VideoFrameReceiver`).
    public static let decodeQueueDepth = 4
    /// The largest pictures the camera's and the screen's decoders take.
    public static let cameraMaximumPixels = 1920 * 1088
    public static let screenMaximumPixels = 3840 * 2176

    /// The microphone, played out one 20 ms frame per room tick; nil when the offer has no audio
    /// section, the decoder could not start (`startFailures` says why), or its section stopped.
    public private(set) var audioReceiver: AudioReceiver?
    /// The camera ("identity/camera"): pictures of the first video section the participant
    /// sends on. Ends with `end()`, or when renegotiation stops its section (a camera section
    /// added later is a new track).
    public private(set) var cameraTrack: VideoTrack
    /// The screen ("identity/screen"): pictures of the second video section it sends on, shown
    /// as they are decoded (a screen has no voice to wait for). Ends when its section stops or
    /// stops sending (renegotiation); a share started again is a new track.
    public private(set) var screenTrack: VideoTrack
    /// New media packets (duplicates and RTX padding not counted) and their payload bytes.
    public private(set) var packetsReceived = 0
    public private(set) var bytesReceived = 0
    /// Time spent decoding the camera and the screen, as the decoders measured it where they ran
    /// (`VideoDecodeResult.decodeTime`: work, not protocol time).
    public private(set) var decodeTime = Duration.zero
    /// Decoders that could not start, by component ("opus-decoder", "vp8-decoder"), with why.
    public private(set) var startFailures: [(component: String, error: any Error)] = []

    private let identity: String
    /// The participant's id, which names its decode streams.
    private let participantID: String
    /// The microphone's and the camera's sections: the first audio and the first video section
    /// at join; one stopped by renegotiation is replaced by the first section of its kind the
    /// renegotiation added.
    private var microphoneMid: String?
    private var cameraMid: String?
    private var videoReceiver: VideoFrameReceiver?
    /// The camera's and the screen's decode streams, while they have a receiver.
    private var cameraStream: VideoDecodeStream?
    private var screenStream: VideoDecodeStream?
    /// Streams started so far (each one's generation).
    private var streamsStarted = 0
    /// Decode jobs and stopped streams, for the room to hand on (`takeOutputs`).
    private var outputs: [RoomOutput] = []
    private var screenMid: String?
    private var screenReceiver: VideoFrameReceiver?
    private var screenSSRC: SSRC?
    /// Set by the screen decoder's key frame callback; turned into a PLI after the packet.
    private var screenKeyFrameNeeded = false
    private var inbound: InboundSections
    private var receiver: PeerReceiver
    /// Set by the video receiver's key frame callback; turned into a PLI after the packet.
    private var videoKeyFrameNeeded = false
    /// Since when camera packets have come without completing a picture; nil while pictures come.
    private var videoStalledSince: Instant?
    private var cameraSSRC: SSRC?
    /// The camera's simulcast layers and which one is decoded; nil for a camera sent as one stream.
    public private(set) var cameraLayers: SimulcastLayerChoice?
    /// Sections (by mid) whose first media has arrived. An array: asked at every packet, and a
    /// few short mids compare faster than one is hashed.
    private var published: [String] = []
    /// Decoded camera pictures waiting for the audio captured with them (lip sync).
    private var cameraSync = CameraSync()
    /// Tracks a key frame was asked of for their subscribers, not yet begun.
    private var forwardKeyFramesAsked: Set<VideoSource> = []

    public init(negotiated: NegotiatedSession, id: String, identity: String, seed: UInt64, now: Instant) {
        let inbound = InboundSections(negotiated)
        self.inbound = inbound
        self.identity = identity
        createdAt = now
        participantID = id
        cameraTrack = VideoTrack(id: "\(identity)/camera")
        screenTrack = VideoTrack(id: "\(identity)/screen")
        let sender = negotiated.media.compactMap(\.hostSender).first
        receiver = PeerReceiver(localSSRC: SSRC(rawValue: sender?.ssrc ?? UInt32(truncatingIfNeeded: seed | 1)),
                                cname: sender?.cname ?? "tessera", reducedSize: negotiated.media.allSatisfy(\.reducedSizeRTCP),
                                seed: seed, now: now)
        addSources()
        startDecoders(among: inbound.sections)
    }

    /// `inbound.ssrcsLearned` when the receiver was last given the streams.
    private var ssrcsAdded = 0

    /// Gives `PeerReceiver` the streams known so far (repair, statistics): each section's, and
    /// each simulcast layer's.
    private func addSources() {
        for section in inbound.sections {
            if let ssrc = section.mediaSSRC { receiver.add(Self.source(section, ssrc: ssrc, rtxSSRC: section.rtxSSRC)) }
            for layer in section.layers {
                if let ssrc = layer.ssrc { receiver.add(Self.source(section, ssrc: ssrc, rtxSSRC: layer.rtxSSRC)) }
            }
        }
        ssrcsAdded = inbound.ssrcsLearned
    }

    /// What a renegotiation did to the participant's tracks.
    public struct Renegotiation: Equatable, Sendable {
        /// Sources that ended (published before), for `trackEnded`.
        public var ended: [String] = []
        /// The camera's section stopped sending (`recvonly` or `inactive`: a camera turned off)
        /// or sends again: `trackMuted` and `trackUnmuted`.
        public var cameraPaused: Bool?
    }

    /// Whether the camera's section does not send now (turned off by renegotiation): its tile
    /// shows the placeholder, as for a camera muted by `PATCH`.
    public private(set) var cameraPaused = false
    /// Whether the sender muted its camera itself: for `senderMuteDelay` it sent only mute
    /// frames (`I420Frame.isMuteBlack`: a browser's disabled track). A picture that is not one
    /// unmutes it.
    public private(set) var cameraMutedBySender = false
    /// Since when the camera's pictures have all been mute frames.
    private var muteFramesSince: Instant?
    /// How long only mute frames must come before the camera counts as muted by its sender (a
    /// camera fading to black, a single dark frame, mute nothing).
    public static let senderMuteDelay: Duration = .seconds(1)
    /// Whether the camera is muted by the media (renegotiation or its sender), for its tile.
    public var cameraMutedByMedia: Bool { cameraPaused || cameraMutedBySender }

    /// Takes a renegotiated session (`PATCH` with an SDP offer): sections it added are received,
    /// sections it stopped (port 0) are forgotten, and a camera section that stops or resumes
    /// sending pauses or resumes the camera.
    public func renegotiate(_ negotiated: NegotiatedSession) -> Renegotiation {
        let previous = inbound
        inbound = InboundSections(negotiated, previous: previous)
        var ended: [String] = []
        var result = Renegotiation()
        if let cameraMid, let sends = inbound.section(mid: cameraMid)?.peerSends, sends == cameraPaused {
            cameraPaused = !sends
            result.cameraPaused = cameraPaused
        }
        // A screen whose section stays but no longer sends (`inactive`, `recvonly`) has ended.
        if let screenMid, inbound.section(mid: screenMid)?.peerSends == false {
            if unpublish(screenMid) { ended.append("screen") }
            stopScreen()
        }
        for section in previous.sections where inbound.section(mid: section.mid) == nil {
            if unpublish(section.mid) { ended.append(source(of: section)) }
            if let ssrc = section.mediaSSRC { receiver.remove(mediaSSRC: ssrc) }
            for ssrc in section.layers.compactMap(\.ssrc) { receiver.remove(mediaSSRC: ssrc) }
            if section.mid == microphoneMid {
                microphoneMid = nil
                audioReceiver = nil
            }
            if section.mid == cameraMid {
                cameraMid = nil
                cameraBitrateCapSent = nil
                cameraPaused = false
                cameraMutedBySender = false
                muteFramesSince = nil
                result.cameraPaused = nil
                videoReceiver = nil
                cameraLayers = nil
                stopDecoding(&cameraStream)
                cameraSSRC = nil
                videoStalledSince = nil
                cameraSync = CameraSync()
                cameraTrack.end()
            }
            if section.mid == screenMid { stopScreen() }
        }
        addSources()
        // New sections, and those that began to send again (a screen shared anew on its m-line).
        let resumed = { (section: InboundSections.Section) in section.peerSends && previous.section(mid: section.mid)?.peerSends == false }
        startDecoders(among: inbound.sections.filter { previous.section(mid: $0.mid) == nil || resumed($0) })
        result.ended = ended
        return result
    }

    private func stopScreen() {
        screenMid = nil
        screenReceiver = nil
        screenSSRC = nil
        stopDecoding(&screenStream)
        screenTrack.end()
    }

    /// Tells the shell that a stream's decoder may go.
    private func stopDecoding(_ stream: inout VideoDecodeStream?) {
        guard let ended = stream else { return }
        stream = nil
        outputs.append(.stopDecoder(ended))
    }

    /// Whether a video tick has anything to do for it: a camera or screen being received,
    /// decode work to hand out, or a voice still held for lip sync with a camera now gone. In
    /// an audio room of hundreds, most guests have none, 30 times a second.
    var needsVideoTick: Bool {
        videoReceiver != nil || screenReceiver != nil || !outputs.isEmpty || (audioReceiver.map { $0.lipSyncDelay != .zero } ?? false)
    }

    /// Decode jobs and stopped streams since the last call, for the room's outputs.
    func takeOutputs() -> [RoomOutput] {
        guard !outputs.isEmpty else { return [] }
        defer { outputs.removeAll() }
        return outputs
    }

    /// Starts the microphone's, the camera's and the screen's decoders on the first audio
    /// section and the first and second video sections the participant sends on among
    /// `sections`, where there is none yet.
    private func startDecoders(among sections: [InboundSections.Section]) {
        if microphoneMid == nil, let section = sections.first(where: { !$0.isVideo }) {
            microphoneMid = section.mid
            do { audioReceiver = try AudioReceiver(channels: 1) } catch { startFailures.append(("opus-decoder", error)) }
        }
        let video = sections.filter { $0.isVideo && $0.peerSends }
        if cameraMid == nil, let section = video.first(where: { $0.mid != screenMid }) {
            cameraMid = section.mid
            cameraCapChanged = cameraBitrateCap != nil  // a new camera hears its cap at once
            if cameraTrack.readyState == .ended { cameraTrack = VideoTrack(id: "\(identity)/camera") }
            videoReceiver = VideoFrameReceiver(maximumFramesInFlight: Self.decodeQueueDepth) { [weak self] in self?.videoKeyFrameNeeded = true }
            cameraStream = newStream(.camera)
            cameraLayers = section.layers.isEmpty ? nil : SimulcastLayerChoice(rids: section.layers.map(\.rid))
            cameraLayers?.wantedWidth = cameraWantedWidth
        }
        if screenMid == nil, let section = video.first(where: { $0.mid != cameraMid }) {
            screenMid = section.mid
            if screenTrack.readyState == .ended { screenTrack = VideoTrack(id: "\(identity)/screen") }
            screenReceiver = VideoFrameReceiver(maximumFramesInFlight: Self.decodeQueueDepth) { [weak self] in self?.screenKeyFrameNeeded = true }
            screenStream = newStream(.screen)
        }
    }

    private func newStream(_ source: VideoSource) -> VideoDecodeStream {
        streamsStarted += 1
        return VideoDecodeStream(participant: participantID, source: source, generation: streamsStarted)
    }

    /// Hands the jobs to the stream's decoder (through the room's outputs).
    private func decode(_ jobs: [VideoDecodeJob], of stream: VideoDecodeStream?, maximumPixels: Int) {
        guard let stream else { return }
        for job in jobs { outputs.append(.decode(VideoDecodeRequest(stream: stream, job: job, maximumPixels: maximumPixels))) }
    }

    /// What an arriving packet meant beyond its media.
    public enum Notice: Equatable, Sendable {
        /// The first media of a track: `trackPublished`.
        case published(source: String)
        /// The first media of a track whose decoder could not start: `trackEnded`.
        case undecodable(source: String)
    }

    /// What the room does with an arriving packet beyond decoding it.
    public struct Reception {
        public var notice: Notice?
        /// The sender muted (true) or unmuted (false) its camera with this packet's picture.
        public var cameraMutedBySender: Bool?
        /// A camera or screen packet (RTX unwrapped, duplicates gone), for its subscribers.
        public var video: (source: VideoSource, packet: RTPPacket)?
    }

    /// Takes one decrypted RTP packet: repaired, decoded (audio into the jitter buffer, video
    /// into `cameraTrack`), and a track's first media noticed.
    public func receiveRTP(_ bytes: [UInt8], now: Instant) -> Reception {
        guard let packet = try? RTPPacket.parse(bytes), let (index, _) = inbound.classify(packet) else { return Reception() }
        // Every packet with a transport-wide number counts for the sender's estimator, repairs too.
        if let number = (try? packet.headerExtension(TransportSequenceNumber.self, in: inbound.extensions)) ?? nil {
            receiver.transportPacketArrived(sequenceNumber: number.value, now: now)
        }
        // A source learned from this packet (or its RTX stream) joins the receiver.
        if inbound.ssrcsLearned != ssrcsAdded { addSources() }
        let section = inbound[index]
        guard case .media(let media) = receiver.receive(packet, now: now) else { return Reception() }
        packetsReceived += 1
        bytesReceived += media.payload.count
        // A simulcast camera: only the chosen layer goes on (to its decoder and subscribers).
        if section.mid == cameraMid, cameraLayers != nil {
            guard let layer = inbound.layer(ssrc: media.ssrc), !layer.isRTX, chooseLayer(layer.layer, of: media, now: now) else {
                return noticeFirstMedia(of: section, Reception())
            }
        }
        if section.mid == microphoneMid, let audioReceiver {
            // A malformed level is no level: the packet is decoded as any other.
            let level = (try? media.headerExtension(AudioLevel.self, in: inbound.extensions)) ?? nil
            audioReceiver.receive(payload: Array(media.payload), sequenceNumber: media.sequenceNumber,
                                  timestamp: media.timestamp, arrival: now, level: level)
        }
        var reception = Reception()
        if let source = videoSource(mid: section.mid) {
            reception.video = (source, media)
            // A key frame asked for its subscribers has come (the decoder may have asked too).
            if forwardKeyFramesAsked.contains(source), VP8PayloadDescriptor.beginsKeyFrame(media.payload) {
                forwardKeyFramesAsked.remove(source)
                receiver.keyFrameReceived(ssrc: media.ssrc)
            }
        }
        if section.mid == cameraMid, let videoReceiver {
            cameraSSRC = media.ssrc
            // The sender says how to turn its pictures (CVO, 3GPP TS 26.114 §7.4.5): a phone held
            // upright sends landscape frames and 90°; browsers put it on a frame's last packet.
            if let orientation = (try? media.headerExtension(VideoOrientation.self, in: inbound.extensions)) ?? nil {
                cameraTrack.rotation = VideoRotation(rawValue: orientation.rotation.degrees) ?? .none
            }
            let wasWaiting = videoReceiver.isWaitingForKeyFrame
            decode(videoReceiver.receive(media, now: now), of: cameraStream, maximumPixels: Self.cameraMaximumPixels)
            cameraFramesCame(videoReceiver, now: now, wasWaiting: wasWaiting)
        }
        if section.mid == screenMid, let screenReceiver {
            screenSSRC = media.ssrc
            let wasWaiting = screenReceiver.isWaitingForKeyFrame
            decode(screenReceiver.receive(media, now: now), of: screenStream, maximumPixels: Self.screenMaximumPixels)
            followKeyFrames(of: screenReceiver, ssrc: media.ssrc, wasWaiting: wasWaiting, needed: &screenKeyFrameNeeded, now: now)
        }
        return noticeFirstMedia(of: section, reception)
    }

    /// Forgets that the section of `mid` published; whether it had.
    private func unpublish(_ mid: String) -> Bool {
        guard let index = published.firstIndex(of: mid) else { return false }
        published.remove(at: index)
        return true
    }

    /// A track's first media: `trackPublished` (or `trackEnded` when it cannot be decoded).
    private func noticeFirstMedia(of section: InboundSections.Section, _ reception: Reception) -> Reception {
        guard !published.contains(section.mid) else { return reception }
        published.append(section.mid)
        var reception = reception
        let undecodable = (section.mid == microphoneMid && audioReceiver == nil) || (section.mid == cameraMid && videoReceiver == nil)
            || (section.mid == screenMid && screenReceiver == nil)
        reception.notice = undecodable ? .undecodable(source: source(of: section)) : .published(source: source(of: section))
        return reception
    }

    // MARK: Simulcast

    /// The width of the camera's largest tile (pixels), for its simulcast layer; nil while it is
    /// not shown.
    private var cameraWantedWidth: Int?

    /// Sets the width the camera is shown at (its largest tile, or its subscribers' need): a
    /// simulcast camera moves to the layer nearest it at the next key frame.
    public func setCameraWantedWidth(_ width: Int?) {
        cameraWantedWidth = width
        cameraLayers?.wantedWidth = width
    }

    /// Whether the packet of simulcast layer `layer` goes on to the decoder: it belongs to the
    /// decoded layer, or begins a key frame of the wanted one (the decoder starts anew on it).
    private func chooseLayer(_ layer: Int, of media: RTPPacket, now: Instant) -> Bool {
        guard var layers = cameraLayers else { return true }
        let (action, ask) = layers.packet(layer: layer, ssrc: media.ssrc, keyFrame: VP8PayloadDescriptor.keyFrameSize(media.payload), now: now)
        cameraLayers = layers
        if let ask { receiver.requestKeyFrame(ssrc: ask, now: now) }
        switch action {
        case .drop:
            return false
        case .decode:
            return true
        case .switchLayer:
            // A new stream for the new layer: the old one's frames in flight are dropped when
            // they come back, and its held pictures (another RTP clock) go.
            videoReceiver = VideoFrameReceiver(maximumFramesInFlight: Self.decodeQueueDepth) { [weak self] in self?.videoKeyFrameNeeded = true }
            stopDecoding(&cameraStream)
            cameraStream = newStream(.camera)
            cameraSync = CameraSync()
            videoStalledSince = nil
            cameraSSRC = media.ssrc
            receiver.keyFrameReceived(ssrc: media.ssrc)
            return true
        }
    }

    /// Follows the sender's own mute: true when only mute frames have come for
    /// `senderMuteDelay`, false at the first picture that is not one after that; nil when
    /// nothing changed.
    private func noteMuteFrames(_ pictures: [I420Frame], now: Instant) -> Bool? {
        guard !pictures.isEmpty else { return nil }
        if pictures.contains(where: { !$0.isMuteBlack }) {
            muteFramesSince = nil
            guard cameraMutedBySender else { return nil }
            cameraMutedBySender = false
            return false
        }
        let since = muteFramesSince ?? now
        muteFramesSince = since
        guard !cameraMutedBySender, now - since >= Self.senderMuteDelay else { return nil }
        cameraMutedBySender = true
        return true
    }

    /// Which video track the section of `mid` carries, if any.
    private func videoSource(mid: String) -> VideoSource? {
        mid == cameraMid ? .camera : mid == screenMid ? .screen : nil
    }

    /// Whether it has a microphone section (it may not have sent a packet yet).
    public var sendsMicrophone: Bool { microphoneMid != nil }

    /// Whether it sends that track now: its section is negotiated and sending (it may not have
    /// sent a packet yet).
    public func sends(_ source: VideoSource) -> Bool {
        (source == .camera ? cameraMid : screenMid) != nil
    }

    /// Asks the sender for a key frame of that track (PLI or FIR, repeated until one begins):
    /// a subscriber starts, or asked.
    public func requestKeyFrame(of source: VideoSource, now: Instant) {
        guard let mid = source == .camera ? cameraMid : screenMid,
              let ssrc = inbound.section(mid: mid)?.mediaSSRC ?? (source == .camera ? cameraSSRC : nil) else { return }
        forwardKeyFramesAsked.insert(source)
        receiver.requestKeyFrame(ssrc: ssrc, now: now)
    }

    /// Takes the participant's RTCP: sender reports about its streams (for the receiver reports'
    /// DLSR).
    public func receiveRTCP(_ packets: [RTCPPacket], now: Instant) {
        receiver.receiveRTCP(packets, now: now)
    }

    /// Gives up on camera frames that have missed packets for `incompleteFrameTimeout`.
    public func abandonStalledVideo(now: Instant) {
        guard let videoReceiver, let since = videoStalledSince, now - since >= Self.incompleteFrameTimeout else { return }
        let wasWaiting = videoReceiver.isWaitingForKeyFrame
        decode(videoReceiver.abandonIncompleteFrames(now: now), of: cameraStream, maximumPixels: Self.cameraMaximumPixels)
        cameraFramesCame(videoReceiver, now: now, wasWaiting: wasWaiting)
        videoStalledSince = nil
    }

    /// Compound RTCP packets due by `now` (receiver reports, NACK, PLI, the camera's REMB); the
    /// regular report carries `senderReports` about what the host sends it.
    public func pollRTCP(now: Instant, senderReports: (Instant) -> [SenderReport] = { _ in [] }) -> [[UInt8]] {
        receiver.pollRTCP(now: now, senderReports: senderReports, extraFeedback: pollCameraCap(now: now))
    }

    /// When `pollRTCP` next has something.
    public var nextTimeout: Instant? {
        let receiverDue = Self.nextTimeout(of: &receiver)
        guard let capDue = cameraCapDue else { return receiverDue }
        return min(receiverDue ?? capDue, capDue)
    }

    /// Asked after every packet. Read in place: a getter of another module's struct, called on
    /// this class's stored copy, is handed a copy of the whole receiver (its every stream and
    /// their references retained and released) unless the access is exclusive.
    private static func nextTimeout(of receiver: inout PeerReceiver) -> Instant? { receiver.nextTimeout }

    // MARK: The camera's bitrate cap (REMB)

    /// The cap the room wants for the camera (bit/s; `CameraBitrateRule`), nil for none.
    public private(set) var cameraBitrateCap: Int?
    /// The cap last sent in a REMB (bit/s), nil before the first or when REMB was not agreed.
    public private(set) var cameraBitrateCapSent: Int?
    /// REMB messages sent.
    public private(set) var rembsSent = 0
    /// When the last REMB went out; nil while the cap changed since (it goes at once).
    private var cameraCapSentAt: Instant?
    /// Whether the cap changed since the last REMB.
    private var cameraCapChanged = false
    /// When the participant joined: "at once" for a first cap, before any REMB was sent.
    private let createdAt: Instant

    /// Sets the camera's cap: sent at once (by the next `pollRTCP`) when it changed, then every
    /// `CameraBitrateRule.refreshInterval`. Returns whether it changed.
    @discardableResult
    public func setCameraBitrateCap(_ cap: Int?) -> Bool {
        guard cap != cameraBitrateCap else { return false }
        cameraBitrateCap = cap
        cameraCapChanged = cap != nil
        return true
    }

    /// The camera's SSRCs (every simulcast layer's), when REMB was agreed on it and they are known.
    private var cameraREMBTargets: [SSRC]? {
        guard let cameraMid, let section = inbound.section(mid: cameraMid), section.remb, section.peerSends else { return nil }
        let ssrcs = section.mediaSSRC.map { [$0] } ?? section.layers.compactMap(\.ssrc)
        return ssrcs.isEmpty ? nil : ssrcs
    }

    /// When a REMB is due: at once after a change, else a refresh after the last one.
    private var cameraCapDue: Instant? {
        guard cameraBitrateCap != nil, cameraREMBTargets != nil else { return nil }
        if cameraCapChanged { return cameraCapSentAt ?? createdAt }
        return cameraCapSentAt.map { $0 + CameraBitrateRule.refreshInterval } ?? createdAt
    }

    /// The REMB due by `now` naming the camera's SSRC, if any.
    private func pollCameraCap(now: Instant) -> [RTCPPacket] {
        guard let cap = cameraBitrateCap, let ssrcs = cameraREMBTargets, let due = cameraCapDue, due <= now else { return [] }
        cameraCapChanged = false
        cameraCapSentAt = now
        cameraBitrateCapSent = cap
        rembsSent += 1
        return [.receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(
            senderSSRC: receiver.localSSRC, bitrate: UInt64(max(0, cap)), ssrcs: ssrcs))]
    }

    /// The tracks that had media, by source name, in section order.
    public var publishedSources: [String] { inbound.sections.filter { published.contains($0.mid) }.map(source(of:)) }

    /// The participant left: its camera and screen end, and their decoders.
    public func end() {
        cameraTrack.end()
        screenTrack.end()
        stopDecoders()
    }

    /// Its decoders stop (it left, or the room closed): nothing is decoded for it again.
    func stopDecoders() {
        videoReceiver = nil
        screenReceiver = nil
        stopDecoding(&cameraStream)
        stopDecoding(&screenStream)
    }

    /// Packets the participant sent that never arrived (RFC 3550 A.3, over its sources).
    public var packetsLost: Int64 { receiver.statistics.reduce(0) { $0 + $1.cumulativeLost } }
    /// Its audio packets played as silence without decoding (their RFC 6464 level said so).
    public var silentAudioPacketsSkipped: Int { audioReceiver?.silentPacketsSkipped ?? 0 }
    /// Its audio packets with sound not decoded, too quiet for a place in the mixes (Top K).
    public var unheardAudioPacketsSkipped: Int { audioReceiver?.unheardPacketsSkipped ?? 0 }
    /// Its camera's frames: decoded, lost, refused or dropped; nil when it sends no video.
    public var cameraStatistics: VideoReceiver.Statistics? { videoReceiver?.statistics }
    /// Its screen's, while it shares one.
    public var screenStatistics: VideoReceiver.Statistics? { screenReceiver?.statistics }
    public var nacksSent: Int { receiver.nacksSent }
    public var transportFeedbackSent: Int { receiver.transportFeedbackSent }
    public var keyFrameRequestsSent: Int { receiver.keyFrameRequestsSent }

    /// Shows the camera pictures whose audio plays now (lip sync, `CameraSync`): call before
    /// each composite is drawn, `drawInterval` apart.
    public func releaseCamera(now: Instant, drawInterval: Duration) {
        guard videoReceiver != nil else {
            // No camera (or no more): nothing held, and the voice needs no delay. Every video
            // tick comes here for every guest, in an audio room of hundreds too.
            if let audioReceiver, audioReceiver.lipSyncDelay != .zero { audioReceiver.lipSyncDelay = .zero }
            return
        }
        var clocks: (audio: SenderClock, video: SenderClock)?
        if let microphoneSSRC = microphoneMid.flatMap(inbound.section(mid:))?.mediaSSRC, let cameraSSRC,
           let audio = receiver.senderClock(of: microphoneSSRC),
           let video = receiver.senderClock(of: cameraSSRC) {
            clocks = (audio, video)
        }
        for picture in cameraSync.release(now: now, drawInterval: drawInterval, audio: audioReceiver?.playout, clocks: clocks) { cameraTrack.push(picture, now: now) }
        audioReceiver?.lipSyncDelay = cameraSync.audioDelay
    }

    /// After camera packets or a stall: the stall rule (no frame came out of the assembler)
    /// and the key frame requests.
    private func cameraFramesCame(_ videoReceiver: VideoFrameReceiver, now: Instant, wasWaiting: Bool) {
        videoStalledSince = videoReceiver.lastFramesAssembled == 0 ? (videoStalledSince ?? now) : nil
        guard let cameraSSRC else { return }
        followKeyFrames(of: videoReceiver, ssrc: cameraSSRC, wasWaiting: wasWaiting, needed: &videoKeyFrameNeeded, now: now)
    }

    /// Turns a receiver's key frame need into a PLI (paced by the receiver and by
    /// `PeerReceiver`), and tells `PeerReceiver` when a key frame has come, so it stops asking.
    private func followKeyFrames(of video: VideoFrameReceiver, ssrc: SSRC, wasWaiting: Bool, needed: inout Bool, now: Instant) {
        if needed {
            needed = false
            receiver.requestKeyFrame(ssrc: ssrc, now: now)
        } else if wasWaiting && !video.isWaitingForKeyFrame {
            receiver.keyFrameReceived(ssrc: ssrc)
        }
    }

    /// What a decoded frame meant beyond its picture.
    public struct Decoded: Sendable {
        /// The sender muted (true) or unmuted (false) its camera with this picture.
        public var cameraMutedBySender: Bool?
        /// The stream's decoder could not start: the track has ended.
        public var ended: VideoSource?
    }

    /// Takes the result of one of its decode jobs (`RoomOutput.decode`), on the room's thread: a
    /// camera picture waits for its audio (lip sync) and a screen picture is shown; a refused
    /// frame asks for a key frame (paced as for a loss). Results of a stream that has ended are
    /// dropped.
    public func pictureDecoded(_ result: VideoDecodeResult, of stream: VideoDecodeStream, now: Instant) -> Decoded {
        decodeTime += result.decodeTime
        var decoded = Decoded()
        if stream == cameraStream, let videoReceiver {
            if case .decoderUnavailable(let error) = result.outcome {
                startFailures.append(("vp8-decoder", error))
                self.videoReceiver = nil
                stopDecoding(&cameraStream)
                cameraSync = CameraSync()
                cameraTrack.end()
                decoded.ended = .camera
                return decoded
            }
            if let picture = videoReceiver.decoded(result, now: now) {
                cameraSync.hold(picture, rtpTimestamp: result.rtpTimestamp, arrival: now)
                decoded.cameraMutedBySender = noteMuteFrames([picture], now: now)
            }
            if videoKeyFrameNeeded, let cameraSSRC {
                videoKeyFrameNeeded = false
                receiver.requestKeyFrame(ssrc: cameraSSRC, now: now)
            }
        } else if stream == screenStream, let screenReceiver {
            if case .decoderUnavailable(let error) = result.outcome {
                startFailures.append(("vp8-decoder", error))
                self.screenReceiver = nil
                stopDecoding(&screenStream)
                screenTrack.end()
                decoded.ended = .screen
                return decoded
            }
            if let picture = screenReceiver.decoded(result, now: now) { screenTrack.push(picture, now: now) }
            if screenKeyFrameNeeded, let screenSSRC {
                screenKeyFrameNeeded = false
                receiver.requestKeyFrame(ssrc: screenSSRC, now: now)
            }
        }
        return decoded
    }

    /// The contract's track names: the microphone's section, the camera's, and another video
    /// section is the screen.
    private func source(of section: InboundSections.Section) -> String {
        section.isVideo ? (section.mid == cameraMid ? "camera" : "screen") : "microphone"
    }

    private static func source(_ section: InboundSections.Section, ssrc: SSRC, rtxSSRC: SSRC?) -> PeerReceiver.Source {
        var rtx: RTXConfiguration?
        if let rtxSSRC, let rtxPayloadType = section.rtxPayloadType {
            rtx = RTXConfiguration(ssrc: rtxSSRC, payloadType: rtxPayloadType, associatedPayloadType: section.codecPayloadType)
        }
        return PeerReceiver.Source(mediaSSRC: ssrc, clockRate: section.clockRate, isVideo: section.isVideo, rtx: rtx,
                                   nack: section.nack)
    }
}
