import RTP
import Wire

/// Everything the host receives from one peer over one transport: a receive stream per media
/// source (statistics, NACK, RTX unwrap, keyframe requests) and the RTCP the host owes that peer
/// in return: feedback as soon as it is due (RFC 4585 §3.5) and regular receiver reports at the
/// RFC 3550 §6.2 interval, each in a compound packet with the CNAME.
///
/// Sans-IO: feed `receive`/`receiveRTCP` with `now`; after each, and at `nextTimeout`, send what
/// `pollRTCP(now:)` returns.
public struct PeerReceiver: Sendable {
    /// A source the peer sends: its media SSRC, clock and repair.
    public struct Source: Sendable, Equatable {
        public var mediaSSRC: SSRC
        public var clockRate: UInt32
        public var isVideo: Bool
        public var rtx: RTXConfiguration?
        /// Whether `nack` was negotiated for it.
        public var nack: Bool

        public init(mediaSSRC: SSRC, clockRate: UInt32, isVideo: Bool, rtx: RTXConfiguration? = nil, nack: Bool) {
            self.mediaSSRC = mediaSSRC
            self.clockRate = clockRate
            self.isVideo = isVideo
            self.rtx = rtx
            self.nack = nack
        }
    }

    /// What became of a received packet.
    public enum Reception: Sendable, Equatable {
        /// New media (an RTX packet arrives here unwrapped): pass it on.
        case media(RTPPacket)
        /// A duplicate, a packet in probation, or an RTX packet carrying nothing.
        case dropped
        /// No source has this SSRC: the caller may add one and try again.
        case unknownSource
    }

    /// The SSRC the host reports and requests from.
    public let localSSRC: SSRC
    private let builder: RTCPCompoundBuilder
    private var scheduler: RTCPScheduler
    private var streams: [RTPReceiveStream] = []
    /// RTX SSRC → its configuration and the index of its media stream (an RTX stream may become
    /// known after its media stream, from its first packet).
    private var retransmissions: [SSRC: (configuration: RTXConfiguration, index: Int)] = [:]
    private var pending: [[RTCPPacket]] = []
    /// Arrival times of packets with a transport-wide sequence number, for transport-cc feedback.
    private var transportFeedback = TransportFeedbackRecorder()

    /// Reports go out at least every `minimumReportInterval` (about; randomized per RFC 3550 §6.3.1).
    public init(localSSRC: SSRC, cname: String, reducedSize: Bool, minimumReportInterval: Duration = .seconds(1),
                seed: UInt64, now: Instant) {
        self.localSSRC = localSSRC
        builder = RTCPCompoundBuilder(cname: cname, reducedSize: reducedSize)
        scheduler = RTCPScheduler(configuration: .init(minimumInterval: minimumReportInterval, sessionBandwidth: 2_000_000),
                                  seed: seed, now: now)
        scheduler.weSent = false
    }

    public var sources: [Source] {
        streams.map {
            Source(mediaSSRC: $0.configuration.mediaSSRC, clockRate: $0.configuration.clockRate,
                   isVideo: $0.configuration.keyFrameRequestMethod != nil, rtx: $0.configuration.rtx, nack: $0.nack != nil)
        }
    }

    /// Starts receiving `source`. For a source already known only a newly learned RTX stream is
    /// taken.
    public mutating func add(_ source: Source) {
        if let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == source.mediaSSRC }) {
            if let rtx = source.rtx, retransmissions[rtx.ssrc] == nil { retransmissions[rtx.ssrc] = (rtx, index) }
            return
        }
        var configuration = RTPReceiveStream.Configuration(localSSRC: localSSRC, mediaSSRC: source.mediaSSRC,
                                                           clockRate: source.clockRate, isVideo: source.isVideo, rtx: source.rtx)
        if !source.nack { configuration.nack = nil }
        // The SSRC comes from signalling or from a packet the transport authenticated: no probation.
        configuration.minimumSequential = 1
        streams.append(RTPReceiveStream(configuration: configuration))
        if let rtx = source.rtx { retransmissions[rtx.ssrc] = (rtx, streams.count - 1) }
        scheduler.members = streams.count + 1
    }

    /// Stops receiving the source of `mediaSSRC` (its m-line was stopped by renegotiation): no
    /// more reports, NACKs or key frame requests about it, and its packets are unknown.
    public mutating func remove(mediaSSRC: SSRC) {
        guard let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == mediaSSRC }) else { return }
        streams.remove(at: index)
        retransmissions = retransmissions.filter { $0.value.index != index }
            .mapValues { entry in (entry.configuration, entry.index > index ? entry.index - 1 : entry.index) }
        scheduler.members = streams.count + 1
    }

    /// Takes an RTP packet from the peer.
    public mutating func receive(_ packet: RTPPacket, now: Instant) -> Reception {
        if let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == packet.ssrc }) {
            return streams[index].receive(packet, now: now).isNew ? .media(packet) : .dropped
        }
        guard let (rtx, index) = retransmissions[packet.ssrc] else { return .unknownSource }
        // RFC 4588 §4: the OSN is the media sequence number; padding-only probes carry none.
        guard let media = try? RTXPacket.unwrap(packet, configuration: rtx, mediaSSRC: streams[index].configuration.mediaSSRC) else {
            return .dropped
        }
        let arrival = streams[index].receive(sequenceNumber: media.sequenceNumber, timestamp: media.timestamp,
                                             payloadSize: media.payload.count, now: now, isRetransmission: true)
        return arrival.isNew ? .media(media) : .dropped
    }

    /// Takes the peer's RTCP: its sender reports time our reports' LSR/DLSR (RFC 3550 §6.4.1).
    public mutating func receiveRTCP(_ packets: [RTCPPacket], now: Instant) {
        for case .senderReport(let report) in packets {
            guard let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == report.ssrc }) else { continue }
            streams[index].receivedSenderReport(report, now: now)
        }
    }

    /// A packet carrying transport-wide sequence number `sequenceNumber` arrived (any of the
    /// peer's streams): reported in the next transport-cc feedback.
    public mutating func transportPacketArrived(sequenceNumber: UInt16, now: Instant) {
        transportFeedback.packetArrived(sequenceNumber: sequenceNumber, now: now)
    }

    /// Transport-cc feedback packets sent.
    public var transportFeedbackSent: Int { transportFeedback.feedbackSent }

    /// The source's wall clock against its RTP clock, once its sender report came.
    public func senderClock(of ssrc: SSRC) -> SenderClock? {
        streams.first { $0.configuration.mediaSSRC == ssrc }?.senderClock
    }

    /// A keyframe is needed from the source (a decoder lost its reference): PLI until one comes.
    public mutating func requestKeyFrame(ssrc: SSRC, now: Instant) {
        guard let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == ssrc }) else { return }
        streams[index].requestKeyFrame(now: now)
    }

    /// A keyframe arrived from the source.
    public mutating func keyFrameReceived(ssrc: SSRC) {
        guard let index = streams.firstIndex(where: { $0.configuration.mediaSSRC == ssrc }) else { return }
        streams[index].keyFrameReceived()
    }

    /// Generic NACK packets sent (each may name several lost packets).
    public private(set) var nacksSent = 0
    /// Keyframe requests sent (PLI or FIR).
    public private(set) var keyFrameRequestsSent = 0

    /// The compound packets to send now, serialized: feedback that is due, and the regular report
    /// when due. `senderReports` are the SRs of the streams we send this peer (RFC 3550 §6.4.1),
    /// asked for only when the regular report is due: the one from `localSSRC` carries the report
    /// blocks in place of the RR, each other goes in a compound of its own with its CNAME.
    /// `extraFeedback` (the owner's own, as REMB) goes out with the feedback that is due.
    public mutating func pollRTCP(now: Instant, senderReports: (Instant) -> [SenderReport] = { _ in [] },
                                  extraFeedback: [RTCPPacket] = []) -> [[UInt8]] {
        var feedback: [RTCPPacket] = []
        for index in streams.indices { feedback += streams[index].pollFeedback(now: now) }
        if let transportCC = transportFeedback.pollFeedback(now: now, senderSSRC: localSSRC,
                                                            mediaSSRC: streams.first?.configuration.mediaSSRC ?? SSRC(rawValue: 0)) {
            feedback.append(.transportCC(transportCC))
        }
        feedback += extraFeedback
        for packet in feedback {
            switch packet {
            case .nack: nacksSent += 1
            case .pictureLossIndication, .fullIntraRequest: keyFrameRequestsSent += 1
            default: break
            }
        }
        if scheduler.isDue(now: now) {
            var reports: [ReceptionReport] = []
            for index in streams.indices {
                if let report = streams[index].makeReceptionReport(now: now) { reports.append(report) }
            }
            let senders = senderReports(now)
            scheduler.weSent = !senders.isEmpty
            let own = senders.first { $0.ssrc == localSSRC }
            let compound = builder.report(localSSRC: localSSRC, senderReport: own, reports: reports, feedback: feedback)
            guard let bytes = try? RTCPPacket.serializeCompound(compound) else { return [] }
            scheduler.reportSent(size: bytes.count, now: now)
            var out = [bytes]
            for report in senders where report.ssrc != localSSRC {
                if let more = try? RTCPPacket.serializeCompound(builder.report(localSSRC: report.ssrc, senderReport: report, reports: [])) {
                    out.append(more)
                }
            }
            return out
        }
        guard !feedback.isEmpty, let bytes = try? RTCPPacket.serializeCompound(builder.feedback(localSSRC: localSSRC, feedback)) else {
            return []
        }
        return [bytes]
    }

    /// When `pollRTCP` next has something to send.
    public var nextTimeout: Instant? {
        // Asked after every packet: a plain loop, no arrays built.
        var next = scheduler.nextReportAt
        if let feedback = transportFeedback.nextTimeout, feedback < next { next = feedback }
        for index in streams.indices {
            if let due = streams[index].nextTimeout, due < next { next = due }
        }
        return next
    }

    /// Reception statistics of each source, for metrics.
    public var statistics: [RTPReceiveStatistics] { streams.map(\.statistics) }
}

extension RTPArrival {
    /// Whether the packet is new media to pass on.
    var isNew: Bool {
        switch self {
        case .accepted, .restarted: true
        case .duplicate, .probation, .discontinuity: false
        }
    }
}
