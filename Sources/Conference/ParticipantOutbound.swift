import Media
import RTP
import SDP
import Streams
import Wire

/// What the room sends a participant, sans-IO: its mix on its first audio section's host SSRC,
/// and the composite on its first video section's host SSRC, re-headered from the room's
/// packets (its SSRC, payload type and sequence numbers, continuous across the encodings), each
/// packet with a transport-wide sequence number when the peer negotiated transport-cc; and
/// which encoding its feedback calls for; and on its other video sections the host sends on,
/// the tracks it subscribed to (`ForwardingSlot`). Returns bytes to send; sends nothing.
public struct ParticipantOutbound {
    /// A video section the host sends on besides the composite's: free, or carrying another
    /// participant's camera or screen as that one sends it (a subscription, seed 003).
    public struct ForwardingSlot {
        public let mid: String
        fileprivate var forwarder: RTPForwarder
        /// What it sent, for sender reports and NACKs (RFC 4585 §6.2.1).
        fileprivate var stream: RTPSendStream
        /// When to ask the sender for one more key frame after forwarding began at one: a
        /// receiver that lost that first key frame's leading packet has no earlier packet to NACK
        /// against and could only wait for a key frame nobody asked for. Asked
        /// `followUpKeyFrames` times, each wait twice the one before (1, 2, 4 s): on a lossy
        /// path a key frame of many packets can be lost again.
        fileprivate var followUpKeyFrameAt: Instant?
        fileprivate var followUpsAsked = 0
        /// The track it carries and how many subscriptions hold it; nil while free.
        public internal(set) var subscription: (track: TrackReference, count: Int)?
        public var ssrc: SSRC { forwarder.ssrc }
    }

    /// The video sections that carry subscriptions, in m-line order.
    public internal(set) var forwardingSlots: [ForwardingSlot] = []
    /// No composite: every video section it receives on is a forwarding slot (a viewer of one
    /// participant's track).
    let forwardsOnly: Bool
    /// Where its mix goes; nil when the host sends nothing on its audio section (sendonly peer).
    private var audioSender: AudioRTPSender?
    /// The mix as sent to it, through Streams' send stream (counts for sender reports, and a
    /// short history for NACKs).
    private var audioStream: RTPSendStream?
    /// Where the composite goes: the host SSRC, VP8 payload type and the next sequence number.
    private var videoOut: (ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16)?
    /// The composite as sent to it, through Streams' send stream: its retransmission history
    /// answers the participant's NACKs (RFC 4585 §6.2.1) with the packets as it was sent them.
    private var videoStream: RTPSendStream?
    /// Which encoding its feedback calls for; nil when it gets no video.
    private var chooser: CompositeEncodingChooser?
    /// Draws the random starts of streams added by renegotiation.
    private var generator: SplitMix64
    private let wallClock: NTPClockMapping
    private let room: RoomConfiguration
    /// The transport-cc header extension's id and the next transport-wide sequence number
    /// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2), when negotiated.
    private var transportWide: (id: UInt8, next: UInt16)?
    /// The composite encoding it is sent now; the room changes it at a key frame of another.
    public var videoEncoding: CompositeEncoding.Kind = .main
    /// It waits for a key frame of `wantedVideoEncoding` before it is sent more video: it is
    /// switching encodings, or resuming after a pause.
    public var awaitingKeyFrame = false
    /// Whether a key frame of `wantedVideoEncoding` was asked for (asked once per wait).
    public var videoSwitchRequested = false

    /// How much of the composite each receiver's history keeps for NACKs: about a second and a
    /// half at 1.5 Mbit/s (older packets are past use: the picture has moved on).
    static let retransmission: RetransmissionBuffer.Configuration = {
        var configuration = RetransmissionBuffer.Configuration()
        configuration.capacity = 256
        return configuration
    }()

    /// Resends of the composite may use at most this share of its encoding's bit rate (RFC 4588
    /// §7: repair must not crowd out the media); a request over it is answered when the receiver
    /// asks again, a round trip later.
    public static let retransmissionShare = 0.25
    /// The mix's resends: its packets are small and its rate low; a few lost in a row are
    /// worth resending whole.
    static let audioRetransmissionBudget = 8_000

    /// A participant's outbound streams: the mix and composite on its sections' host SSRCs, RTX
    /// on the composite when negotiated; `wallClock` maps instants to NTP time for the SRs.
    public init(negotiated: NegotiatedSession, seed: UInt64, wallClock: NTPClockMapping, configuration room: RoomConfiguration,
                forwardsOnly: Bool = false, now: Instant) {
        generator = SplitMix64(seed: seed)
        self.forwardsOnly = forwardsOnly
        self.wallClock = wallClock
        self.room = room
        follow(negotiated, renegotiated: false, now: now)
    }

    /// Follows the session as (re)negotiated: the mix goes on the first audio section the host
    /// sends on, the composite on the first such video section. A stream whose section stays
    /// goes on as it was (sequence numbers, SR counts, history); one whose section stopped ends;
    /// a new one starts, and new video waits for a key frame.
    public mutating func renegotiate(_ negotiated: NegotiatedSession, now: Instant) { follow(negotiated, renegotiated: true, now: now) }

    private mutating func follow(_ negotiated: NegotiatedSession, renegotiated: Bool, now: Instant) {
        let inbound = InboundSections(negotiated)
        let sections = inbound.sections
        let audioSection = sections.first { !$0.isVideo && $0.hostSender != nil }
        let videoSection = forwardsOnly ? nil : sections.first { $0.isVideo && $0.hostSender != nil }
        followForwardingSlots(sections.filter { $0.isVideo && $0.hostSender != nil && $0.mid != videoSection?.mid }, now: now)
        if let section = audioSection, let host = section.hostSender, audioSender?.ssrc.rawValue != host.ssrc {
            let sender = AudioRTPSender(ssrc: SSRC(rawValue: host.ssrc), payloadType: section.codecPayloadType,
                                        sequenceNumber: .random(in: 0...UInt16.max, using: &generator),
                                        timestamp: .random(in: 0...UInt32.max, using: &generator))
            var configuration = RTPSendStream.Configuration(ssrc: sender.ssrc, clockRate: 48_000)
            // Only for a receiver that agreed NACK on its audio (browsers do not for Opus): in a
            // room of hundreds, 64 kept packets each are megabytes the mix tick would churn.
            configuration.retransmission.capacity = section.nack ? 64 : 0
            configuration.retransmission.maxBytesPerSecond = Self.audioRetransmissionBudget
            audioSender = sender
            audioStream = RTPSendStream(configuration: configuration, clock: wallClock)
        } else if audioSection == nil {
            audioSender = nil
            audioStream = nil
        }
        if let section = videoSection, let host = section.hostSender, videoOut?.ssrc.rawValue != host.ssrc {
            let out = (ssrc: SSRC(rawValue: host.ssrc), payloadType: section.codecPayloadType,
                       sequenceNumber: UInt16.random(in: 0...UInt16.max, using: &generator))
            videoOut = out
            videoStream = RTPSendStream(configuration: Self.videoStream(section, host, bitrate: room.bitrate), clock: wallClock,
                                        firstRTXSequenceNumber: .random(in: 0...UInt16.max, using: &generator))
            chooser = CompositeEncodingChooser(hostVideo: out.ssrc, mainBitrate: room.bitrate, lowBitrate: room.lowBitrate,
                                               smallBitrate: room.smallBitrate)
            videoEncoding = .main
            // Added by renegotiation: it starts at a key frame of its encoding.
            awaitingKeyFrame = renegotiated
            videoSwitchRequested = false
        } else if videoSection == nil {
            videoOut = nil
            videoStream = nil
            chooser = nil
        }
        // The extension's id stays across renegotiations (RFC 8285 §6); the numbering goes on.
        transportWide = inbound.extensions.transportSequenceNumberID.map { ($0, transportWide?.next ?? .random(in: 0...UInt16.max, using: &generator)) }
    }

    /// Keeps the slots whose section stays (their numbering, history and subscription go on);
    /// those whose section stopped are gone with what they carried; new sections are free slots.
    private mutating func followForwardingSlots(_ sections: [InboundSections.Section], now: Instant) {
        let before = Dictionary(forwardingSlots.map { ($0.mid, $0) }, uniquingKeysWith: { first, _ in first })
        forwardingSlots = sections.compactMap { section -> ForwardingSlot? in
            guard let host = section.hostSender else { return nil }
            if let kept = before[section.mid], kept.ssrc.rawValue == host.ssrc { return kept }
            let ssrc = SSRC(rawValue: host.ssrc)
            let forwarder = RTPForwarder(ssrc: ssrc, payloadType: section.codecPayloadType,
                                         firstSequenceNumber: .random(in: 0...UInt16.max, using: &generator),
                                         firstTimestamp: .random(in: 0...UInt32.max, using: &generator), now: now)
            return ForwardingSlot(mid: section.mid, forwarder: forwarder,
                                  stream: RTPSendStream(configuration: Self.videoStream(section, host, bitrate: Self.forwardedBitrate),
                                                        clock: wallClock,
                                                        firstRTXSequenceNumber: .random(in: 0...UInt16.max, using: &generator)))
        }
    }

    /// The bit rate a forwarded track's resend budget is reckoned on: a camera at up to 2.5 Mbit/s.
    static let forwardedBitrate = 2_500_000

    /// A video stream the host sends on `section`: RTX when the section negotiated it (RFC
    /// 4588), a history for NACKs whose resends get `retransmissionShare` of `bitrate`.
    private static func videoStream(_ section: InboundSections.Section, _ host: HostSender, bitrate: Int) -> RTPSendStream.Configuration {
        var configuration = RTPSendStream.Configuration(ssrc: SSRC(rawValue: host.ssrc), clockRate: 90_000)
        if let rtxSSRC = host.rtxSSRC, let rtxPayloadType = section.rtxPayloadType {
            configuration.rtx = RTXConfiguration(ssrc: SSRC(rawValue: rtxSSRC), payloadType: rtxPayloadType,
                                                 associatedPayloadType: section.codecPayloadType)
        }
        configuration.retransmission = retransmission
        configuration.retransmission.maxBytesPerSecond = retransmissionBudget(bitrate: bitrate)
        return configuration
    }

    /// Binds `track` to the slot at `index` (one more subscription), or raises its count when it
    /// carries it already; a newly bound slot waits for the track's next key frame.
    mutating func subscribe(slot index: Int, to track: TrackReference) -> Int {
        if let subscription = forwardingSlots[index].subscription, subscription.track == track {
            forwardingSlots[index].subscription = (track, subscription.count + 1)
        } else {
            forwardingSlots[index].subscription = (track, 1)
            forwardingSlots[index].forwarder.restart()
        }
        return forwardingSlots[index].subscription?.count ?? 0
    }

    /// One subscription fewer to the slot at `index` (every one with `all`); the slot is free at
    /// zero. Returns the count left.
    mutating func unsubscribe(slot index: Int, all: Bool) -> Int {
        guard let subscription = forwardingSlots[index].subscription else { return 0 }
        let count = all ? 0 : subscription.count - 1
        forwardingSlots[index].subscription = count > 0 ? (subscription.track, count) : nil
        return count
    }

    /// The slots that carry `track` wait for its next key frame (its forwarding resumes).
    mutating func restartForwarding(of track: TrackReference) {
        for index in forwardingSlots.indices where forwardingSlots[index].subscription?.track == track {
            forwardingSlots[index].forwarder.restart()
        }
    }

    /// A packet of `track` as this participant gets it on each slot that carries it (none while
    /// a slot waits for a key frame), serialized and kept for NACKs. `keyFrameWanted`: a slot
    /// waits for one, or its follow-up key frame is due.
    mutating func forwardedPackets(_ packet: RTPPacket, of track: TrackReference, now: Instant) -> (packets: [[UInt8]], keyFrameWanted: Bool) {
        var out: [[UInt8]] = []
        var keyFrameWanted = false
        for index in forwardingSlots.indices where forwardingSlots[index].subscription?.track == track {
            let wasWaiting = forwardingSlots[index].forwarder.waitingForKeyFrame
            guard let forwarded = forwardingSlots[index].forwarder.forward(packet, now: now) else {
                keyFrameWanted = keyFrameWanted || forwardingSlots[index].forwarder.waitingForKeyFrame
                continue
            }
            if wasWaiting {
                forwardingSlots[index].followUpKeyFrameAt = now + Self.followUpKeyFrameDelay
                forwardingSlots[index].followUpsAsked = 0
            } else if let due = forwardingSlots[index].followUpKeyFrameAt, now >= due {
                let asked = forwardingSlots[index].followUpsAsked + 1
                forwardingSlots[index].followUpsAsked = asked
                forwardingSlots[index].followUpKeyFrameAt = asked < Self.followUpKeyFrames
                    ? now + Self.followUpKeyFrameDelay * (1 << asked) : nil
                keyFrameWanted = true
            }
            guard let bytes = stampedBytes(forwarded, now: now) else { continue }
            forwardingSlots[index].stream.packetSent(bytes: bytes, timestamp: forwarded.timestamp, payloadSize: forwarded.payload.count,
                                                     now: now)
            out.append(bytes)
        }
        return (out, keyFrameWanted)
    }

    /// How long after forwarding began the follow-up key frame is asked for: past a repair's
    /// round trip, soon enough that a receiver which missed the first sees within about a second.
    static let followUpKeyFrameDelay: Duration = .seconds(1)
    static let followUpKeyFrames = 3

    /// `track` ended: the slots that carried it are free, each with its RTCP BYE (RFC 3550
    /// §6.6) to send, after a report on what it sent.
    mutating func endSubscriptions(to track: TrackReference, now: Instant) -> [[UInt8]] {
        var goodbyes: [[UInt8]] = []
        for index in forwardingSlots.indices where forwardingSlots[index].subscription?.track == track {
            forwardingSlots[index].subscription = nil
            let slot = forwardingSlots[index]
            let report: RTCPPacket = slot.stream.makeSenderReport(now: now).map { .senderReport($0) }
                ?? .receiverReport(ReceiverReport(ssrc: slot.ssrc))
            if let bytes = try? RTCPPacket.serializeCompound([report, .goodbye(Goodbye(sources: [slot.ssrc], reasonText: "track ended"))]) {
                goodbyes.append(bytes)
            }
        }
        return goodbyes
    }

    /// Tracks whose forwarded packets it asked for (NACK) past repair, since the last
    /// `forwardedKeyFrameRequests`.
    private var forwardedRepairsRefused: [TrackReference] = []

    /// The tracks its PLI or FIR about a forwarding slot ask a key frame of (RFC 4585 §6.3.1,
    /// RFC 5104 §4.3.1), and those whose packets it NACKed past repair: the room asks their
    /// senders.
    mutating func forwardedKeyFrameRequests(_ packets: [RTCPPacket]) -> [TrackReference] {
        defer { forwardedRepairsRefused.removeAll() }
        var asked: [SSRC] = []
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli): asked.append(pli.mediaSSRC)
            case .fullIntraRequest(let fir): asked += fir.entries.map(\.ssrc)
            default: break
            }
        }
        var tracks = forwardingSlots.filter { asked.contains($0.ssrc) }.compactMap { $0.subscription?.track }
        for track in forwardedRepairsRefused where !tracks.contains(track) { tracks.append(track) }
        return tracks
    }

    /// The composite's encoding changed: its resend budget follows the new rate.
    public mutating func videoBitrateChanged(_ bitrate: Int) {
        videoStream?.setRetransmissionBudget(bytesPerSecond: Self.retransmissionBudget(bitrate: bitrate))
    }

    /// Resend bytes per second for an encoding of `bitrate` bits per second.
    static func retransmissionBudget(bitrate: Int) -> Int { Int(Double(bitrate) * retransmissionShare / 8) }

    /// The SRs of what it is sent (RFC 3550 §6.4.1), for its next regular report.
    public func senderReports(now: Instant) -> [SenderReport] {
        ([audioStream, videoStream].compactMap { $0?.makeSenderReport(now: now) })
            + forwardingSlots.compactMap { $0.stream.makeSenderReport(now: now) }
    }

    /// Packets of its composite and mix sent again because it asked (NACK).
    public var packetsResent: Int64 {
        (videoStream?.retransmissionBuffer.packetsResent ?? 0) + (audioStream?.retransmissionBuffer.packetsResent ?? 0)
            + forwardingSlots.reduce(0) { $0 + $1.stream.retransmissionBuffer.packetsResent }
    }
    /// Packets it asked for that no resend could bring (too old or unknown).
    public var resendsRefused: Int64 { videoStream?.retransmissionBuffer.requestsUnanswerable ?? 0 }

    /// The loss it last reported about its mix (RFC 3550 fraction lost, in percent).
    public var mixLossPercent: Int? {
        audioStream?.lastReceptionReport.map { Int((Double($0.fractionLost) * 100 / 256).rounded()) }
    }

    /// Whether it is sent a mix.
    public var receivesAudio: Bool { audioSender != nil }
    /// Whether it is sent the composite.
    public var receivesVideo: Bool { videoOut != nil }
    /// The encoding it should be sent, from its feedback; nil while its video is paused.
    public var wantedVideoEncoding: CompositeEncoding.Kind? { chooser?.wantedEncoding ?? .main }
    /// Its bandwidth estimate (bits/s); nil when it receives no video.
    public func bandwidthEstimate(now: Instant) -> Int? { chooser?.estimate.estimate(now: now).bitsPerSecond }

    /// Gives `packet` the next transport-wide sequence number (when negotiated), serializes it,
    /// and records it for the transport-cc feedback to come.
    private mutating func stampedBytes(_ packet: RTPPacket, now: Instant) -> [UInt8]? {
        var packet = packet
        if let wide = transportWide {
            packet.setHeaderExtensionData(id: wide.id, TransportSequenceNumber(wide.next).extensionData[...])
        }
        guard let bytes = try? packet.serialized() else { return nil }
        if let wide = transportWide {
            chooser?.packetSent(transportSequenceNumber: wide.next, size: bytes.count, now: now)
            transportWide?.next &+= 1
        }
        return bytes
    }

    /// Retransmissions get a transport-wide number of their own, as any packet sent does.
    private mutating func restamped(_ retransmissions: [[UInt8]], now: Instant) -> [[UInt8]] {
        guard transportWide != nil else { return retransmissions }
        return retransmissions.compactMap { bytes in (try? RTPPacket.parse(bytes)).flatMap { stampedBytes($0, now: now) } }
    }

    /// One packet of its mix (one 20 ms Opus frame), serialized; nil when it gets no mix. Its
    /// timestamp stands for `now`, the instant the mix was taken (the SRs' NTP↔RTP mapping).
    public mutating func mixPacket(_ payload: [UInt8], now: Instant) -> [UInt8]? {
        guard let packet = audioSender?.packet(payload), let bytes = stampedBytes(packet, now: now) else { return nil }
        audioStream?.packetSent(bytes: bytes, timestamp: packet.timestamp, payloadSize: payload.count, now: now)
        return bytes
    }

    /// One encoded frame of the composite as this participant gets it: the room's packets with
    /// its SSRC, payload type and sequence numbers; payload and timestamp unchanged. The
    /// timestamp stands for `captureTime`, the instant the picture was drawn for.
    public mutating func compositePackets(_ packets: [RTPPacket], captureTime: Instant, now: Instant) -> [[UInt8]] {
        guard var out = videoOut else { return [] }
        var serialized: [[UInt8]] = []
        serialized.reserveCapacity(packets.count)
        var bytes = 0
        for var packet in packets {
            packet.ssrc = out.ssrc
            packet.payloadType = out.payloadType
            packet.sequenceNumber = out.sequenceNumber
            out.sequenceNumber &+= 1
            if let data = stampedBytes(packet, now: now) {
                serialized.append(data)
                bytes += data.count
                videoStream?.packetSent(bytes: data, timestamp: packet.timestamp, payloadSize: packet.payload.count, now: now,
                                        captureTime: captureTime)
            }
        }
        videoOut = out
        chooser?.videoSent(bytes: bytes, now: now)
        return serialized
    }

    /// A key frame request about the composite it gets.
    public enum KeyFrameRequest: Equatable, Sendable {
        case pictureLoss(sender: SSRC)
        case fullIntra(sender: SSRC, sequenceNumber: UInt8)
    }

    /// Takes its RTCP about what it is sent: reports and REMB feed the bandwidth estimate; NACKs
    /// are answered from the history (`retransmissions`: RTX where negotiated); PLI and FIR about
    /// its host video SSRC are returned for the room's key frame pacer, and so is a NACK the
    /// history could not answer: that picture is past repair, and a key frame heals it sooner
    /// than the NACKs the receiver would send until its own timeout.
    public mutating func receiveRTCP(_ packets: [RTCPPacket], now: Instant) -> (keyFrameRequests: [KeyFrameRequest], retransmissions: [[UInt8]]) {
        chooser?.receive(packets, now: now)
        let unanswerable = resendsRefused
        var resends = (videoStream?.receivedRTCP(packets, now: now) ?? []) + (audioStream?.receivedRTCP(packets, now: now) ?? [])
        for index in forwardingSlots.indices {
            let unanswerable = forwardingSlots[index].stream.retransmissionBuffer.requestsUnanswerable
            resends += forwardingSlots[index].stream.receivedRTCP(packets, now: now)
            // A NACK for a forwarded packet it never held (lost on the way in and not repaired
            // in time): that picture is past repair, as for the composite; its sender is asked
            // for a key frame (a subscriber that started on a key frame whose first packet came
            // late by RTX waited for one otherwise until its own jitter buffer gave up).
            if forwardingSlots[index].stream.retransmissionBuffer.requestsUnanswerable > unanswerable,
               let track = forwardingSlots[index].subscription?.track {
                forwardedRepairsRefused.append(track)
            }
        }
        let retransmissions = restamped(resends, now: now)
        guard let out = videoOut else { return ([], retransmissions) }
        var requests: [KeyFrameRequest] = []
        if resendsRefused > unanswerable { requests.append(.pictureLoss(sender: out.ssrc)) }
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli) where pli.mediaSSRC == out.ssrc:
                requests.append(.pictureLoss(sender: pli.senderSSRC))
            case .fullIntraRequest(let fir):
                for entry in fir.entries where entry.ssrc == out.ssrc {
                    requests.append(.fullIntra(sender: fir.senderSSRC, sequenceNumber: entry.sequenceNumber))
                }
            default:
                break
            }
        }
        return (requests, retransmissions)
    }
}
