import RTP
import SDP
import Streams
import Wire

/// An edge host's relay of one remote room, sans-IO (docs/cluster.md, "Viewers at edge hosts"):
/// one pull of the room's composite and whole mix from its owner (the edge is one WHEP viewer
/// there), fanned out to every local viewer of the room. Encode once at the owner, forward at
/// the edges: packets are re-headered per viewer (its SSRC, payload type, sequence numbers and
/// timestamps, as the host does for forwarded tracks), never decoded.
///
/// - Upstream: the pull's packets go through a `PeerReceiver` (statistics, the edge's own NACKs
///   to the owner for what the pull lost, RTX unwrapped, receiver reports).
/// - Each viewer's NACKs are answered from the edge's own history of what it sent that viewer
///   (RFC 4585 §6.2.1, RFC 4588); a packet the pull lost is repaired upstream by the edge's own
///   NACK and forwarded to every viewer when it comes.
/// - Viewers' PLI and FIR go upstream as the edge's own PLI, at most one per `keyFrameInterval`
///   whoever asks (RFC 4585 §6.3.1; the owner's composite pacer does the same for its viewers).
/// - The pull starts with the first viewer and stops `linger` after the last one leaves.
/// - A pull that brings nothing for `silenceTimeout` has lost its owner (the owner sends the
///   composite at its frame rate and the mix every 20 ms to every viewer): it ends, as on a BYE,
///   long before ICE consent would lapse (30 s, RFC 7675 §5.1).
///
/// Bytes and time in, `Output`s out; it reads no clock and does no I/O.
public struct ViewerRelay {
    /// What the host sends a local viewer, from its answer: the mix on its audio section's host
    /// SSRC, the composite on its video section's (with RTX when negotiated).
    public struct ViewerStreams: Sendable, Equatable {
        public struct Stream: Sendable, Equatable {
            public var ssrc: SSRC
            public var payloadType: PayloadType
            public var rtx: RTXConfiguration?
            public init(ssrc: SSRC, payloadType: PayloadType, rtx: RTXConfiguration? = nil) {
                self.ssrc = ssrc
                self.payloadType = payloadType
                self.rtx = rtx
            }
        }
        public var audio: Stream?
        public var video: Stream?
        /// The CNAME of the host's streams in the viewer's answer (its SRs carry it).
        public var cname: String

        public init(audio: Stream?, video: Stream?, cname: String) {
            self.audio = audio
            self.video = video
            self.cname = cname
        }

        /// The first audio and first video section the host sends on, as `AcceptedOffer`'s
        /// `.firstOfEachKind` rule answers a viewer.
        public init(_ negotiated: NegotiatedSession) {
            let sections = InboundSections(negotiated).sections
            func stream(_ section: InboundSections.Section?) -> Stream? {
                guard let section, let host = section.hostSender else { return nil }
                var rtx: RTXConfiguration?
                if let rtxSSRC = host.rtxSSRC, let rtxPayloadType = section.rtxPayloadType {
                    rtx = RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: rtxPayloadType, associatedPayloadType: section.codecPayloadType)
                }
                return Stream(ssrc: SSRC(rawValue: host.ssrc), payloadType: section.codecPayloadType, rtx: rtx)
            }
            let audio = sections.first { !$0.isVideo && $0.hostSender != nil }
            let video = sections.first { $0.isVideo && $0.hostSender != nil }
            self.init(audio: stream(audio), video: stream(video), cname: (audio ?? video)?.hostSender?.cname ?? "tessera")
        }
    }

    /// The owner's streams on the pull, from its answer.
    public struct Upstream: Sendable, Equatable {
        public var audio: SSRC?
        public var video: SSRC?
        public var videoRTX: RTXConfiguration?
        /// The edge's own SSRC on the pull (its reports and PLIs come from it).
        public var localSSRC: SSRC
        public init(audio: SSRC?, video: SSRC?, videoRTX: RTXConfiguration?, localSSRC: SSRC) {
            self.audio = audio
            self.video = video
            self.videoRTX = videoRTX
            self.localSSRC = localSSRC
        }
    }

    public enum Output: Sendable, Equatable {
        /// Start the pull from the owner (a WHEP viewer there); answer with `pullConnected` or `pullEnded`.
        case startPull
        /// Stop the pull (DELETE it at the owner, close its transport).
        case stopPull
        case sendRTP(viewer: String, bytes: [UInt8])
        case sendRTCP(viewer: String, bytes: [UInt8])
        /// RTCP for the owner, on the pull.
        case sendUpstreamRTCP([UInt8])
        /// The viewer's session is over (the pull ended): close its transport after its BYE.
        case endViewer(String, reason: String)
    }

    /// Where the pull is.
    public enum PullState: Sendable, Equatable {
        case idle
        /// Asked for, not yet connected.
        case starting
        case connected
    }

    /// One local viewer.
    private struct Viewer {
        let streams: ViewerStreams
        var audioShift: (sequence: UInt16, timestamp: UInt32)?
        var audioStream: RTPSendStream?
        var videoForwarder: RTPForwarder?
        var videoStream: RTPSendStream?
    }

    /// How long the pull outlives the last viewer (issue 17: 10 s).
    public static let defaultLinger: Duration = .seconds(10)
    /// At most one key frame asked of the owner per this, however many viewers ask (the owner's
    /// own composite pacer's interval).
    public static let defaultKeyFrameInterval: Duration = .milliseconds(500)
    /// No packet from the owner for this long: the pull has lost it.
    public static let defaultSilenceTimeout: Duration = .seconds(5)
    /// Regular sender reports to each viewer (RFC 3550 §6.2, about once a second).
    static let reportInterval: Duration = .seconds(1)
    /// The composite's resend budget per viewer is reckoned on this bit rate (the main encoding
    /// at up to 2.5 Mbit/s).
    static let forwardedBitrate = 2_500_000

    public let room: String
    public let linger: Duration
    public let silenceTimeout: Duration
    public private(set) var pullState = PullState.idle
    private var viewers: [String: Viewer] = [:]
    private var upstream: Upstream?
    private var receiver: PeerReceiver?
    /// Viewers' key frame requests, one upstream per interval (re-addressed to an internal SSRC,
    /// as every viewer has its own host SSRC for the same composite).
    private var keyFramePacer: KeyFrameRequestPacer
    private var lingerDeadline: Instant?
    /// When the pull last brought a packet (or connected).
    private var lastFromOwner: Instant?
    private var nextReportAt: Instant?
    private var outputs: [Output] = []
    private var generator: SplitMix64
    private let wallClock: NTPClockMapping

    /// Counters, for metrics and tests.
    public private(set) var packetsFromOwner = 0
    public private(set) var packetsToViewers = 0
    public private(set) var keyFramesAskedUpstream = 0
    public private(set) var retransmissionsToViewers = 0
    /// Packets or RTCP that could not be parsed (from the owner or a viewer): dropped.
    public private(set) var malformed = 0

    static let internalSSRC = SSRC(rawValue: 1)

    public init(room: String, wallClock: NTPClockMapping, seed: UInt64, linger: Duration = ViewerRelay.defaultLinger,
                keyFrameInterval: Duration = ViewerRelay.defaultKeyFrameInterval,
                silenceTimeout: Duration = ViewerRelay.defaultSilenceTimeout) {
        self.room = room
        self.linger = linger
        self.silenceTimeout = silenceTimeout
        self.wallClock = wallClock
        generator = SplitMix64(seed: seed)
        keyFramePacer = KeyFrameRequestPacer(mediaSSRC: Self.internalSSRC, minimumInterval: keyFrameInterval)
    }

    public var viewerCount: Int { viewers.count }
    public var viewerIDs: [String] { viewers.keys.sorted() }
    public func hasViewer(_ id: String) -> Bool { viewers[id] != nil }
    /// Nothing to do any more: no viewer, no pull (the shell may forget the relay).
    public var isIdle: Bool { viewers.isEmpty && pullState == .idle }

    // MARK: Viewers

    /// A local viewer was answered: it is sent the composite from the next key frame and the mix
    /// from the next packet. The first viewer starts the pull (or keeps a lingering one).
    public mutating func addViewer(_ id: String, streams: ViewerStreams, now: Instant) {
        var viewer = Viewer(streams: streams)
        if let audio = streams.audio {
            var configuration = RTPSendStream.Configuration(ssrc: audio.ssrc, clockRate: 48_000)
            configuration.retransmission.capacity = 64
            configuration.retransmission.maxBytesPerSecond = 8_000
            viewer.audioStream = RTPSendStream(configuration: configuration, clock: wallClock)
        }
        if let video = streams.video {
            viewer.videoForwarder = RTPForwarder(ssrc: video.ssrc, payloadType: video.payloadType,
                                                 firstSequenceNumber: .random(in: 0...UInt16.max, using: &generator),
                                                 firstTimestamp: .random(in: 0...UInt32.max, using: &generator), now: now)
            var configuration = RTPSendStream.Configuration(ssrc: video.ssrc, clockRate: 90_000, rtx: video.rtx)
            configuration.retransmission = ParticipantOutbound.retransmission
            configuration.retransmission.maxBytesPerSecond = ParticipantOutbound.retransmissionBudget(bitrate: Self.forwardedBitrate)
            // Each viewer's requests all pass here (FIR duplicates dropped); the relay's pacer
            // holds them to one upstream per interval.
            configuration.keyFrameInterval = .zero
            viewer.videoStream = RTPSendStream(configuration: configuration, clock: wallClock,
                                               firstRTXSequenceNumber: .random(in: 0...UInt16.max, using: &generator))
        }
        viewers[id] = viewer
        lingerDeadline = nil
        if nextReportAt == nil { nextReportAt = now + Self.reportInterval }
        switch pullState {
        case .idle:
            pullState = .starting
            outputs.append(.startPull)
        case .starting:
            break  // the owner's first key frame to a new viewer starts everyone
        case .connected:
            // Its forwarder waits for a key frame: ask the owner for one (paced).
            if streams.video != nil { keyFrameWanted(now: now) }
        }
    }

    /// A local viewer left (DELETE, or its transport failed); the last one arms the linger.
    public mutating func removeViewer(_ id: String, now: Instant) {
        guard viewers.removeValue(forKey: id) != nil else { return }
        if viewers.isEmpty, pullState != .idle { lingerDeadline = now + linger }
    }

    /// RTCP from a local viewer: NACKs answered from its history, PLI/FIR toward the owner
    /// (paced), reports for the round-trip time. Bytes that do not parse are dropped.
    public mutating func receiveViewerRTCP(_ bytes: [UInt8], from id: String, now: Instant) {
        guard var viewer = viewers[id] else { return }
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            malformed += 1
            return
        }
        if var stream = viewer.videoStream {
            for resend in stream.receivedRTCP(packets, now: now) {
                retransmissionsToViewers += 1
                outputs.append(.sendRTP(viewer: id, bytes: resend))
            }
            if stream.pollKeyFrame(now: now) { keyFrameWanted(now: now) }
            viewer.videoStream = stream
        }
        if var stream = viewer.audioStream {
            for resend in stream.receivedRTCP(packets, now: now) { outputs.append(.sendRTP(viewer: id, bytes: resend)) }
            viewer.audioStream = stream
        }
        viewers[id] = viewer
    }

    // MARK: The pull

    /// The pull's transport is up (DTLS done): what the owner sends on it is known.
    public mutating func pullConnected(_ upstream: Upstream, now: Instant) {
        guard pullState == .starting else { return }
        pullState = .connected
        self.upstream = upstream
        lastFromOwner = now
        var receiver = PeerReceiver(localSSRC: upstream.localSSRC, cname: "tessera-edge", reducedSize: true,
                                    seed: UInt64.random(in: 1...UInt64.max, using: &generator), now: now)
        if let audio = upstream.audio { receiver.add(.init(mediaSSRC: audio, clockRate: 48_000, isVideo: false, nack: false)) }
        if let video = upstream.video { receiver.add(.init(mediaSSRC: video, clockRate: 90_000, isVideo: true, rtx: upstream.videoRTX, nack: true)) }
        self.receiver = receiver
        // The owner starts a new viewer at a key frame; ask anyway for viewers that came meanwhile.
        keyFrameWanted(now: now)
        pollUpstreamRTCP(now: now)
    }

    /// The pull could not start, or its transport failed, or the owner ended it (its BYE, the
    /// room closed): every local viewer's session ends, so their clients see it and join again
    /// (through any host: the room may be placed anew). The next viewer starts a new pull.
    public mutating func pullEnded(reason: String, now: Instant) {
        guard pullState != .idle else { return }
        pullState = .idle
        upstream = nil
        receiver = nil
        lingerDeadline = nil
        lastFromOwner = nil
        for (id, viewer) in viewers.sorted(by: { $0.key < $1.key }) {
            // RFC 3550 §6.6: its streams end; then its transport closes.
            let sources = [viewer.streams.video?.ssrc, viewer.streams.audio?.ssrc].compactMap { $0 }
            if !sources.isEmpty, let bye = try? RTCPPacket.serializeCompound([.goodbye(Goodbye(sources: sources, reasonText: reason))]) {
                outputs.append(.sendRTCP(viewer: id, bytes: bye))
            }
            outputs.append(.endViewer(id, reason: reason))
        }
        viewers = [:]
    }

    /// An RTP packet from the owner, decrypted: fanned out to every viewer.
    public mutating func receiveUpstreamRTP(_ bytes: [UInt8], now: Instant) {
        guard pullState == .connected, var receiver, let upstream else { return }
        let packet: RTPPacket
        do { packet = try RTPPacket.parse(bytes) } catch {
            malformed += 1
            return
        }
        let reception = receiver.receive(packet, now: now)
        self.receiver = receiver
        if reception != .unknownSource { lastFromOwner = now }
        guard case .media(let media) = reception else {
            pollUpstreamRTCP(now: now)
            return
        }
        packetsFromOwner += 1
        if media.ssrc == upstream.video {
            if VP8PayloadDescriptor.beginsKeyFrame(media.payload) { keyFramePacer.keyFrameEncoded(now: now) }
            for id in viewers.keys { forwardVideo(media, to: id, now: now) }
        } else if media.ssrc == upstream.audio {
            for id in viewers.keys { forwardAudio(media, to: id, now: now) }
        }
        pollUpstreamRTCP(now: now)
    }

    /// RTCP from the owner: its SRs (for the edge's reports' LSR/DLSR); a BYE for its composite
    /// or mix ends the pull.
    public mutating func receiveUpstreamRTCP(_ bytes: [UInt8], now: Instant) {
        guard pullState == .connected, var receiver, let upstream else { return }
        let packets: [RTCPPacket]
        do { packets = try RTCPPacket.parseCompound(bytes) } catch {
            malformed += 1
            return
        }
        receiver.receiveRTCP(packets, now: now)
        self.receiver = receiver
        for case .goodbye(let bye) in packets where bye.sources.contains(where: { $0 == upstream.video || $0 == upstream.audio }) {
            pullEnded(reason: "the owner ended the room's stream", now: now)
            return
        }
    }

    // MARK: Time

    public mutating func handleTimeout(now: Instant) {
        if pullState == .connected, let last = lastFromOwner, now - last >= silenceTimeout {
            pullEnded(reason: "nothing from the owner for \(silenceTimeout)", now: now)
            return
        }
        if let deadline = lingerDeadline, now >= deadline {
            lingerDeadline = nil
            if viewers.isEmpty, pullState != .idle {
                pullState = .idle
                upstream = nil
                receiver = nil
                lastFromOwner = nil
                outputs.append(.stopPull)
            }
        }
        if let due = nextReportAt, now >= due {
            nextReportAt = viewers.isEmpty ? nil : now + Self.reportInterval
            sendReports(now: now)
        }
        pollUpstreamRTCP(now: now)
    }

    public var nextTimeout: Instant? {
        var due = [lingerDeadline, nextReportAt, receiver?.nextTimeout, lastFromOwner.map { $0 + silenceTimeout }].compactMap { $0 }
        if pullState == .connected, let paced = keyFramePacer.nextTimeout { due.append(paced) }
        return due.min()
    }

    public mutating func pollOutput() -> Output? {
        outputs.isEmpty ? nil : outputs.removeFirst()
    }

    /// Takes every output at once (the shell's loop).
    public mutating func takeOutputs() -> [Output] {
        defer { outputs = [] }
        return outputs
    }

    // MARK: Internals

    private mutating func keyFrameWanted(now: Instant) {
        keyFramePacer.receivedPictureLossIndication(PictureLossIndication(senderSSRC: Self.internalSSRC, mediaSSRC: Self.internalSSRC))
        pollUpstreamRTCP(now: now)
    }

    /// The edge's RTCP to the owner that is due: its reports and NACKs, and a paced PLI.
    private mutating func pollUpstreamRTCP(now: Instant) {
        guard pullState == .connected, var receiver, let upstream else { return }
        var extra: [RTCPPacket] = []
        if let video = upstream.video, keyFramePacer.pollKeyFrame(now: now) {
            keyFramesAskedUpstream += 1
            extra.append(.pictureLossIndication(PictureLossIndication(senderSSRC: upstream.localSSRC, mediaSSRC: video)))
        }
        for bytes in receiver.pollRTCP(now: now, extraFeedback: extra) { outputs.append(.sendUpstreamRTCP(bytes)) }
        self.receiver = receiver
    }

    private mutating func forwardVideo(_ packet: RTPPacket, to id: String, now: Instant) {
        guard var viewer = viewers[id], var forwarder = viewer.videoForwarder, var stream = viewer.videoStream else { return }
        let forwarded = forwarder.forward(packet, now: now)
        viewer.videoForwarder = forwarder
        if let forwarded, let bytes = try? stream.packetSent(forwarded, now: now) {
            packetsToViewers += 1
            outputs.append(.sendRTP(viewer: id, bytes: bytes))
        }
        viewer.videoStream = stream
        viewers[id] = viewer
    }

    private mutating func forwardAudio(_ packet: RTPPacket, to id: String, now: Instant) {
        guard var viewer = viewers[id], let audio = viewer.streams.audio, var stream = viewer.audioStream else { return }
        // The owner's mix is one continuous stream: one fixed shift onto the viewer's numbering
        // (random starts, RFC 3550 §5.1), set at the first packet it gets.
        let shift = viewer.audioShift ?? (UInt16.random(in: 0...UInt16.max, using: &generator) &- packet.sequenceNumber,
                                          UInt32.random(in: 0...UInt32.max, using: &generator) &- packet.timestamp)
        viewer.audioShift = shift
        var out = packet
        out.ssrc = audio.ssrc
        out.payloadType = audio.payloadType
        out.sequenceNumber = packet.sequenceNumber &+ shift.sequence
        out.timestamp = packet.timestamp &+ shift.timestamp
        out.extensions = []  // the viewer negotiated its own ids
        out.otherProfileExtension = nil
        out.csrcs = []
        if let bytes = try? stream.packetSent(out, now: now) {
            packetsToViewers += 1
            outputs.append(.sendRTP(viewer: id, bytes: bytes))
        }
        viewer.audioStream = stream
        viewers[id] = viewer
    }

    /// Each viewer's regular compound: the composite's SR (or an RR) with the CNAME, then the
    /// mix's SR in its own compound (RFC 3550 §6.4.1).
    private mutating func sendReports(now: Instant) {
        for (id, viewer) in viewers {
            let builder = RTCPCompoundBuilder(cname: viewer.streams.cname, reducedSize: true)
            for stream in [viewer.videoStream, viewer.audioStream].compactMap({ $0 }) {
                guard let report = stream.makeSenderReport(now: now),
                      let bytes = try? RTCPPacket.serializeCompound(builder.report(localSSRC: stream.ssrc, senderReport: report, reports: [])) else {
                    continue
                }
                outputs.append(.sendRTCP(viewer: id, bytes: bytes))
            }
        }
    }
}
