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
        var report: Report
    }

    /// What feedback has said of a packet so far.
    enum Report: Sendable {
        case none, lost, received
    }

    /// What a feedback's status of a packet means, given what earlier feedback said of it.
    enum Outcome {
        /// First reported received.
        case received(sentAt: Instant, size: Int)
        /// First reported missing: lost, or late (`lossReorderWindow`).
        case missing(sentAt: Instant)
        /// Reported missing before, received now: it was late (reordered by jitter), not lost.
        /// A receiver reports a late packet in its next feedback (libwebrtc moves its feedback
        /// window back to it).
        case late(sentAt: Instant, size: Int)
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
            sequence: sequence, sentAt: now, size: Int32(clamping: size), report: .none)
    }

    /// Whether feedback reported `transportSequenceNumber` missing and has not reported it
    /// received since (false once its record is gone).
    func isStillMissing(_ transportSequenceNumber: UInt16) -> Bool {
        guard unwrapper.lastUnwrapped != nil else { return false }
        let sequence = unwrapper.peek(transportSequenceNumber)
        guard let record = records[Int(UInt64(bitPattern: sequence) & UInt64(mask))], record.sequence == sequence else { return false }
        return record.report == .lost
    }

    /// Notes what a feedback says of `transportSequenceNumber`: what it means, or nil for a
    /// packet not held (too old, never sent) or already reported received, or missing again.
    mutating func report(_ transportSequenceNumber: UInt16, received: Bool) -> Outcome? {
        guard unwrapper.lastUnwrapped != nil else { return nil }
        let sequence = unwrapper.peek(transportSequenceNumber)
        let index = Int(UInt64(bitPattern: sequence) & UInt64(mask))
        guard let record = records[index], record.sequence == sequence else { return nil }
        switch (record.report, received) {
        case (.none, false):
            records[index]?.report = .lost
            return .missing(sentAt: record.sentAt)
        case (.none, true):
            records[index]?.report = .received
            return .received(sentAt: record.sentAt, size: Int(record.size))
        case (.lost, true):
            records[index]?.report = .received
            return .late(sentAt: record.sentAt, size: Int(record.size))
        case (.lost, false), (.received, _):
            return nil
        }
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
/// matched against `SentPacketHistory`, and the loss in RR blocks (RFC 3550 §6.4.1).
///
/// Estimator (the loss-based half of GCC, draft-ietf-rmcat-gcc-02 §6): for each loss measurement
/// (transport-cc feedback, or RR blocks, covering at least `minimumPacketsPerLossSample` packets
/// and `minimumLossSampleDuration`, or fewer seconds when its loss is over 20 %)
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
/// where packets arrive slower than they were sent (`deliveryRatio`, the caller's rule). The estimate is min(A, latest REMB)
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
        /// Packets a loss sample needs; smaller feedbacks and reports accumulate.
        public var minimumPacketsPerLossSample = 20
        /// And the time it spans at least, unless its loss is over twice `highLoss`: GCC reads
        /// loss once per report (RFC 3550: about a second). Over 20 packets, 5 % random loss
        /// shows over 10 % in one sample of 13; a still composite sends too little to earn back
        /// each decrease, so samples that short ratcheted a receiver on a lossy path down a tier.
        public var minimumLossSampleDuration: Duration = .seconds(1)
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
    /// Whether the receiver sends transport-cc feedback (then its reports' loss is not read).
    private var transportFeedbackSeen = false
    /// Packets transport-cc reported missing, oldest first, not yet judged lost or late.
    private var missing: [(sequence: UInt16, sentAt: Instant)] = []
    private var missingHead = 0
    private var ackedBytes = 0
    private var ackWindowStart: Instant?
    /// Each of our streams' last report block: extended highest sequence number, cumulative lost.
    private var lastReportBlocks: [SSRC: (highest: UInt32, lost: Int32)] = [:]
    /// When the loss sample being gathered from feedback, and from reports, began.
    private var feedbackSampleStart: Instant?
    private var reportSampleStart: Instant?
    /// Packets expected and lost by report blocks, since the last sample taken from them.
    private var reportedExpected = 0
    private var reportedLost = 0
    /// The packets first reported received since the delivery window began: the first and last
    /// send time, and the earliest and latest arrival (µs, the receiver's clock).
    private var deliveryWindow: (firstSent: Instant, lastSent: Instant, earliestArrival: Int64, latestArrival: Int64)?
    /// How long packets took to send over how long they took to arrive, over the last window
    /// of at least `deliveryWindowLength` of sending: about 1 on a path that keeps up, under it
    /// where a queue builds (the path delivers slower than the sender sends). Jitter moves
    /// either end by at most its own size, and loss does not move it at all.
    public private(set) var deliveryRatio: Double?
    public static let deliveryWindowLength: Duration = .seconds(1)
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

    /// Takes transport-cc feedback: counts received and lost packets we have a record of,
    /// passes their arrival times to the delay-based half, updates the acknowledged bitrate
    /// and, with enough packets, the loss-based estimate.
    ///
    /// A packet reported missing is lost only once a packet sent `lossReorderWindow` after it
    /// was reported received and it still was not (RACK's rule, RFC 8985 §6.2): jitter reorders,
    /// and a receiver reports a late packet received in a later feedback (libwebrtc moves its
    /// feedback window back to it), which counts it received.
    public mutating func receivedTransportFeedback(_ feedback: TransportCCFeedback, now: Instant) {
        var sequence = feedback.baseSequenceNumber
        // Arrival times on the receiver's clock: the reference time, then each received
        // packet's delta from the one before (draft-holmer-…-01 §3.1.5), in µs.
        var arrival = feedback.referenceTimeMilliseconds * 1000
        var latestReceivedSent: Instant?
        transportFeedbackSeen = true
        // The parser bounds the statuses by the packet's length; this walks each once.
        for delta in feedback.receiveDeltas {
            defer { sequence &+= 1 }
            if let delta { arrival += Int64(delta) * 250 }
            switch history.report(sequence, received: delta != nil) {
            case .missing(let sentAt):
                if missing.count >= Self.missingHeld { countOldestMissing() }
                missing.append((sequence, sentAt))
            case .received(let sentAt, let size):
                pendingReceived += 1
                ackedBytes += size
                delayBased.packetArrived(sentAt: sentAt, arrival: arrival)
                noteDelivery(sentAt: sentAt, arrival: arrival)
                latestReceivedSent = max(latestReceivedSent ?? sentAt, sentAt)
            case .late(_, let size):
                // Its arrival is out of order, so it says nothing of the queue.
                pendingReceived += 1
                ackedBytes += size
            case nil:
                break
            }
        }
        if let latestReceivedSent {
            while missingHead < missing.count, latestReceivedSent - missing[missingHead].sentAt >= Self.lossReorderWindow {
                countOldestMissing()
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
        let since = feedbackSampleStart ?? now
        feedbackSampleStart = since
        guard total >= configuration.minimumPacketsPerLossSample else { return }
        let fraction = Double(pendingLost) / Double(total)
        guard isLossSampleReady(fraction: fraction, since: since, now: now) else { return }
        pendingLost = 0
        pendingReceived = 0
        feedbackSampleStart = now
        applyLoss(fraction, now: now)
    }

    /// Reordering a packet reported missing may still be late by (send time).
    public static let lossReorderWindow: Duration = .milliseconds(100)
    /// Packets reported missing held at most, waiting for their window.
    static let missingHeld = 1024

    /// The oldest packet waiting in `missing` is judged: lost unless reported received since.
    private mutating func countOldestMissing() {
        guard missingHead < missing.count else { return }
        if history.isStillMissing(missing[missingHead].sequence) { pendingLost += 1 }
        missingHead += 1
        if missingHead > 256, missingHead * 2 > missing.count {
            missing.removeFirst(missingHead)
            missingHead = 0
        }
    }

    private mutating func noteDelivery(sentAt: Instant, arrival: Int64) {
        guard var window = deliveryWindow else {
            deliveryWindow = (sentAt, sentAt, arrival, arrival)
            return
        }
        window.firstSent = min(window.firstSent, sentAt)
        window.lastSent = max(window.lastSent, sentAt)
        window.earliestArrival = min(window.earliestArrival, arrival)
        window.latestArrival = max(window.latestArrival, arrival)
        let sending = window.lastSent - window.firstSent
        guard sending >= Self.deliveryWindowLength else {
            deliveryWindow = window
            return
        }
        let arriving = Double(window.latestArrival - window.earliestArrival) / 1_000_000
        deliveryRatio = arriving > 0 ? sending.seconds / arriving : nil
        deliveryWindow = (sentAt, sentAt, arrival, arrival)
    }

    /// Takes an RR/SR report block about one of our streams. Its loss counts between two blocks
    /// of the same stream: packets lost (cumulative lost's change) of packets expected (extended
    /// highest sequence number's change), gathered until a sample holds
    /// `minimumPacketsPerLossSample` packets, as libwebrtc's sender reads them. The block's own
    /// fraction lost is not used: a receiver that sends RTCP often (Chromium adds an RR to every
    /// NACK) reports it over a few packets, where one reordered packet reads as 50 % loss. Once
    /// the receiver sends transport-cc feedback, its reports' loss is not read at all: cumulative
    /// lost counts a packet late by jitter as lost until it arrives, which transport-cc's
    /// per-packet record tells apart.
    public mutating func receivedReceptionReport(_ report: ReceptionReport, now: Instant) {
        guard mediaSSRCs.contains(report.ssrc), !transportFeedbackSeen else { return }
        let last = lastReportBlocks[report.ssrc]
        lastReportBlocks[report.ssrc] = (report.extendedHighestSequenceNumber, report.cumulativeLost)
        let since = reportSampleStart ?? now
        reportSampleStart = since
        guard let last else { return }
        let expected = Int64(report.extendedHighestSequenceNumber) - Int64(last.highest)
        // Nothing new, or a jump no stream makes between two reports (a restart, a hostile block).
        guard expected > 0, expected <= Self.largestReportGap else { return }
        let lost = min(expected, max(-expected, Int64(report.cumulativeLost) - Int64(last.lost)))
        reportedExpected += Int(expected)
        reportedLost += Int(lost)
        guard reportedExpected >= configuration.minimumPacketsPerLossSample else { return }
        let fraction = Double(min(reportedExpected, max(0, reportedLost))) / Double(reportedExpected)
        guard isLossSampleReady(fraction: fraction, since: since, now: now) else { return }
        reportedExpected = 0
        reportedLost = 0
        reportSampleStart = now
        applyLoss(fraction, now: now)
    }

    /// The most packets two report blocks of one stream can be apart and still be compared.
    static let largestReportGap: Int64 = 1 << 15

    /// A sample (of enough packets) is taken once it spans `minimumLossSampleDuration`, or at
    /// once when its loss is twice `highLoss`: heavy loss is not noise, and is answered fast.
    private func isLossSampleReady(fraction: Double, since: Instant, now: Instant) -> Bool {
        now - since >= configuration.minimumLossSampleDuration || fraction >= 2 * configuration.highLoss
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
