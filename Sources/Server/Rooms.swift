import Conference
import Sockets
import Compositing
import Foundation
import Media
import RTP
import SDP
import Streams
import Transport
import Wire

/// A participant's connection as the host sees it before any mixing: its transport on the media
/// port, and its receive side: every source it sends is tracked (loss, jitter), lost packets are
/// NACKed and recovered (RTX unwrapped), keyframes are asked for, and receiver reports go back at
/// the RFC 3550 interval. Its first audio section's media feeds `audioReceiver` (jitter buffer and
/// decoder), which the room's `RoomAudio` tick reads; the room's mix for it goes out on that
/// section's host sender. Its first video section's media is decoded (`VideoReceiver`) into its
/// `cameraTrack`, which the room's `RoomVideo` composes; the composite goes out on that section's
/// host sender. Lives on the media loop thread.
final class ParticipantSession: PeerEventSink {
    let id: String
    let identity: String
    let name: String?
    let room: String
    private(set) var state = "connecting"
    /// New media packets from the participant (duplicates and RTX padding not counted).
    private(set) var packetsReceived = 0
    private(set) var bytesReceived = 0
    let port: MediaPort
    /// The participant's microphone, played out one 20 ms frame per room tick; nil when its
    /// offer has no audio section or the decoder could not start.
    let audioReceiver: AudioReceiver?
    /// Where its mix goes: the first audio section's host sender and Opus payload type; nil when
    /// the host sends nothing on that section (the peer is sendonly).
    private var audioSender: AudioRTPSender?
    /// The index of the first audio section, whose media is the microphone.
    private let audioSection: Int?
    /// The participant's camera ("identity/camera"): pictures of its first video section. Ends
    /// when it leaves.
    let cameraTrack: VideoTrack
    /// Decodes the first video section; nil when there is none or the decoder could not start.
    private let videoReceiver: VideoReceiver?
    /// The index of the first video section, whose media is the camera.
    private let videoSection: Int?
    /// Set by the video receiver's key frame callback; turned into a PLI after the packet.
    private var videoKeyFrameNeeded = false
    /// Since when camera packets have come without completing a picture (a frame missing a
    /// packet holds back every frame after it); nil while pictures come.
    private var videoStalledSince: Instant?
    /// The camera's media SSRC, once a packet came.
    private var cameraSSRC: SSRC?
    /// How long a frame may miss packets (NACK's chance) before it is given up.
    static let incompleteFrameTimeout: Duration = .milliseconds(150)
    /// Where the composite goes: the first video section's host SSRC, VP8 payload type and the
    /// next sequence number; nil when the host sends nothing there.
    private var videoOut: (ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16)?
    /// The room's video, which takes this participant's key frame requests.
    weak var video: RoomVideo?
    /// Whether its bandwidth estimate calls for the room's lower encoding; nil when the host
    /// sends it no video.
    private var bandwidth: LowBandwidthDetector?
    /// The composite encoding it is sent now; `RoomVideo` changes it at a key frame of the other.
    var videoEncoding: RoomVideo.Encoding.Kind = .main
    /// Whether a key frame of `wantedVideoEncoding` was asked for its switch (asked once).
    var videoSwitchRequested = false
    /// The encoding it should be sent, from its bandwidth estimate (with hysteresis).
    var wantedVideoEncoding: RoomVideo.Encoding.Kind { bandwidth?.isLow == true ? .low : .main }
    /// Its bandwidth estimate (bits/s), for tests and logs; nil when it receives no video.
    func bandwidthEstimate(now: Instant) -> Int? { bandwidth?.estimate.estimate(now: now).bitsPerSecond }
    private var peerID: MediaPort.PeerID?
    private var inbound: InboundSections
    private var receiver: PeerReceiver
    /// Packets the participant sent that never arrived (RFC 3550 A.3, over its sources).
    var packetsLost: Int64 { receiver.statistics.reduce(0) { $0 + $1.cumulativeLost } }
    /// Time spent assembling and decoding this participant's camera.
    private(set) var decodeTime = Duration.zero
    /// Its audio packets played as silence without decoding (their RFC 6464 level said so).
    var silentAudioPacketsSkipped: Int { audioReceiver?.silentPacketsSkipped ?? 0 }
    /// Its camera's frames: decoded, lost, refused or dropped; nil when it sends no video.
    var cameraStatistics: VideoReceiver.Statistics? { videoReceiver?.statistics }
    /// NACKs and keyframe requests the host sent this participant.
    var nacksSent: Int { receiver.nacksSent }
    var keyFrameRequestsSent: Int { receiver.keyFrameRequestsSent }
    private var timer: EventLoop.TimerToken?
    private var timerDeadline: Instant?
    /// Sections (by index) whose first media has arrived: their track is published.
    private var published: Set<Int> = []
    let events: RoomEventHub
    private let onEnd: (ParticipantSession) -> Void

    /// A viewer (`POST …/viewers`) receives the composite and the whole mix, and has no tile.
    let isViewer: Bool

    init(id: String, identity: String, name: String?, room: String, negotiated: NegotiatedSession, port: MediaPort,
         events: RoomEventHub, isViewer: Bool = false, onEnd: @escaping (ParticipantSession) -> Void) {
        self.isViewer = isViewer
        self.id = id
        self.identity = identity
        self.name = name
        self.room = room
        self.port = port
        self.events = events
        self.onEnd = onEnd
        let inbound = InboundSections(negotiated)
        self.inbound = inbound
        let audioSection = inbound.sections.firstIndex { !$0.isVideo }
        self.audioSection = audioSection
        audioReceiver = audioSection.flatMap { _ in
            do { return try AudioReceiver(channels: 1) } catch {
                StartFailures.shared.record("opus-decoder", error)
                return nil
            }
        }
        audioSender = audioSection.flatMap { index in
            let section = inbound[index]
            return section.hostSender.map { AudioRTPSender(ssrc: SSRC(rawValue: $0.ssrc), payloadType: section.codecPayloadType) }
        }
        let videoSection = inbound.sections.firstIndex { $0.isVideo }
        self.videoSection = videoSection
        cameraTrack = VideoTrack(id: "\(identity)/camera")
        videoReceiver = videoSection.flatMap { _ in
            do { return try VideoReceiver(maximumPixels: 1920 * 1088) } catch {
                StartFailures.shared.record("vp8-decoder", error)
                return nil
            }
        }
        videoOut = videoSection.flatMap { index in
            let section = inbound[index]
            return section.hostSender.map { (SSRC(rawValue: $0.ssrc), section.codecPayloadType, UInt16.random(in: 0...UInt16.max)) }
        }
        bandwidth = videoOut.map { LowBandwidthDetector(hostVideo: $0.ssrc) }
        let sender = negotiated.media.compactMap(\.hostSender).first
        receiver = PeerReceiver(localSSRC: SSRC(rawValue: sender?.ssrc ?? UInt32.random(in: 1...UInt32.max)),
                                cname: sender?.cname ?? "tessera", reducedSize: negotiated.media.allSatisfy(\.reducedSizeRTCP),
                                seed: UInt64.random(in: 0...UInt64.max), now: port.loop.clock.now())
        for section in inbound.sections {
            if let ssrc = section.mediaSSRC { receiver.add(Self.source(section, ssrc: ssrc)) }
        }
        videoReceiver?.onKeyFrameNeeded = { [weak self] in self?.videoKeyFrameNeeded = true }
    }

    func attach(_ transport: PeerTransport, localUfrag: String) {
        peerID = port.add(transport, localUfrag: localUfrag, sink: self)
    }

    /// Leaves: the tracks end, the transport is dropped and the room forgets the participant.
    /// Idempotent.
    func end(reason: String = "left") {
        guard let peerID else { return }
        self.peerID = nil
        state = "left"
        if let timer { port.loop.cancel(timer) }
        port.remove(peerID)
        cameraTrack.end()
        for index in published.sorted() {
            events.publish(RoomEvent(.trackEnded, room: room, participant: id, identity: identity, source: source(of: index)))
        }
        if !isViewer { events.publish(RoomEvent(.left, room: room, participant: id, identity: identity, reason: reason)) }
        onEnd(self)
    }

    /// The contract's track names: the first audio section is the microphone, the first video
    /// section the camera, a second video section the screen.
    private func source(of index: Int) -> String {
        guard inbound[index].isVideo else { return "microphone" }
        let videoBefore = inbound.sections[..<index].filter(\.isVideo).count
        return videoBefore == 0 ? "camera" : "screen"
    }

    func peer(_ peer: MediaPort.PeerID, didEmit event: PeerTransport.Event) {
        let now = port.loop.clock.now()
        switch event {
        case .iceConnected: state = "connected"
        case .secure:
            state = "secure"
            if videoOut != nil { video?.receiverStarted() }
        case .rtp(let bytes): receive(bytes, now: now)
        case .rtcp(let bytes):
            guard let packets = try? RTCPPacket.parseCompound(bytes) else { return }
            receiver.receiveRTCP(packets, now: now)
            bandwidth?.receive(packets, now: now)
            takeKeyFrameRequests(packets)
        case .failed(let failure):
            end(reason: failure == .consentLost ? "consent lost" : "transport failed")
            return
        }
        if state == "secure" { serviceRTCP(now: now) }
    }

    private func receive(_ bytes: [UInt8], now: Instant) {
        guard let packet = try? RTPPacket.parse(bytes), let (index, _) = inbound.classify(packet) else { return }
        // A source learned from this packet (or its RTX stream) joins the receiver.
        let section = inbound[index]
        if let ssrc = section.mediaSSRC { receiver.add(Self.source(section, ssrc: ssrc)) }
        if case .media(let media) = receiver.receive(packet, now: now) {
            packetsReceived += 1
            bytesReceived += media.payload.count
            if index == audioSection, let audioReceiver {
                // A malformed level is no level: the packet is decoded as any other.
                let level = (try? media.headerExtension(AudioLevel.self, in: inbound.extensions)) ?? nil
                audioReceiver.receive(payload: Array(media.payload), sequenceNumber: media.sequenceNumber,
                                      timestamp: media.timestamp, arrival: now, level: level)
            }
            if index == videoSection, let videoReceiver {
                cameraSSRC = media.ssrc
                let wasWaiting = videoReceiver.isWaitingForKeyFrame
                let began = ContinuousClock.now
                let pictures = videoReceiver.receive(media, now: now)
                decodeTime += ContinuousClock.now - began
                take(pictures, now: now, wasWaiting: wasWaiting)
            }
            if published.insert(index).inserted {
                // A track whose decoder could not start ends as it arrives, with the reason.
                let undecodable = (index == audioSection && audioReceiver == nil) || (index == videoSection && videoReceiver == nil)
                events.publish(RoomEvent(undecodable ? .trackEnded : .trackPublished, room: room, participant: id, identity: identity,
                                         source: source(of: index), reason: undecodable ? "decoder failed to start" : nil))
            }
        }
    }

    /// Identities this participant chose not to hear (`PATCH … {"hear": {"bob": false}}`).
    var notHeard: Set<String> = []
    /// Muted by a `PATCH … {"muted": {"audio": true}}`: its voice is in no mix.
    var audioMuted = false
    /// Muted video: its tile shows the placeholder.
    var videoMuted = false

    /// Whether the participant is sent a mix (its first audio section receives from the host).
    var receivesAudio: Bool { audioSender != nil }

    /// Sends one packet of the participant's mix (one 20 ms Opus frame); false while the
    /// transport is not yet secure (nothing is queued: a mix is worth nothing late) or the
    /// participant receives no audio. The caller flushes the port after a round of sends.
    func sendAudio(_ payload: [UInt8]) -> Bool {
        guard let peerID, state == "secure", audioSender != nil, let packet = audioSender?.packet(payload) else { return false }
        return port.sendRTP(packet, to: peerID)
    }

    /// Pushes decoded camera pictures and turns the receiver's key frame needs into PLI.
    private func take(_ pictures: [I420Frame], now: Instant, wasWaiting: Bool) {
        for picture in pictures { cameraTrack.push(picture, now: now) }
        videoStalledSince = pictures.isEmpty ? (videoStalledSince ?? now) : nil
        guard let cameraSSRC, let videoReceiver else { return }
        if videoKeyFrameNeeded {
            videoKeyFrameNeeded = false
            receiver.requestKeyFrame(ssrc: cameraSSRC, now: now)
        } else if wasWaiting && !videoReceiver.isWaitingForKeyFrame {
            receiver.keyFrameReceived(ssrc: cameraSSRC)
        }
    }

    /// Gives up on camera frames that have missed packets for `incompleteFrameTimeout` (NACK
    /// has had its chance), so that the frames behind them, or a key frame, can come. The room's
    /// video tick calls it.
    func abandonStalledVideo(now: Instant) {
        guard let videoReceiver, let since = videoStalledSince, now - since >= Self.incompleteFrameTimeout else { return }
        let wasWaiting = videoReceiver.isWaitingForKeyFrame
        take(videoReceiver.abandonIncompleteFrames(now: now), now: now, wasWaiting: wasWaiting)
        videoStalledSince = nil
        if state == "secure" { serviceRTCP(now: now) }
    }

    /// Whether the participant can be sent the composite now (secure, and its first video
    /// section receives from the host).
    var receivesVideoNow: Bool { peerID != nil && state == "secure" && videoOut != nil }

    /// Sends one encoded frame of the composite: the room's packets (packetized once) with this
    /// participant's SSRC, payload type and sequence numbers; payload and timestamp unchanged.
    /// False while it cannot receive. The caller flushes the port after a round of sends.
    func sendVideo(_ packets: [RTPPacket]) -> Bool {
        guard let peerID, state == "secure", var out = videoOut else { return false }
        var sent = 0
        for var packet in packets {
            packet.ssrc = out.ssrc
            packet.payloadType = out.payloadType
            packet.sequenceNumber = out.sequenceNumber
            out.sequenceNumber &+= 1
            if let bytes = try? packet.serialized() {
                port.sendRTP(bytes, to: peerID)
                sent += bytes.count
            }
        }
        videoOut = out
        bandwidth?.videoSent(bytes: sent, now: port.loop.clock.now())
        return true
    }

    /// PLI and FIR about the host's video SSRC for this participant go to the room's pacer of
    /// the encoding it is sent now.
    private func takeKeyFrameRequests(_ packets: [RTCPPacket]) {
        guard let out = videoOut, let video else { return }
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli) where pli.mediaSSRC == out.ssrc:
                video.pictureLossIndicated(by: pli.senderSSRC, encoding: videoEncoding)
            case .fullIntraRequest(let fir):
                for entry in fir.entries where entry.ssrc == out.ssrc {
                    video.fullIntraRequested(by: fir.senderSSRC, sequenceNumber: entry.sequenceNumber, encoding: videoEncoding)
                }
            default:
                break
            }
        }
    }

    /// Sends the RTCP that is due and sets the timer for the next.
    private func serviceRTCP(now: Instant) {
        guard let peerID else { return }
        for compound in receiver.pollRTCP(now: now) { port.sendRTCP(compound, to: peerID) }
        port.flush()
        guard let next = receiver.nextTimeout else { return }
        if let timerDeadline, timerDeadline <= next, timerDeadline > now { return }
        if let timer { port.loop.cancel(timer) }
        timerDeadline = next
        timer = port.loop.schedule(at: next) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.timerDeadline = nil
            self.serviceRTCP(now: self.port.loop.clock.now())
        }
    }

    private static func source(_ section: InboundSections.Section, ssrc: SSRC) -> PeerReceiver.Source {
        var rtx: RTXConfiguration?
        if let rtxSSRC = section.rtxSSRC, let rtxPayloadType = section.rtxPayloadType {
            rtx = RTXConfiguration(ssrc: rtxSSRC, payloadType: rtxPayloadType, associatedPayloadType: section.codecPayloadType)
        }
        return PeerReceiver.Source(mediaSSRC: ssrc, clockRate: section.clockRate, isVideo: section.isVideo, rtx: rtx,
                                   nack: section.nack)
    }

    var summary: ParticipantSummary {
        ParticipantSummary(id: id, identity: identity, name: name, state: state,
                           packetsReceived: packetsReceived, bytesReceived: bytesReceived,
                           notHeard: notHeard.sorted(), muted: .init(audio: audioMuted, video: videoMuted))
    }
}

/// A participant in the API's answers.
struct ParticipantSummary: Codable, Sendable {
    struct Muted: Codable, Sendable {
        let audio: Bool
        let video: Bool
    }
    let id: String
    let identity: String
    let name: String?
    let state: String
    let packetsReceived: Int
    let bytesReceived: Int
    /// Identities this participant does not hear.
    let notHeard: [String]
    let muted: Muted
}

/// Rooms by name, each a set of participants by identity, its audio tick and its video. A room is made by
/// its first join (which starts its `RoomAudio`) and closed when its last participant leaves
/// (which stops it). Touched only on the media loop thread.
final class RoomDirectory {
    struct Limits {
        var maxRooms: Int
        var maxParticipantsPerRoom: Int
    }
    enum JoinRefusal {
        case identityPresent, roomFull, hostFull
    }

    let limits: Limits
    private(set) var rooms: [String: [String: ParticipantSession]] = [:]
    /// Each open room's audio: the mixer and its 20 ms tick.
    private(set) var audio: [String: RoomAudio] = [:]
    /// Each open room's video: the compositor, its 1/fps tick and its encoder thread.
    private(set) var video: [String: RoomVideo] = [:]
    let videoConfiguration: HostConfig.Video
    let faults: Set<HostConfig.Testing.Fault>
    let events: RoomEventHub

    init(limits: Limits, video: HostConfig.Video = HostConfig.Video(), faults: Set<HostConfig.Testing.Fault> = [], events: RoomEventHub) {
        self.limits = limits
        videoConfiguration = video
        self.faults = faults
        self.events = events
    }

    /// Why `identity` may not join `room` now, or nil when it may.
    func refusal(room: String, identity: String) -> JoinRefusal? {
        if let members = rooms[room] {
            if members[identity] != nil { return .identityPresent }
            if members.count >= limits.maxParticipantsPerRoom { return .roomFull }
        } else if rooms.count >= limits.maxRooms {
            return .hostFull
        }
        return nil
    }

    func add(_ participant: ParticipantSession) {
        rooms[participant.room, default: [:]][participant.identity] = participant
        let roomAudio = audio[participant.room] ?? RoomAudio(room: participant.room, loop: participant.port.loop,
                                                                returnsOwnVoice: faults.contains(.ownVoiceInMix))
        audio[participant.room] = roomAudio
        roomAudio.add(participant)
        let roomVideo = video[participant.room]
            ?? RoomVideo(room: participant.room, loop: participant.port.loop, configuration: videoConfiguration, events: events,
                         camerasInWrongSlots: faults.contains(.camerasInWrongSlots))
        video[participant.room] = roomVideo
        roomAudio.video = roomVideo
        roomVideo.add(participant)
    }

    func remove(_ participant: ParticipantSession) {
        guard rooms[participant.room]?[participant.identity] === participant else { return }
        rooms[participant.room]?[participant.identity] = nil
        audio[participant.room]?.remove(participant)
        video[participant.room]?.remove(participant)
        if rooms[participant.room]?.isEmpty == true {
            rooms[participant.room] = nil
            audio.removeValue(forKey: participant.room)?.stop()
            video.removeValue(forKey: participant.room)?.stop()
        }
    }

    func participant(room: String, id: String) -> ParticipantSession? {
        rooms[room]?.values.first { $0.id == id }
    }
}
