import RTP
import Streams
import Wire

/// Which composite encoding one receiver should get, from its feedback about what the host sends
/// it: transport-cc (the host stamps a transport-wide number on every packet it sends a peer that
/// negotiated it), REMB, and the loss in its receiver reports, through a
/// `ReceiverBandwidthEstimate`.
///
/// Down: when the estimate falls under the floor of the tier it gets (`floorShare` of that
/// encoding's rate), it goes to the best tier whose floor the estimate still clears; under
/// `pauseBelow` it gets no video until it recovers (its mix goes on). A queue building on its
/// path is surer: the delay-based estimate over-using while packets arrive slower than they were
/// sent (`deliveryShare`: a receiver whose own process is slow delays arrivals for a moment, and
/// jitter alone moves them by its own size, not in proportion). It then goes to the best tier
/// whose rate the delay-based estimate fits (`queueingShare`; an over-use sets that estimate to
/// 85 % of what arrives: a climb that failed lands on the tier it came from).
///
/// Up: the estimate cannot show headroom the host does not use (a receiver's REMB follows what
/// it gets, and the loss-based estimate grows 8 % a second), so climbing is by trial: after
/// `climbAfter` without a shortfall (loss over 10 %, or a REMB under what is sent) it moves one
/// tier up and the estimate is raised to that tier's rate. If a shortfall comes within
/// `probation` of a climb, the next climb waits twice as long (at most `longestClimbWait`). So a
/// receiver paused by a constraint is back on the main encoding within 10 s of it lifting.
///
/// A REMB counts only when it is below what the host sent the receiver: a browser's congestion
/// control keeps its REMB near 1.5 times what it receives, so while the composite is still and
/// small Chromium reports 300-600 kbit/s with nothing wrong.
public struct CompositeEncodingChooser {
    /// What a receiver of the composite gets, from least to most.
    public enum Tier: Int, Comparable, Sendable, CaseIterable {
        /// No video: its estimate is under `pauseBelow`.
        case paused
        case small, low, main

        public static func < (a: Tier, b: Tier) -> Bool { a.rawValue < b.rawValue }

        /// The encoding of this tier; nil when paused.
        public var encoding: CompositeEncoding.Kind? {
            switch self {
            case .paused: nil
            case .small: .small
            case .low: .low
            case .main: .main
            }
        }
    }

    /// A tier is kept while the estimate is at least this share of its encoding's rate.
    public static let floorShare = 0.45
    /// Under this (bits/s) a receiver gets no video.
    public static let pauseBelow = 60_000
    /// The shortest time between two downward changes (the first may come at once).
    public static let minimumDwell: Duration = .seconds(1)
    /// Calm time before a climb; doubled after a climb that failed.
    public static let climbAfter: Duration = .seconds(2)
    public static let longestClimbWait: Duration = .seconds(16)
    /// A shortfall this soon after a climb means the climb failed.
    public static let probation: Duration = .seconds(3)
    /// Under a queue, a tier fits an estimate of at least this share of its rate.
    public static let queueingShare = 0.8
    /// A queue counts when packets arrive at under this share of the pace they were sent.
    public static let deliveryShare = 0.8
    /// Loss over this share (in a report or in transport-cc feedback) is a shortfall (GCC: 10 %).
    public static let shortfallLoss = 0.10

    public private(set) var estimate: ReceiverBandwidthEstimate
    /// The tier it should get now.
    public private(set) var tier = Tier.main
    /// Each tier's encoding rate (bits/s).
    private let rates: [Tier: Int]
    private var lastChange: Instant?
    private var lastClimb: Instant?
    private var lastShortfall: Instant?
    private var climbWait = CompositeEncodingChooser.climbAfter
    /// The rate of video the host sent the receiver over the last whole window, and the window
    /// being counted.
    public private(set) var sentBitsPerSecond: Int?
    private var sentWindow: (start: Instant, bytes: Int)?
    public static let sendRateWindow: Duration = .seconds(1)

    /// A chooser for the receiver of the host's video SSRC `hostVideo`, with the room's
    /// encoding rates.
    public init(hostVideo: SSRC, mainBitrate: Int, lowBitrate: Int, smallBitrate: Int) {
        var configuration = ReceiverBandwidthEstimate.Configuration()
        configuration.initialBitrate = mainBitrate
        configuration.minimumBitrate = Self.pauseBelow / 2
        estimate = ReceiverBandwidthEstimate(mediaSSRCs: [hostVideo], configuration: configuration)
        rates = [.main: mainBitrate, .low: lowBitrate, .small: smallBitrate]
    }

    /// The encoding it should get; nil while paused.
    public var wantedEncoding: CompositeEncoding.Kind? { tier.encoding }

    /// Records a packet sent with transport-wide number `sequenceNumber` (any of its streams).
    public mutating func packetSent(transportSequenceNumber: UInt16, size: Int, now: Instant) {
        estimate.packetSent(transportSequenceNumber: transportSequenceNumber, size: size, now: now)
    }

    /// Takes a compound RTCP packet from the receiver: report blocks about the host video SSRC,
    /// transport-cc feedback and REMB feed the estimate; then the tier is reconsidered.
    public mutating func receive(_ packets: [RTCPPacket], now: Instant) {
        for packet in packets {
            switch packet {
            case .receiverReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
                noteLoss(now: now)
            case .senderReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
                noteLoss(now: now)
            case .transportCC(let feedback):
                estimate.receivedTransportFeedback(feedback, now: now)
                noteLoss(now: now)
                if queueing { lastShortfall = now }
            case .receiverEstimatedMaximumBitrate(let remb):
                let shortfall = sentBitsPerSecond.map { Double(remb.bitrate) < 0.9 * Double($0) } ?? false
                if shortfall {
                    if estimate.receivedREMB(remb, now: now) { lastShortfall = now }
                } else {
                    estimate.forgetREMB()
                }
            default:
                break
            }
        }
        evaluate(now: now)
    }

    private mutating func noteLoss(now: Instant) {
        if let loss = estimate.lossFraction, loss > Self.shortfallLoss { lastShortfall = now }
    }

    /// Counts video the host sent the receiver (RTP bytes of one frame).
    public mutating func videoSent(bytes: Int, now: Instant) {
        guard let window = sentWindow else {
            sentWindow = (now, bytes)
            return
        }
        let elapsed = now - window.start
        guard elapsed >= Self.sendRateWindow else {
            sentWindow = (window.start, window.bytes + bytes)
            return
        }
        sentBitsPerSecond = Int(Double(window.bytes * 8) / (elapsed.seconds))
        sentWindow = (now, bytes)
    }

    /// The lowest estimate that keeps `tier`.
    private func floor(_ tier: Tier) -> Int {
        guard let rate = rates[tier] else { return 0 }
        return max(Self.pauseBelow, Int(Double(rate) * Self.floorShare))
    }

    /// Whether a queue builds on the path: the delay-based estimate over-uses and the packets
    /// took longer to arrive than to send (`ReceiverBandwidthEstimate.deliveryRatio`). Read
    /// from the same packets' send and arrival times, not from two rates over different
    /// windows: under jitter and loss a frame's bytes fall on either side of a window's edge.
    private var queueing: Bool {
        guard estimate.delayBased.usage == .overusing, let ratio = estimate.deliveryRatio else { return false }
        return ratio < Self.deliveryShare
    }

    /// The lowest delay-based estimate that keeps `tier` while a queue builds.
    private func queueingFloor(_ tier: Tier) -> Int {
        guard let rate = rates[tier] else { return 0 }
        return max(Self.pauseBelow, Int(Double(rate) * Self.queueingShare))
    }

    /// Applies the rules to the estimate at `now`; true when `tier` changed.
    @discardableResult
    public mutating func evaluate(now: Instant) -> Bool {
        let bitsPerSecond = estimate.estimate(now: now).bitsPerSecond
        let delay = estimate.delayBased.bitrate.map { Int($0) } ?? bitsPerSecond
        let overQueue = queueing && delay < queueingFloor(tier)
        if bitsPerSecond < floor(tier) || overQueue {
            guard lastChange.map({ now - $0 >= Self.minimumDwell }) ?? true else { return false }
            let target = Tier.allCases.reversed().first { tier in
                tier < self.tier && bitsPerSecond >= floor(tier) && (!overQueue || delay >= queueingFloor(tier))
            } ?? .paused
            if let lastClimb, now - lastClimb < Self.probation {
                climbWait = min(Self.longestClimbWait, climbWait * 2)
            }
            change(to: target, now: now)
            return true
        }
        guard tier < .main, let next = Tier(rawValue: tier.rawValue + 1) else { return false }
        let calmSince = max(lastChange ?? now, lastShortfall ?? now)
        guard now - calmSince >= climbWait else { return false }
        if let lastClimb, now - lastClimb >= Self.probation * 3 { climbWait = Self.climbAfter }
        // Try the next tier: the estimate is raised to its rate so the loss-based half does
        // not pull it straight back; a real shortfall will.
        estimate.raise(toAtLeast: rates[next] ?? 0, now: now)
        lastClimb = now
        change(to: next, now: now)
        return true
    }

    private mutating func change(to tier: Tier, now: Instant) {
        self.tier = tier
        lastChange = now
    }
}
