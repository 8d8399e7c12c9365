import RTP
import Wire

extension ReceptionReport {
    /// Round-trip time from this block about one of our streams (RFC 3550 §6.4.1): the block's
    /// arrival time A (compact NTP) minus LSR minus DLSR. Nil when the block names no SR (LSR 0) or
    /// the result is negative (clock trouble or a forged block).
    public func roundTripTime(arrival: NTPTimestamp) -> Duration? {
        guard lastSenderReport != 0 else { return nil }
        let rtt = arrival.compact &- lastSenderReport &- delaySinceLastSenderReport
        // A "negative" RTT wraps to a huge value; anything over an hour is treated as that.
        guard rtt < 65_536 * 3600 else { return nil }
        return duration(compactNTP: rtt)
    }
}

/// Decides when the next compound RTCP report is due (RFC 3550 §6.2, §6.3.1, Appendix A.7).
///
/// Deterministic interval Td = max(`minimumInterval`, n × average RTCP size / RTCP bandwidth), where
/// the RTCP bandwidth is `rtcpFraction` (5 %) of the session bandwidth, split 25 % to senders and
/// 75 % to receivers when senders are at most a quarter of the members (§6.3.1); the real interval
/// is Td × a uniform factor in [0.5, 1.5] so reports do not synchronise, and the first report comes
/// after half the minimum (§6.2 "initial"). The minimum is the reduced one RFC 4585 §3.4 allows:
/// 1 s for video, 5 s for audio by default (as libwebrtc). Timer reconsideration (§6.3.3) is not
/// done, so the e − 3/2 compensation is not applied either. The random factor comes from a seeded
/// generator: the same seed gives the same schedule.
public struct RTCPScheduler: Sendable {
    /// The interval's parameters.
    public struct Configuration: Equatable, Sendable {
        /// Shortest deterministic interval.
        public var minimumInterval: Duration
        /// Session bandwidth in bits/s (the media's, RFC 3550 §6.2).
        public var sessionBandwidth: Int
        /// Share of the session bandwidth for RTCP (RFC 3550 §6.2: 5 %).
        public var rtcpFraction: Double = 0.05

        /// A configuration with this minimum and session bandwidth.
        public init(minimumInterval: Duration, sessionBandwidth: Int) {
            self.minimumInterval = minimumInterval
            self.sessionBandwidth = sessionBandwidth
        }

        /// Video: 1 s minimum, 2 Mbit/s session.
        public static let video = Configuration(minimumInterval: .seconds(1), sessionBandwidth: 2_000_000)
        /// Audio: 5 s minimum, 64 kbit/s session.
        public static let audio = Configuration(minimumInterval: .seconds(5), sessionBandwidth: 64_000)
    }

    /// The configuration in use.
    public var configuration: Configuration
    /// Members of the session, ourselves included (RFC 3550 §6.3: `members`).
    public var members = 2
    /// Members that sent RTP since our last report (`senders`).
    public var senders = 1
    /// Whether we sent RTP since our last report (`we_sent`).
    public var weSent = false
    /// Average compound packet size in bytes, with UDP/IP headers (`avg_rtcp_size`, §6.3.3).
    public private(set) var averagePacketSize: Double = 128
    /// When the next report is due.
    public private(set) var nextReportAt: Instant
    private var random: IntervalRandomizer

    /// A schedule starting at `now` with the first report after a randomized half minimum.
    public init(configuration: Configuration, seed: UInt64, now: Instant) {
        self.configuration = configuration
        random = IntervalRandomizer(seed: seed)
        nextReportAt = now
        nextReportAt = now + interval(initial: true)
    }

    /// Same as `nextReportAt`: the engine's timer.
    public var nextTimeout: Instant? { nextReportAt }

    /// Whether a report is due at `now`.
    public func isDue(now: Instant) -> Bool { now >= nextReportAt }

    /// Records that a compound report of `size` bytes (RTCP only) went out at `now`, and schedules
    /// the next.
    public mutating func reportSent(size: Int, now: Instant) {
        // §6.3.3: avg_rtcp_size = 1/16 * packet_size + 15/16 * avg_rtcp_size, with 28 bytes of UDP/IPv4.
        averagePacketSize += (Double(size + 28) - averagePacketSize) / 16
        nextReportAt = now + interval(initial: false)
    }

    /// RFC 3550 A.7 `rtcp_interval` without the compensation factor.
    private mutating func interval(initial: Bool) -> Duration {
        let minimum = configuration.minimumInterval.seconds / (initial ? 2 : 1)
        var bandwidth = Double(max(1, configuration.sessionBandwidth)) * configuration.rtcpFraction / 8
        var n = Double(max(1, members))
        let senderCount = Double(max(0, min(senders, members)))
        if senderCount <= n * 0.25 {
            if weSent {
                bandwidth *= 0.25
                n = max(1, senderCount)
            } else {
                bandwidth *= 0.75
                n = max(1, n - senderCount)
            }
        }
        let deterministic = max(minimum, averagePacketSize * n / bandwidth)
        let seconds = deterministic * random.nextFactor()
        return .nanoseconds(Int64(seconds * 1e9))
    }
}

/// The report interval's random factor, repeatable from a seed.
struct IntervalRandomizer: Sendable {
    private var generator: SplitMix64
    init(seed: UInt64) { generator = SplitMix64(seed: seed) }
    /// Uniform in [0.5, 1.5).
    mutating func nextFactor() -> Double {
        0.5 + Double(generator.next() >> 11) / Double(1 << 53)
    }
}

/// Builds compound RTCP packets (RFC 3550 §6.1): an SR when we send (else an RR) first, carrying
/// one report block per received stream, more RRs when there are over 31 blocks (§6.4.2), then an
/// SDES with our CNAME (§6.5.1: every compound packet carries it), then feedback (RFC 4585 §3.1).
/// With reduced-size RTCP negotiated (`a=rtcp-rsize`, RFC 5506 §3) feedback may go alone.
public struct RTCPCompoundBuilder: Sendable {
    /// Our canonical name (RFC 3550 §6.5.1).
    public var cname: String
    /// Whether reduced-size RTCP was negotiated (RFC 5506).
    public var reducedSize: Bool

    /// A builder with this CNAME.
    public init(cname: String, reducedSize: Bool = false) {
        self.cname = cname
        self.reducedSize = reducedSize
    }

    /// The regular report: `senderReport` (its report blocks replaced by `reports`) or an RR from
    /// `localSSRC`, then SDES CNAME, then `feedback`.
    public func report(
        localSSRC: SSRC, senderReport: SenderReport?, reports: [ReceptionReport], feedback: [RTCPPacket] = []
    ) -> [RTCPPacket] {
        var packets: [RTCPPacket] = []
        packets.reserveCapacity(3 + reports.count / 31 + feedback.count)
        let first = Array(reports.prefix(31))
        if var sender = senderReport {
            sender.reports = first
            packets.append(.senderReport(sender))
        } else {
            packets.append(.receiverReport(ReceiverReport(ssrc: localSSRC, reports: first)))
        }
        var rest = reports.dropFirst(31)
        while !rest.isEmpty {
            packets.append(.receiverReport(ReceiverReport(ssrc: localSSRC, reports: Array(rest.prefix(31)))))
            rest = rest.dropFirst(31)
        }
        packets.append(.sourceDescription(SourceDescription(chunks: [SDESChunk(source: localSSRC, cname: cname)])))
        packets.append(contentsOf: feedback)
        return packets
    }

    /// Feedback sent between regular reports (RFC 4585 §3.5 early feedback): alone with
    /// reduced size, else behind an empty RR and the CNAME (RFC 4585 §3.1, RFC 3550 §6.1).
    public func feedback(localSSRC: SSRC, _ feedback: [RTCPPacket]) -> [RTCPPacket] {
        guard !reducedSize else { return feedback }
        return report(localSSRC: localSSRC, senderReport: nil, reports: [], feedback: feedback)
    }
}
