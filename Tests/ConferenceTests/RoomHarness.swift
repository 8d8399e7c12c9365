import Client
import Compositing
import Conference
import Load
import Media
import MediaTesting
import RTP
import SDP
import Streams
import Transport
import Wire
import WireTesting

/// A packet on the in-memory network, as the transport would hand it over after SRTP.
enum WirePacket: Sendable {
    case rtp([UInt8])
    case rtcp([UInt8])
}

/// A participant made of the project's own client stack, in memory: its offer is Load's
/// `ClientOffer`; it sends a tone (Opus) and a picture of its colour (VP8, with a send stream
/// that answers the host's NACKs with RTX); it plays its mix through an `AudioReceiver` and
/// decodes the composite with a `VideoReceiver`, repaired as a browser does (`PeerReceiver`:
/// NACK, PLI when its decoder needs a key frame, receiver reports). Its packets cross a `NetEm`
/// each way.
final class MemoryPeer {
    let identity: String
    let tone: Double
    let colour: YUVColor
    private(set) var negotiated: NegotiatedSession
    var id = ""
    var up: NetEm<WirePacket>
    var down: NetEm<WirePacket>
    /// Sends nothing while false (its tone and camera are off).
    var sends = true
    /// PLIs the host sent it (each makes its camera's next frame a key frame).
    private(set) var pictureLossIndications = 0

    private let audioSSRC: UInt32
    private let videoSSRC: UInt32
    private let opus: OpusEncoder
    private var audioSequence: UInt16 = 0
    private var audioTimestamp: UInt32 = 0
    private var audioFrames = 0
    private let camera: VP8Encoder
    private var packetizer: VideoSender
    private var videoStream: RTPSendStream
    /// Its screen, once shared (`renegotiate(shareScreen:)`): a white picture on an m-line and
    /// SSRC of its own, sent while `sharesScreen`.
    private var screen: (encoder: VP8Encoder, packetizer: VideoSender, stream: RTPSendStream)?
    var sharesScreen = false
    static let screenColour = YUVColor(y: 235, u: 128, v: 128)
    static let screenSize = VideoSize(width: 320, height: 192)
    let hostAudioSSRC: SSRC?
    private(set) var hostVideoSSRC: SSRC?
    private var hostRTX: RTXConfiguration?
    /// Composite packets that came again on the host's RTX stream.
    private(set) var retransmissionsReceived = 0
    /// The host's sender reports, by SSRC: the last one.
    private(set) var senderReports: [SSRC: SenderReport] = [:]
    /// Each new media packet of its mix and composite: SSRC, RTP timestamp and arrival.
    private(set) var arrivals: [(ssrc: SSRC, timestamp: UInt32, at: Instant)] = []
    private let mix: AudioReceiver
    private var composite: VideoReceiver
    /// Receive repair of the composite, as a browser does it: NACK, PLI, receiver reports.
    private var feedback: PeerReceiver
    private var keyFrameNeeded = false
    /// When it last decoded a composite picture (or gave up frames).
    private var lastPicture: Instant?
    /// What it heard, 20 ms at a time, and when.
    private(set) var heard: [(at: Instant, samples: [Int16])] = []
    /// The last composite picture it decoded.
    private(set) var latest: I420Frame?
    private(set) var picturesDecoded = 0

    /// Its camera's picture size.
    static let cameraSize = VideoSize(width: 160, height: 96)

    init(identity: String, tone: Double, colour: YUVColor, index: Int, impairment: NetEm<WirePacket>.Impairment, seed: UInt64,
         receiveOnly: Bool = false, sendOnly: Bool = false, now: Instant) throws {
        self.identity = identity
        self.tone = tone
        self.colour = colour
        audioSSRC = UInt32(1000 + index * 10)
        videoSSRC = audioSSRC + 1
        let rtxSSRC = audioSSRC + 2
        self.index = index
        offer = ClientOffer(ice: ICECredentials.random(), fingerprint: CertificateFingerprint(algorithm: "sha-256", digest: Array(repeating: 7, count: 32)),
                            cname: identity, sections: [.opus(mid: "0", ssrc: audioSSRC, direction: receiveOnly ? .recvonly : sendOnly ? .sendonly : .sendrecv),
                                                        .vp8(mid: "1", ssrc: videoSSRC, rtxSSRC: rtxSSRC,
                                                             direction: receiveOnly ? .recvonly : sendOnly ? .sendonly : .sendrecv)])
        sends = !receiveOnly
        negotiated = try negotiate(offer: offer.description, host: Self.host(index: index, mids: ["0", "1"]))
        hostAudioSSRC = negotiated.media.first { $0.kind == .audio }?.hostSender.map { SSRC(rawValue: $0.ssrc) }
        hostVideoSSRC = negotiated.media.first { $0.kind == .video }?.hostSender.map { SSRC(rawValue: $0.ssrc) }
        let videoPayloadType = PayloadType(rawValue: negotiated.media.first { $0.kind == .video }?.codec.payloadType ?? 96)
        let rtxPayloadType = negotiated.media.first { $0.kind == .video }?.codec.rtxPayloadType.map { PayloadType(rawValue: $0) }
        up = NetEm(impairment, seed: seed)
        down = NetEm(impairment, seed: seed &+ 1)
        opus = try OpusEncoder(.init(channels: 1))
        camera = try VP8Encoder(.init(width: Self.cameraSize.width, height: Self.cameraSize.height, framesPerSecond: 15, bitrate: 200_000))
        guard let packetizer = VideoSender(payloadType: videoPayloadType, ssrc: SSRC(rawValue: videoSSRC)) else {
            throw HarnessError.setup("no VP8 packetizer")
        }
        self.packetizer = packetizer
        videoStream = RTPSendStream(
            configuration: .init(ssrc: SSRC(rawValue: videoSSRC), clockRate: 90_000,
                                 rtx: rtxPayloadType.map { RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: $0, associatedPayloadType: videoPayloadType) }),
            clock: NTPClockMapping(instant: now, ntp: NTPTimestamp(rawValue: 0)))
        mix = try AudioReceiver(channels: 1)
        composite = try VideoReceiver()
        feedback = PeerReceiver(localSSRC: SSRC(rawValue: audioSSRC), cname: identity, reducedSize: true, seed: seed, now: now)
        if let hostVideoSSRC {
            // The host's RTX stream for the composite (RFC 4588), as its answer announced it.
            let hostVideo = negotiated.media.first { $0.kind == .video }
            if let rtxSSRC = hostVideo?.hostSender?.rtxSSRC, let rtxPayloadType {
                hostRTX = RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: rtxPayloadType, associatedPayloadType: videoPayloadType)
            }
            feedback.add(PeerReceiver.Source(mediaSSRC: hostVideoSSRC, clockRate: 90_000, isVideo: true, rtx: hostRTX, nack: true))
        }
        composite.onKeyFrameNeeded = { [weak self] in self?.keyFrameNeeded = true }
    }

    private let index: Int
    private var offer: ClientOffer
    /// Mids of m-lines it stopped (port 0, as a browser's stopped transceiver).
    private var stopped: Set<String> = []

    /// The host's side of its session: a sender per mid, the first two as at join.
    private static func host(index: Int, mids: [String]) -> HostParameters {
        var senders: [String: HostSender] = [:]
        for (position, mid) in mids.enumerated() {
            let ssrc = UInt32(5000 + index * 10 + (position == 0 ? 0 : 2 * position - 1))
            senders[mid] = HostSender(ssrc: ssrc, rtxSSRC: position == 0 ? nil : ssrc + 1, cname: "host", streamID: "host",
                                      trackID: position == 0 ? "mix" : "composite")
        }
        return HostParameters(iceUsernameFragment: "host\(index)", icePassword: "hostpasswordhostpassword",
                              fingerprintSHA256: Array(repeating: "AB", count: 32).joined(separator: ":"),
                              candidateAddresses: [HostCandidateAddress(address: "127.0.0.1", port: 50_000)],
                              senders: senders, sessionID: 1)
    }

    /// Renegotiates as a browser does: the camera's m-line `stop`ped (port 0, out of the BUNDLE
    /// group), and/or a camera m-line added with mid `add` (the same camera SSRC). Returns the
    /// session the host agreed, for `Room.renegotiate`; it receives the composite on the first
    /// live video m-line, and sends its camera while it has one.
    func renegotiate(stop: String? = nil, add: String? = nil, shareScreen: String? = nil, receiver: String? = nil,
                     camera: Direction? = nil) throws -> NegotiatedSession {
        if let stop { stopped.insert(stop) }
        if let camera {
            // The camera turned off or on as a browser does it: its transceiver's direction.
            offer = ClientOffer(ice: offer.ice, fingerprint: offer.fingerprint, cname: offer.cname, sections: offer.sections.map {
                $0.mid == "1" ? .vp8(mid: "1", ssrc: self.videoSSRC, rtxSSRC: audioSSRC + 2, direction: camera) : $0
            })
        }
        if let add { offer = ClientOffer(ice: offer.ice, fingerprint: offer.fingerprint, cname: offer.cname,
                                         sections: offer.sections + [.vp8(mid: add, ssrc: videoSSRC, rtxSSRC: audioSSRC + 2)]) }
        if let shareScreen { offer = ClientOffer(ice: offer.ice, fingerprint: offer.fingerprint, cname: offer.cname,
                                                 sections: offer.sections + [.vp8(mid: shareScreen, ssrc: audioSSRC + 5)]) }
        if let receiver { offer = ClientOffer(ice: offer.ice, fingerprint: offer.fingerprint, cname: offer.cname,
                                              sections: offer.sections + [.vp8(mid: receiver, ssrc: audioSSRC + 7, rtxSSRC: audioSSRC + 8, direction: .recvonly)]) }
        var description = offer.description
        for index in description.media.indices where stopped.contains(description.media[index].mid ?? "") {
            description.media[index].port = 0
        }
        description.attributes = description.attributes.map { attribute in
            guard case .group(let group) = attribute.typed else { return attribute }
            return .group(MediaGroup(semantics: group.semantics, mids: group.mids.filter { !stopped.contains($0) }))
        }
        negotiated = try negotiate(offer: description, host: Self.host(index: index, mids: offer.sections.map(\.mid)))
        let video = negotiated.media.first { $0.kind == .video }
        let videoSSRC = video?.hostSender.map { SSRC(rawValue: $0.ssrc) }
        if videoSSRC != hostVideoSSRC {
            // Another m-line is another receiver, with a decoder of its own (as in a browser).
            composite = try VideoReceiver()
            composite.onKeyFrameNeeded = { [weak self] in self?.keyFrameNeeded = true }
            lastPicture = nil
        }
        hostVideoSSRC = videoSSRC
        sendsVideo = video != nil
        if let video, let sender = video.hostSender, let rtxSSRC = sender.rtxSSRC, let rtxPayloadType = video.codec.rtxPayloadType {
            let payloadType = PayloadType(rawValue: video.codec.payloadType)
            hostRTX = RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: PayloadType(rawValue: rtxPayloadType), associatedPayloadType: payloadType)
            feedback.add(PeerReceiver.Source(mediaSSRC: SSRC(rawValue: sender.ssrc), clockRate: 90_000, isVideo: true, rtx: hostRTX, nack: true))
        }
        followForwardedSections()
        if let shareScreen, let section = negotiated.media.first(where: { $0.mid == shareScreen }) {
            let payloadType = PayloadType(rawValue: section.codec.payloadType)
            guard let packetizer = VideoSender(payloadType: payloadType, ssrc: SSRC(rawValue: audioSSRC + 5)) else {
                throw HarnessError.setup("no VP8 packetizer")
            }
            screen = (try VP8Encoder(.init(width: Self.screenSize.width, height: Self.screenSize.height, framesPerSecond: 15, bitrate: 300_000)),
                      packetizer, RTPSendStream(configuration: .init(ssrc: SSRC(rawValue: audioSSRC + 5), clockRate: 90_000),
                                                clock: NTPClockMapping(instant: .milliseconds(10_000), ntp: NTPTimestamp(rawValue: 0))))
            sharesScreen = true
        }
        return negotiated
    }

    /// What it receives on its video m-lines after the first (subscriptions), by the host's SSRC
    /// there: its mid, its decoder, what it decoded, and each new packet's sequence number and
    /// timestamp.
    final class ForwardedReceiver {
        let mid: String
        let decoder: VideoReceiver
        var latest: I420Frame?
        var picturesDecoded = 0
        var firstPictureAt: Instant?
        var packets: [(sequenceNumber: UInt16, timestamp: UInt32, at: Instant)] = []
        /// Media packets still to miss before it knows the stream (lost on the way): as a
        /// receiver whose jitter buffer starts at the first packet it sees, it cannot NACK them.
        var missesFirstPackets = 0
        init(mid: String) throws {
            self.mid = mid
            decoder = try VideoReceiver()
        }
    }
    private(set) var forwarded: [SSRC: ForwardedReceiver] = [:]
    /// The host's REMBs (its caps of the camera), and when.
    private(set) var capsReceived: [(remb: ReceiverEstimatedMaximumBitrate, at: Instant)] = []
    /// Its camera's SSRC.
    var cameraSSRC: SSRC { SSRC(rawValue: videoSSRC) }
    /// SSRCs the host said BYE for (RFC 3550 §6.6).
    private(set) var goodbyes: Set<SSRC> = []
    /// Whether the host said BYE for what its first video m-line receives.
    var receivedGoodbye: Bool { hostVideoSSRC.map(goodbyes.contains) ?? false }
    /// The receiver of the m-line `mid`.
    func forwarded(mid: String) -> ForwardedReceiver? { forwarded.values.first { $0.mid == mid } }

    /// A receiver (and NACK repair, as a browser's) for each video m-line the host sends on
    /// after the first.
    private func followForwardedSections() {
        for section in negotiated.media.filter({ $0.kind == .video && $0.hostDirection.sends }).dropFirst() {
            guard let sender = section.hostSender, forwarded[SSRC(rawValue: sender.ssrc)] == nil,
                  let receiver = try? ForwardedReceiver(mid: section.mid) else { continue }
            forwarded[SSRC(rawValue: sender.ssrc)] = receiver
            let payloadType = PayloadType(rawValue: section.codec.payloadType)
            var rtx: RTXConfiguration?
            if let rtxSSRC = sender.rtxSSRC, let rtxPayloadType = section.codec.rtxPayloadType {
                rtx = RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: PayloadType(rawValue: rtxPayloadType), associatedPayloadType: payloadType)
            }
            if let rtx { forwardedRTX[rtx.ssrc] = SSRC(rawValue: sender.ssrc) }
            feedback.add(PeerReceiver.Source(mediaSSRC: SSRC(rawValue: sender.ssrc), clockRate: 90_000, isVideo: true, rtx: rtx, nack: true))
        }
    }
    /// The forwarded streams' RTX SSRCs, to their media SSRCs.
    private var forwardedRTX: [SSRC: SSRC] = [:]

    /// Sends a browser's mute frames (black of Y 0, as for a disabled track) while set.
    var sendsMuteFrames = false

    /// Sends no camera while false (its camera m-line is stopped, or its camera just stops).
    var sendsVideo = true
    /// When set, its camera is a phone's turned on its side: the picture's left half is its
    /// colour and its right half white, and each frame's last packet carries this CVO rotation
    /// (as browsers send it), which turns it upright.
    var orientation: VideoOrientation.Rotation?

    /// Whether it sends audio packets at all, and its RTCP (with neither nor video, the room
    /// sends its RTCP only at its timeouts: a packet or a report that finds RTCP due sends it too).
    var sendsAudio = true
    var sendsRTCP = true

    /// 20 ms of its tone, as one Opus RTP packet.
    func sendAudio(now: Instant) throws {
        guard sendsAudio else { return }
        let frame = sends ? toneFrame(tone, frame: audioFrames)
            : AudioFrame(channels: 1, samples: [Int16](repeating: 0, count: AudioFrame.samplesPer20ms))
        audioFrames += 1
        let packet = RTPPacket(marker: audioFrames == 1, payloadType: PayloadType(rawValue: 111), sequenceNumber: audioSequence,
                               timestamp: audioTimestamp, ssrc: SSRC(rawValue: audioSSRC), payload: try opus.encode(frame)[...])
        audioSequence &+= 1
        audioTimestamp &+= UInt32(AudioFrame.samplesPer20ms)
        up.send(.rtp(try packet.serialized()), now: now)
    }

    /// One picture of its colour, packetized, each packet remembered for RTX.
    func sendVideo(now: Instant) throws {
        guard sends, sendsVideo else { return }
        var picture = I420Frame(width: Self.cameraSize.width, height: Self.cameraSize.height,
                                color: sendsMuteFrames ? YUVColor(y: 0, u: 128, v: 128) : colour, timestamp: now)
        let orientationID = negotiated.media.first { $0.kind == .video }?.headerExtensions
            .first { $0.uri == HeaderExtensionURI.videoOrientation.rawValue }.map { UInt8($0.id) }
        if orientation != nil {
            picture.fill(PixelRect(x: Self.cameraSize.width / 2, y: 0, width: Self.cameraSize.width / 2, height: Self.cameraSize.height),
                         with: YUVColor(y: 235, u: 128, v: 128))
        }
        for frame in try camera.encode(picture) {
            var packets = packetizer.packetize(frame)
            if let orientation, let orientationID, !packets.isEmpty {
                packets[packets.count - 1].extensions = [RTPHeaderExtension(id: orientationID, data: VideoOrientation(rotation: orientation).extensionData)]
            }
            for packet in packets {
                up.send(.rtp(try videoStream.packetSent(packet, now: now)), now: now)
            }
        }
        if sharesScreen, var screen {
            let picture = I420Frame(width: Self.screenSize.width, height: Self.screenSize.height, color: Self.screenColour, timestamp: now)
            for frame in try screen.encoder.encode(picture) {
                for packet in screen.packetizer.packetize(frame) { up.send(.rtp(try screen.stream.packetSent(packet, now: now)), now: now) }
            }
            self.screen = screen
        }
    }

    /// Takes what the network delivers by `now`; answers NACKs with RTX and PLIs with a key
    /// frame; asks for a key frame of the composite when its decoder needs one (at most every
    /// 200 ms).
    func receive(now: Instant) throws {
        for packet in down.receive(now: now) {
            switch packet {
            case .rtcp(let bytes):
                let packets = try RTCPPacket.parseCompound(bytes)
                feedback.receiveRTCP(packets, now: now)
                for case .senderReport(let report) in packets { senderReports[report.ssrc] = report }
                for case .goodbye(let goodbye) in packets { goodbyes.formUnion(goodbye.sources) }
                for case .receiverEstimatedMaximumBitrate(let remb) in packets { capsReceived.append((remb, now)) }
                for retransmission in videoStream.receivedRTCP(packets, now: now) { up.send(.rtp(retransmission), now: now) }
                if packets.contains(where: { if case .pictureLossIndication = $0 { true } else { false } }) {
                    pictureLossIndications += 1
                    camera.requestKeyFrame()
                }
            case .rtp(let bytes):
                let packet = try RTPPacket.parse(bytes)
                if packet.ssrc == hostAudioSSRC || packet.ssrc == hostVideoSSRC { arrivals.append((packet.ssrc, packet.timestamp, now)) }
                if let receiver = forwarded[forwardedRTX[packet.ssrc] ?? packet.ssrc] {
                    if receiver.missesFirstPackets > 0, receiver.packets.isEmpty {
                        receiver.missesFirstPackets -= 1
                        continue
                    }
                    guard case .media(let media) = feedback.receive(packet, now: now) else { continue }
                    if packet.ssrc == media.ssrc { receiver.packets.append((media.sequenceNumber, media.timestamp, now)) }
                    for picture in receiver.decoder.receive(media, now: now) {
                        receiver.latest = picture
                        receiver.picturesDecoded += 1
                        if receiver.firstPictureAt == nil { receiver.firstPictureAt = now }
                    }
                } else if packet.ssrc == hostAudioSSRC {
                    mix.receive(payload: Array(packet.payload), sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, arrival: now)
                } else if packet.ssrc == hostVideoSSRC || packet.ssrc == hostRTX?.ssrc,
                          case .media(let media) = feedback.receive(packet, now: now) {
                    if packet.ssrc == hostRTX?.ssrc { retransmissionsReceived += 1 }
                    if lastPicture == nil { lastPicture = now }
                    let wasWaiting = composite.isWaitingForKeyFrame
                    for picture in composite.receive(media, now: now) {
                        latest = picture
                        picturesDecoded += 1
                        lastPicture = now
                    }
                    if wasWaiting, !composite.isWaitingForKeyFrame, let hostVideoSSRC { feedback.keyFrameReceived(ssrc: hostVideoSSRC) }
                }
            }
        }
        // A frame still missing packets after 150 ms is given up (as a browser's jitter buffer
        // does), so that the frames behind it, or a key frame, can come.
        if let lastPicture, now - lastPicture >= .milliseconds(150) {
            for picture in composite.abandonIncompleteFrames(now: now) {
                latest = picture
                picturesDecoded += 1
            }
            self.lastPicture = now
        }
        if keyFrameNeeded, let hostVideoSSRC {
            keyFrameNeeded = false
            feedback.requestKeyFrame(ssrc: hostVideoSSRC, now: now)
        }
        let reports = feedback.pollRTCP(now: now)
        if sendsRTCP { for compound in reports { up.send(.rtcp(compound), now: now) } }
    }

    /// Plays 20 ms of its mix.
    func play(now: Instant) {
        heard.append((now, mix.tick(now: now).samples))
    }

}

enum HarnessError: Error {
    case setup(String)
}

/// A `Room` driven in memory on a manual clock: `MemoryPeer`s send and receive through their
/// `NetEm`s, the room's encode requests are encoded at once with real VP8 encoders, its decode
/// jobs decoded at once with a decoder per stream (as the host's decode workers would, with no
/// wait) unless `holdsDecodes`, and every output is carried out as the host's shell would. No
/// socket, no thread, no sleep.
final class RoomHarness {
    private(set) var now = Instant.milliseconds(10_000)
    let room: Room
    private(set) var peers: [MemoryPeer] = []
    private(set) var events: [RoomEvent] = []
    /// Participants the room dropped for not connecting (`RoomOutput.expired`).
    private(set) var expired: [String] = []
    /// Viewers the room closed (`RoomOutput.closed`: their track ended).
    private(set) var closed: [String] = []
    private var encoders: [CompositeEncoding.Kind: (generation: Int, encoder: VP8Encoder, scaledTo: VideoSize?)] = [:]
    /// The decoders the host's workers would hold, by stream.
    private var decoders: [VideoDecodeStream: VideoDecodeSession] = [:]
    /// While set, decode jobs wait in `heldDecodes` (a decode worker that has fallen behind)
    /// until `releaseDecodes()`.
    var holdsDecodes = false
    private(set) var heldDecodes: [VideoDecodeRequest] = []
    /// Decode jobs the room asked for (stream, job, and whether it was held), and streams it stopped.
    private(set) var decodeJobs: [(stream: VideoDecodeStream, job: VideoDecodeJob, held: Bool)] = []
    private(set) var stoppedDecoders: [VideoDecodeStream] = []
    /// Pictures the room asked to have encoded (`RoomOutput.encode`), and the libvpx speed of the last.
    private(set) var encodeRequests = 0
    private(set) var lastCPUUsed: Int?
    private(set) var lastProfile: Int?
    /// When set, the time each encode is said to take (`Room.encoded`'s `encodeTime`), in place
    /// of none: a slow encoder's, on the manual clock.
    var encodeTime: Duration?
    private let impairment: NetEm<WirePacket>.Impairment
    private let seed: UInt64
    private var nextAudio: Instant
    private var nextVideo: Instant

    /// The room's wall clock: NTP 3_900_000_000 s at the harness's start.
    static let wallClock = NTPClockMapping(instant: .milliseconds(10_000), ntp: NTPTimestamp(rawValue: 3_900_000_000 << 32))

    /// A small canvas, so that a test of seconds of media runs in a fraction of a second.
    static let canvas = VideoSize(width: 320, height: 192)

    init(impairment: NetEm<WirePacket>.Impairment = .clean(), seed: UInt64 = 1, canvas: VideoSize = RoomHarness.canvas) {
        var configuration = RoomConfiguration()
        configuration.width = canvas.width
        configuration.height = canvas.height
        configuration.fps = 15
        configuration.bitrate = 400_000
        room = Room(name: "memory", configuration: configuration, labels: nil, wallClock: Self.wallClock, seed: seed)
        self.impairment = impairment
        self.seed = seed
        nextAudio = now
        nextVideo = now
    }

    /// A participant joins; its transport is up at once (the handshake is not what this tests).
    @discardableResult
    func join(_ identity: String, tone: Double, colour: YUVColor, sendOnly: Bool = false) throws -> MemoryPeer {
        let peer = try MemoryPeer(identity: identity, tone: tone, colour: colour, index: peers.count, impairment: impairment,
                                  seed: seed &+ UInt64(peers.count) &* 97, sendOnly: sendOnly, now: now)
        peer.id = "p-\(identity)"
        room.join(id: peer.id, identity: identity, name: nil, negotiated: peer.negotiated, seed: seed &+ UInt64(peers.count), now: now)
        room.connected(peer.id)
        room.secure(peer.id, now: now)
        peers.append(peer)
        try carryOut()
        return peer
    }

    /// A join whose transport never comes up (no ICE, no DTLS): it sends and receives nothing.
    /// A viewer of one participant's camera or screen (`Room.joinAsTrackViewer`): a peer that
    /// only receives, its first video m-line carrying that track.
    @discardableResult
    func joinTrackViewer(of publisher: String, source: VideoSource = .camera) throws -> MemoryPeer {
        let viewer = try MemoryPeer(identity: "viewer", tone: 0, colour: YUVColor(y: 0, u: 128, v: 128), index: 50 + peers.count,
                                    impairment: impairment, seed: seed &+ 77, receiveOnly: true, now: now)
        viewer.id = "v-\(peers.count)"
        try room.joinAsTrackViewer(id: viewer.id, negotiated: viewer.negotiated, publisher: publisher, source: source, seed: seed, now: now)
        room.connected(viewer.id)
        room.secure(viewer.id, now: now)
        peers.append(viewer)
        try carryOut()
        return viewer
    }

    /// A participant renegotiates (`Room.renegotiate`) with the session `offer` gives.
    func renegotiate(_ peer: MemoryPeer, _ offer: (MemoryPeer) throws -> NegotiatedSession) throws {
        room.renegotiate(peer.id, negotiated: try offer(peer), now: now)
        try carryOut()
    }

    /// Does `body` on the room at the harness's time, then carries out what it asked.
    @discardableResult
    func act<T>(_ body: (Room, Instant) throws -> T) throws -> T {
        let result = try body(room, now)
        try carryOut()
        return result
    }

    func joinWithoutConnecting(_ identity: String) throws -> String {
        let ghost = try MemoryPeer(identity: identity, tone: 1000, colour: YUVColor(y: 128, u: 128, v: 128), index: 90 + peers.count,
                                   impairment: impairment, seed: seed, now: now)
        let id = "p-\(identity)"
        room.join(id: id, identity: identity, name: nil, negotiated: ghost.negotiated, seed: seed, now: now)
        try carryOut()
        return id
    }

    func leave(_ peer: MemoryPeer) throws {
        room.leave(peer.id, now: now)
        peers.removeAll { $0 === peer }
        try carryOut()
    }

    /// Runs the room and its peers for `duration` of media time, in 5 ms steps.
    func run(for duration: Duration) throws {
        let end = now + duration
        while now < end {
            now = now + .milliseconds(5)
            if now >= nextAudio {
                nextAudio = nextAudio + .milliseconds(20)
                for peer in peers {
                    try peer.sendAudio(now: now)
                    peer.play(now: now)
                }
            }
            if now >= nextVideo {
                nextVideo = nextVideo + .milliseconds(66)
                for peer in peers { try peer.sendVideo(now: now) }
            }
            for peer in peers {
                for packet in peer.up.receive(now: now) {
                    switch packet {
                    case .rtp(let bytes): room.receiveRTP(bytes, from: peer.id, now: now)
                    case .rtcp(let bytes): room.receiveRTCP(bytes, from: peer.id, now: now)
                    }
                }
            }
            if let due = room.nextTimeout, due <= now { room.handleTimeout(now: now) }
            try carryOut()
            for peer in peers { try peer.receive(now: now) }
        }
    }

    /// Carries out the room's outputs: packets onto the peers' downlinks, pictures through real
    /// encoders (their frames go straight back), events into `events`.
    private func carryOut() throws {
        while let output = room.pollOutput() {
            switch output {
            case .sendRTP(let id, let bytes): peer(id)?.down.send(.rtp(bytes), now: now)
            case .sendRTCP(let id, let bytes): peer(id)?.down.send(.rtcp(bytes), now: now)
            case .encode(let request):
                if encoders[request.kind]?.generation != request.generation {
                    encoders[request.kind] = (request.generation, try VP8Encoder(request.configuration), request.scaledTo)
                }
                guard let encoder = encoders[request.kind] else { continue }
                encodeRequests += 1
                lastCPUUsed = request.configuration.cpuUsed
                lastProfile = request.configuration.profile
                try encoder.encoder.setCPUUsed(request.configuration.cpuUsed)
                try encoder.encoder.setProfile(request.configuration.profile)
                if request.keyFrame { encoder.encoder.requestKeyFrame() }
                let picture = encoder.scaledTo.map { request.picture.scaled(width: $0.width, height: $0.height) } ?? request.picture
                room.encoded(try encoder.encoder.encode(picture), kind: request.kind, generation: request.generation,
                             encodeTime: encodeTime ?? .zero, now: now)
            case .stopEncoder(let kind):
                encoders[kind] = nil
            case .decode(let request):
                decodeJobs.append((request.stream, request.job, holdsDecodes))
                if holdsDecodes { heldDecodes.append(request) } else { try decode(request) }
            case .stopDecoder(let stream):
                decoders[stream] = nil
                stoppedDecoders.append(stream)
            case .event(let event):
                events.append(event)
            case .recordingTick(let deadline):
                recorder?.tick(now: deadline)
            case .recordVideo(let frame):
                recordedFrames.append(frame)
                recorder?.recordEncodedVideo(frame)
            case .expired(let id):
                expired.append(id)
            case .closed(let id):
                closed.append(id)
                peers.removeAll { $0.id == id }
            }
        }
    }

    /// The main encoding's frames the room handed to recordings.
    private(set) var recordedFrames: [EncodedVideoFrame] = []
    /// When set, a recorder fed as the host feeds its recordings: the recording ticks, and the
    /// main encoding's frames as they are.
    var recorder: TrackRecorder?

    private func peer(_ id: String) -> MemoryPeer? { peers.first { $0.id == id } }

    /// Decodes one job with its stream's decoder and hands the result back to the room.
    private func decode(_ request: VideoDecodeRequest) throws {
        let session = try decoders[request.stream] ?? VideoDecodeSession(maximumPixels: request.maximumPixels)
        decoders[request.stream] = session
        room.pictureDecoded(session.decode(request.job), of: request.stream, now: now)
    }

    /// Decodes the jobs held while `holdsDecodes` was set, in order, at the harness's time.
    func releaseDecodes() throws {
        let held = heldDecodes
        heldDecodes.removeAll()
        for request in held { try decode(request) }
        try carryOut()
    }

    /// Encoders the room has running now.
    var encodersRunning: Int { encoders.count }
}
