#if canImport(Glibc)
import Glibc
#endif
import RTP
import Wire

/// The send side's record of packets that carried a transport-wide sequence number
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2): send time and size, in a fixed ring
/// indexed by the unwrapped number, so transport-cc feedback can be matched without allocation.
public struct SentPacketHistory: Sendable {
    struct Record: Sendable {
        var sequence: Int64
        var sentAt: Instant
        var size: Int32
        var reported: Bool
    }

    private var records: [Record?]
    private let mask: Int
    private var unwrapper = SequenceUnwrapper()

    /// A history of `capacity` packets (rounded up to a power of two).
    public init(capacity: Int = 8192) {
        var size = 1
        while size < max(1, capacity) { size <<= 1 }
        records = [Record?](repeating: nil, count: size)
        mask = size - 1
    }

    /// Records a sent packet of `size` bytes.
    public mutating func packetSent(transportSequenceNumber: UInt16, size: Int, now: Instant) {
        let sequence = unwrapper.unwrap(transportSequenceNumber)
        records[Int(UInt64(bitPattern: sequence) & UInt64(mask))] = Record(
            sequence: sequence, sentAt: now, size: Int32(clamping: size), reported: false)
    }

    /// The record of `transportSequenceNumber` if still held and not yet reported by feedback;
    /// marks it reported.
    mutating func takeUnreported(_ transportSequenceNumber: UInt16) -> (sentAt: Instant, size: Int)? {
        guard unwrapper.lastUnwrapped != nil else { return nil }
        let sequence = unwrapper.peek(transportSequenceNumber)
        let index = Int(UInt64(bitPattern: sequence) & UInt64(mask))
        guard let record = records[index], record.sequence == sequence, !record.reported else { return nil }
        records[index]?.reported = true
        return (record.sentAt, Int(record.size))
    }
}

/// A bandwidth estimate: what one receiver can take, in bits per second, as of `at`.
public struct BandwidthEstimate: Equatable, Sendable {
    /// Bits per second.
    public var bitsPerSecond: Int
    /// When the estimate last changed.
    public var at: Instant

    /// An estimate with these fields.
    public init(bitsPerSecond: Int, at: Instant) {
        self.bitsPerSecond = bitsPerSecond
        self.at = at
    }
}

/// The sending bandwidth one receiver can take, from its REMB (draft-alvestrand-rmcat-remb-03) and
/// its loss: transport-cc feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1)
/// matched against `SentPacketHistory`, and RR fraction lost (RFC 3550 §6.4.1).
///
/// Estimator (the loss-based half of GCC, draft-ietf-rmcat-gcc-02 §6): for each loss measurement
/// (a transport-cc feedback covering at least `minimumPacketsPerLossSample` packets, or an RR block)
/// with loss fraction p:
/// - p > 10 %: A ← A × (1 − 0.5 p), at most once per `decreaseInterval` (300 ms);
/// - p < 2 %: A ← A × 1.08^Δt (8 % per second since the last update, Δt ≤ 1 s), but not above
///   1.5 × the acknowledged bitrate + 10 kbit/s, so an idle sender does not grow the estimate;
/// - otherwise A holds.
///
/// The acknowledged bitrate is the bytes transport-cc reports received, over windows of at least
/// 500 ms. The delay-based half (`DelayBasedEstimate`, GCC §5) reads the arrival times in the
/// same feedback: a queue building without loss lowers its rate D, kept apart (`delayBased`):
/// a receiver whose own process is slow (a busy machine) delays arrivals too, so D counts only
/// where less arrives than was sent, which the caller knows. The estimate is min(A, latest REMB)
/// when a REMB names one of our streams, clamped to [`minimumBitrate`, `maximumBitrate`].
public struct ReceiverBandwidthEstimate: Sendable {
    /// The estimator's constants.
    public struct Configuration: Equatable, Sendable {
        /// Where the loss-based estimate starts.
        public var initialBitrate = 1_000_000
        /// Floor of the estimate.
        public var minimumBitrate = 50_000
        /// Ceiling of the estimate.
        public var maximumBitrate = 20_000_000
        /// Loss above which the estimate decreases (GCC: 10 %).
        public var highLoss = 0.10
        /// Loss below which the estimate increases (GCC: 2 %).
        public var lowLoss = 0.02
        /// Increase per second while loss is low (GCC: 8 %).
        public var increasePerSecond = 0.08
        /// Decreases at most this often.
        public var decreaseInterval: Duration = .milliseconds(300)
        /// Packets a transport-cc loss sample needs; smaller feedbacks accumulate.
        public var minimumPacketsPerLossSample = 20
        /// The defaults above.
        public init() {}
    }

    /// The configuration in use.
    public let configuration: Configuration
    /// Our media SSRCs sent to this receiver; a REMB counts when it names one of them (or none).
    public var mediaSSRCs: Set<SSRC>
    /// Send-side record of transport-wide sequence numbers.
    public private(set) var history: SentPacketHistory
    private var lossBased: Double
    private var lastUpdate: Instant?
    private var lastDecrease: Instant?
    private var changedAt: Instant?
    private var pendingLost = 0
    private var pendingReceived = 0
    private var ackedBytes = 0
    private var ackWindowStart: Instant?
    /// The acknowledged (received) bitrate from transport-cc, bits/s, once measured.
    public private(set) var acknowledgedBitrate: Int?
    /// The latest REMB bitrate that applied, bits/s.
    public private(set) var rembBitrate: Int?
    /// The latest loss fraction measured (0...1).
    public private(set) var lossFraction: Double?
    /// The delay-based half, fed by transport-cc's arrival times.
    public private(set) var delayBased: DelayBasedEstimate

    /// An estimator for a receiver of `mediaSSRCs`.
    public init(mediaSSRCs: Set<SSRC>, configuration: Configuration = Configuration(), historyCapacity: Int = 8192) {
        self.configuration = configuration
        self.mediaSSRCs = mediaSSRCs
        history = SentPacketHistory(capacity: historyCapacity)
        lossBased = Double(configuration.initialBitrate)
        delayBased = DelayBasedEstimate(minimumBitrate: configuration.minimumBitrate, maximumBitrate: configuration.maximumBitrate)
    }

    /// Records a sent packet that carried a transport-wide sequence number.
    public mutating func packetSent(transportSequenceNumber: UInt16, size: Int, now: Instant) {
        history.packetSent(transportSequenceNumber: transportSequenceNumber, size: size, now: now)
    }

    /// Takes a REMB; returns whether it applied (it names one of our streams, or no stream).
    @discardableResult
    public mutating func receivedREMB(_ remb: ReceiverEstimatedMaximumBitrate, now: Instant) -> Bool {
        guard remb.ssrcs.isEmpty || remb.ssrcs.contains(where: mediaSSRCs.contains) else { return false }
        rembBitrate = Int(clamping: remb.bitrate)
        changedAt = now
        return true
    }

    /// Raises the loss-based estimate to at least `bitsPerSecond` and drops the REMB cap: the
    /// sender tries a higher rate (probing by sending), and the feedback to come judges it.
    public mutating func raise(toAtLeast bitsPerSecond: Int, now: Instant) {
        lossBased = min(max(lossBased, Double(bitsPerSecond)), Double(configuration.maximumBitrate))
        delayBased.raise(toAtLeast: Double(bitsPerSecond))
        rembBitrate = nil
        changedAt = now
    }

    /// Drops the REMB cap (the receiver's REMB was read as no sign of a shortfall).
    public mutating func forgetREMB() {
        rembBitrate = nil
    }

    /// Takes transport-cc feedback: counts received and lost packets we have a record of (each
    /// number once), passes their arrival times to the delay-based half, updates the
    /// acknowledged bitrate and, with enough packets, the loss-based estimate.
    public mutating func receivedTransportFeedback(_ feedback: TransportCCFeedback, now: Instant) {
        var sequence = feedback.baseSequenceNumber
        // Arrival times on the receiver's clock: the reference time, then each received
        // packet's delta from the one before (draft-holmer-…-01 §3.1.5), in µs.
        var arrival = feedback.referenceTimeMilliseconds * 1000
        // The parser bounds the statuses by the packet's length; this walks each once.
        for delta in feedback.receiveDeltas {
            defer { sequence &+= 1 }
            if let delta { arrival += Int64(delta) * 250 }
            guard let record = history.takeUnreported(sequence) else { continue }
            if delta == nil {
                pendingLost += 1
            } else {
                pendingReceived += 1
                ackedBytes += record.size
                delayBased.packetArrived(sentAt: record.sentAt, arrival: arrival)
            }
        }
        delayBased.update(current: lossBased, acknowledgedBitrate: acknowledgedBitrate, now: now)
        if let start = ackWindowStart {
            let elapsed = now - start
            if elapsed >= .milliseconds(500) {
                let seconds = elapsed.seconds
                acknowledgedBitrate = Int(Double(ackedBytes * 8) / seconds)
                ackedBytes = 0
                ackWindowStart = now
            }
        } else {
            ackWindowStart = now
            ackedBytes = 0
        }
        let total = pendingLost + pendingReceived
        guard total >= configuration.minimumPacketsPerLossSample else { return }
        let fraction = Double(pendingLost) / Double(total)
        pendingLost = 0
        pendingReceived = 0
        applyLoss(fraction, now: now)
    }

    /// Takes an RR/SR report block about one of our streams: its fraction lost is a loss sample.
    public mutating func receivedReceptionReport(_ report: ReceptionReport, now: Instant) {
        guard mediaSSRCs.contains(report.ssrc) else { return }
        applyLoss(Double(report.fractionLost) / 256, now: now)
    }

    private mutating func applyLoss(_ fraction: Double, now: Instant) {
        lossFraction = fraction
        let before = lossBased
        if fraction > configuration.highLoss {
            if lastDecrease.map({ now - $0 >= configuration.decreaseInterval }) ?? true {
                lossBased *= 1 - 0.5 * fraction
                lastDecrease = now
            }
        } else if fraction < configuration.lowLoss, let last = lastUpdate {
            let seconds = min(1, max(0, (now - last).seconds))
            var increased = lossBased * pow(1 + configuration.increasePerSecond, seconds)
            if let acknowledgedBitrate {
                increased = min(increased, max(lossBased, 1.5 * Double(acknowledgedBitrate) + 10_000))
            }
            lossBased = increased
        }
        lossBased = min(max(lossBased, Double(configuration.minimumBitrate)), Double(configuration.maximumBitrate))
        lastUpdate = now
        if lossBased != before { changedAt = now }
    }

    /// The estimate at `now`: min(loss-based, REMB), clamped.
    public func estimate(now: Instant) -> BandwidthEstimate {
        var bitrate = Int(lossBased)
        if let rembBitrate { bitrate = min(bitrate, rembBitrate) }
        bitrate = min(max(bitrate, configuration.minimumBitrate), configuration.maximumBitrate)
        return BandwidthEstimate(bitsPerSecond: bitrate, at: changedAt ?? now)
    }
}
