import RTP
import Wire

/// One RTP stream we receive (a participant's camera or microphone): reception statistics for
/// the RR (RFC 3550 §6.4), NACK generation (RFC 4585 §6.2.1), RTX unwrap (RFC 4588 §4) and keyframe
/// requests (RFC 4585 §6.3.1 / RFC 5104 §4.3.1).
///
/// Drive it with `receive` for media packets and `receiveRetransmission` for packets of the RTX
/// SSRC, `receivedSenderReport` for the sender's SRs; after each input, drain `pollFeedback` and
/// send what it returns; call again at `nextTimeout`. Put `makeReceptionReport` in each regular
/// compound report.
public struct RTPReceiveStream: Sendable {
    /// What the stream is and how to repair it.
    public struct Configuration: Equatable, Sendable {
        /// Our SSRC, the sender of feedback.
        public var localSSRC: SSRC
        /// The sender's media SSRC.
        public var mediaSSRC: SSRC
        /// The media clock rate (90000 video, 48000 Opus).
        public var clockRate: UInt32
        /// The sender's RTX stream, when negotiated (RFC 4588).
        public var rtx: RTXConfiguration?
        /// NACK tuning; nil when `nack` is not negotiated.
        public var nack: NACKGenerator.Configuration? = NACKGenerator.Configuration()
        /// How to ask for keyframes; nil for audio or when neither PLI nor FIR is negotiated.
        public var keyFrameRequestMethod: KeyFrameRequestMethod?
        /// Time between repeated keyframe requests.
        public var keyFrameRetryInterval: Duration = .milliseconds(300)
        /// Probation packets before the source is valid (RFC 3550 A.1).
        public var minimumSequential = 2

        /// A receive stream for `mediaSSRC`; video gets PLI keyframe requests, audio none.
        public init(localSSRC: SSRC, mediaSSRC: SSRC, clockRate: UInt32, isVideo: Bool,
                    rtx: RTXConfiguration? = nil) {
            self.localSSRC = localSSRC
            self.mediaSSRC = mediaSSRC
            self.clockRate = clockRate
            self.rtx = rtx
            keyFrameRequestMethod = isVideo ? .pictureLossIndication : nil
            if !isVideo { nack?.requestsKeyFrameOnGiveUp = false }
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// Reception statistics.
    public private(set) var statistics: RTPReceiveStatistics
    /// Lost packets to ask for; nil without NACK.
    public private(set) var nack: NACKGenerator?
    /// Keyframe requests; nil for audio.
    public private(set) var keyFrames: KeyFrameRequester?
    /// RTX packets that could not be unwrapped (padding-only probes, garbage).
    public private(set) var unusableRetransmissions: Int64 = 0

    /// A receive stream with this configuration.
    public init(configuration: Configuration) {
        self.configuration = configuration
        statistics = RTPReceiveStatistics(ssrc: configuration.mediaSSRC, clockRate: configuration.clockRate,
                                          minimumSequential: configuration.minimumSequential)
        nack = configuration.nack.map { NACKGenerator(configuration: $0) }
        keyFrames = configuration.keyFrameRequestMethod.map {
            KeyFrameRequester(localSSRC: configuration.localSSRC, mediaSSRC: configuration.mediaSSRC, method: $0,
                              retryInterval: configuration.keyFrameRetryInterval)
        }
    }

    /// The round-trip time to the sender, which paces NACK repetitions; set it from RTCP.
    public var roundTripTime: Duration? {
        get { nack?.roundTripTime }
        set { if let newValue { nack?.roundTripTime = newValue } }
    }

    /// Takes a media packet; says whether it is new (pass it on) or a duplicate or stray (drop it).
    public mutating func receive(_ packet: RTPPacket, now: Instant) -> RTPArrival {
        receive(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp,
                payloadSize: packet.payload.count, now: now, isRetransmission: false)
    }

    /// Takes a media packet by its header fields (the per-packet path without an `RTPPacket`).
    public mutating func receive(
        sequenceNumber: UInt16, timestamp: UInt32, payloadSize: Int, now: Instant, isRetransmission: Bool = false
    ) -> RTPArrival {
        let arrival = statistics.record(sequenceNumber: sequenceNumber, timestamp: timestamp,
                                        payloadSize: payloadSize, arrival: now, isRetransmission: isRetransmission)
        switch arrival {
        case .accepted(let extended):
            nack?.packetArrived(extendedSequenceNumber: extended, now: now, isRetransmission: isRetransmission)
        case .restarted(let extended):
            nack?.reset()
            nack?.packetArrived(extendedSequenceNumber: extended, now: now)
            keyFrames?.keyFrameNeeded(now: now)
        case .duplicate, .probation, .discontinuity:
            break
        }
        return arrival
    }

    /// Takes a packet of the RTX stream: returns the media packet it carries and what it was, or
    /// nil when it carries nothing usable (RFC 4588 §4).
    public mutating func receiveRetransmission(_ rtx: RTPPacket, now: Instant) -> (RTPPacket, RTPArrival)? {
        guard let configuration = configuration.rtx,
            let media = try? RTXPacket.unwrap(rtx, configuration: configuration, mediaSSRC: self.configuration.mediaSSRC)
        else {
            unusableRetransmissions += 1
            return nil
        }
        let arrival = receive(sequenceNumber: media.sequenceNumber, timestamp: media.timestamp,
                              payloadSize: media.payload.count, now: now, isRetransmission: true)
        return (media, arrival)
    }

    /// Records an SR from the sender, for the next report's LSR/DLSR.
    public mutating func receivedSenderReport(_ report: SenderReport, now: Instant) {
        guard report.ssrc == configuration.mediaSSRC else { return }
        statistics.receivedSenderReport(ntpTimestamp: report.ntpTimestamp, arrival: now)
        senderClock = SenderClock(ntp: NTPTimestamp(rawValue: report.ntpTimestamp), rtpTimestamp: report.rtpTimestamp,
                                  clockRate: configuration.clockRate)
    }

    /// The sender's wall clock against this stream's RTP clock, from its latest SR.
    public private(set) var senderClock: SenderClock?

    /// The decoder needs a keyframe (error, new viewer): ask until one arrives.
    public mutating func requestKeyFrame(now: Instant) { keyFrames?.keyFrameNeeded(now: now) }

    /// A keyframe arrived (the frame assembler knows); at `extendedSequenceNumber` if known, which
    /// also drops older NACK entries.
    public mutating func keyFrameReceived(extendedSequenceNumber: Int64? = nil) {
        keyFrames?.keyFrameReceived()
        if let extendedSequenceNumber { nack?.keyFrameReceived(extendedSequenceNumber: extendedSequenceNumber) }
    }

    /// Most NACK entries per packet: 200 × 4 bytes keeps feedback well under an MTU.
    static let maxNACKPairs = 200

    /// The feedback to send now: generic NACKs for lost packets past their reorder wait, and a PLI or
    /// FIR when a keyframe is awaited (including after NACK gave up on a packet).
    public mutating func pollFeedback(now: Instant) -> [RTCPPacket] {
        var out: [RTCPPacket] = []
        // Mutated in place through the optional, so the entry array is never copied.
        let lost = nack?.pollLostSequenceNumbers(now: now) ?? []
        if !lost.isEmpty {
            let full = GenericNACK(senderSSRC: configuration.localSSRC, mediaSSRC: configuration.mediaSSRC,
                                   lostSequenceNumbers: lost)
            var start = 0
            while start < full.pairs.count {
                let end = min(full.pairs.count, start + Self.maxNACKPairs)
                out.append(.nack(GenericNACK(senderSSRC: full.senderSSRC, mediaSSRC: full.mediaSSRC,
                                             pairs: Array(full.pairs[start..<end]))))
                start = end
            }
        }
        if nack?.takeKeyFrameRequest() ?? false { keyFrames?.keyFrameNeeded(now: now) }
        if let request = keyFrames?.poll(now: now) { out.append(request) }
        return out
    }

    /// The report block about this stream for a regular report (starts the next loss interval).
    public mutating func makeReceptionReport(now: Instant) -> ReceptionReport? {
        statistics.makeReceptionReport(now: now)
    }

    /// When `pollFeedback` next has work.
    public var nextTimeout: Instant? {
        switch (nack?.nextTimeout, keyFrames?.nextTimeout) {
        case (let a?, let b?): min(a, b)
        case (let a?, nil): a
        case (nil, let b?): b
        case (nil, nil): nil
        }
    }
}
