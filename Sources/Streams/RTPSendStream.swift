import RTP
import Wire

/// One RTP stream we send (an encoder's output to one receiver, or shared by many): counts for the
/// SR (RFC 3550 §6.4.1), the NTP↔RTP timestamp mapping, the retransmission history answering NACKs
/// (RFC 4585 §6.2.1, RFC 4588), keyframe request coalescing (RFC 4585 §6.3.1, RFC 5104 §4.3.1), and
/// the round-trip time from the report blocks receivers send about it.
///
/// Drive it with `packetSent` for every packet that leaves, and `receivedRTCP` for every RTCP
/// packet from the receiver; send what `receivedRTCP` returns, ask the encoder for a keyframe when
/// `pollKeyFrame` says so, and put `makeSenderReport` in the compound report when the
/// `RTCPScheduler` says one is due.
public struct RTPSendStream: Sendable {
    /// What the stream is.
    public struct Configuration: Equatable, Sendable {
        /// Our SSRC for this stream.
        public var ssrc: SSRC
        /// The media clock rate (90000 video, 48000 Opus).
        public var clockRate: UInt32
        /// The RTX stream, when negotiated (RFC 4588).
        public var rtx: RTXConfiguration?
        /// History bounds and resend pacing.
        public var retransmission = RetransmissionBuffer.Configuration()
        /// Keyframes at most this often, however many receivers ask.
        public var keyFrameInterval: Duration = .milliseconds(500)

        /// A stream `ssrc` at `clockRate`, with RTX when given.
        public init(ssrc: SSRC, clockRate: UInt32, rtx: RTXConfiguration? = nil) {
            self.ssrc = ssrc
            self.clockRate = clockRate
            self.rtx = rtx
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// Wall clock for the SR's NTP time.
    public var clock: NTPClockMapping
    /// Sent packets kept for retransmission.
    public private(set) var retransmissionBuffer: RetransmissionBuffer
    /// Keyframe requests from receivers, coalesced.
    public private(set) var keyFrameRequests: KeyFrameRequestPacer
    /// Packets sent since the stream began (SR packet count; retransmissions excluded).
    public private(set) var packetCount: UInt32 = 0
    /// Payload octets sent since the stream began (SR octet count, RFC 3550 §6.4.1).
    public private(set) var octetCount: UInt32 = 0
    private var lastRTPTimestamp: UInt32 = 0
    private var lastCaptureTime: Instant?
    /// The latest round-trip time measured from a report block about this stream.
    public private(set) var roundTripTime: Duration?
    /// The latest report block a receiver sent about this stream.
    public private(set) var lastReceptionReport: ReceptionReport?

    /// A send stream; `clock` maps `Instant`s to NTP wall-clock time, `firstRTXSequenceNumber`
    /// should be random (RFC 3550 §5.1).
    public init(configuration: Configuration, clock: NTPClockMapping, firstRTXSequenceNumber: UInt16 = 0) {
        self.configuration = configuration
        self.clock = clock
        retransmissionBuffer = RetransmissionBuffer(
            configuration: configuration.retransmission, rtx: configuration.rtx,
            firstRTXSequenceNumber: firstRTXSequenceNumber)
        keyFrameRequests = KeyFrameRequestPacer(mediaSSRC: configuration.ssrc,
                                                minimumInterval: configuration.keyFrameInterval)
    }

    /// The SSRC of this stream.
    public var ssrc: SSRC { configuration.ssrc }

    /// Whether anything was sent, so an SR (not an RR) is due (RFC 3550 §6.4).
    public var hasSent: Bool { lastCaptureTime != nil }

    /// Records a packet as it leaves: `bytes` is its serialization (kept for retransmission),
    /// `payloadSize` its payload octets; `captureTime` is when its RTP timestamp was sampled
    /// (default `now`), which anchors the SR's RTP/NTP mapping.
    public mutating func packetSent(
        bytes: [UInt8], timestamp: UInt32, payloadSize: Int, now: Instant, captureTime: Instant? = nil
    ) {
        packetCount &+= 1
        octetCount &+= UInt32(truncatingIfNeeded: max(0, payloadSize))
        lastRTPTimestamp = timestamp
        lastCaptureTime = captureTime ?? now
        retransmissionBuffer.packetSent(bytes, now: now)
    }

    /// Records a packet as it leaves, serializing it; returns the bytes to send.
    public mutating func packetSent(_ packet: RTPPacket, now: Instant, captureTime: Instant? = nil)
        throws(RTPSerializeError) -> [UInt8]
    {
        let bytes = try packet.serialized()
        packetSent(bytes: bytes, timestamp: packet.timestamp, payloadSize: packet.payload.count, now: now,
                   captureTime: captureTime)
        return bytes
    }

    /// The RTP timestamp at `now`: the last packet's, advanced at the clock rate since its capture.
    public func rtpTimestamp(at now: Instant) -> UInt32 {
        guard let lastCaptureTime else { return lastRTPTimestamp }
        let elapsed = (now - lastCaptureTime).seconds
        let ticks = Int64((elapsed * Double(configuration.clockRate)).rounded())
        return lastRTPTimestamp &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// The SR for `now` (RFC 3550 §6.4.1): NTP time, the RTP timestamp of the same instant, the
    /// counts, and `reports`. Nil before the first packet.
    public func makeSenderReport(now: Instant, reports: [ReceptionReport] = []) -> SenderReport? {
        guard hasSent else { return nil }
        return SenderReport(
            ssrc: configuration.ssrc, ntpTimestamp: clock.ntp(at: now).rawValue, rtpTimestamp: rtpTimestamp(at: now),
            packetCount: packetCount, octetCount: octetCount, reports: reports)
    }

    /// Takes the RTCP packets of one received compound packet; returns the retransmissions to send
    /// (serialized RTP) for NACKs about this stream. PLI/FIR go to the keyframe pacer; report
    /// blocks about this stream give the RTT.
    public mutating func receivedRTCP(_ packets: [RTCPPacket], now: Instant) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for packet in packets {
            switch packet {
            case .senderReport(let report): receivedReportBlocks(report.reports, now: now)
            case .receiverReport(let report): receivedReportBlocks(report.reports, now: now)
            case .nack(let nack) where nack.mediaSSRC == configuration.ssrc:
                out.append(contentsOf: retransmissionBuffer.retransmissions(for: nack, now: now))
            case .pictureLossIndication(let pli): keyFrameRequests.receivedPictureLossIndication(pli)
            case .fullIntraRequest(let fir): keyFrameRequests.receivedFullIntraRequest(fir)
            default: break
            }
        }
        return out
    }

    private mutating func receivedReportBlocks(_ blocks: [ReceptionReport], now: Instant) {
        for block in blocks where block.ssrc == configuration.ssrc {
            lastReceptionReport = block
            if let rtt = block.roundTripTime(arrival: clock.ntp(at: now)) {
                roundTripTime = rtt
                retransmissionBuffer.roundTripTime = rtt
            }
        }
    }

    /// Holds resends to `bytesPerSecond` from now on (a share of the stream's current rate).
    public mutating func setRetransmissionBudget(bytesPerSecond: Int) {
        retransmissionBuffer.setBudget(bytesPerSecond: bytesPerSecond)
    }

    /// Whether to encode a keyframe now (coalesced receiver requests).
    public mutating func pollKeyFrame(now: Instant) -> Bool { keyFrameRequests.pollKeyFrame(now: now) }

    /// The encoder made a keyframe on its own.
    public mutating func keyFrameEncoded(now: Instant) { keyFrameRequests.keyFrameEncoded(now: now) }

    /// When a held keyframe request will be granted.
    public var nextTimeout: Instant? { keyFrameRequests.nextTimeout }
}
