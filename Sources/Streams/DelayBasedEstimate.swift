#if canImport(Glibc)
import Glibc
#endif
import Wire

/// The delay-based half of GCC (draft-ietf-rmcat-gcc-02 §5, with libwebrtc's trendline filter in
/// place of the draft's Kalman filter): a queue building at the bottleneck shows as packets
/// arriving further and further apart than they were sent, before any is lost. Sans-IO: each
/// packet transport-cc reports received comes in with its send instant and the receiver's
/// arrival time; after each feedback, `update` judges the trend and moves the rate.
///
/// - Packets sent within `burstInterval` of a group's first form one group (a frame's packets
///   leave together); for consecutive groups the delay variation is
///   d = (arrival gap) − (send gap) of their last packets (§5.2).
/// - The accumulated variation, smoothed (α = `smoothing`), over the last `windowSize` groups:
///   its slope against arrival time (least squares), times min(groups, 60) × `trendGain`, is the
///   modified trend m (ms).
/// - Over-use when m > γ for at least `overuseTime` and still rising; under-use when m < −γ; the
///   threshold γ adapts (§5.4): γ += Δt·k·(|m| − γ), k = `thresholdUp` when |m| > γ else
///   `thresholdDown`, clamped to 6…600 ms, left alone for outliers (|m| − γ > 15 ms).
/// - Rate (§5.5): over-use → `decreaseFactor` × the acknowledged rate (at most once per
///   `decreaseInterval`); normal → up 8 % a second, not above 1.5 × acknowledged + 10 kbit/s;
///   under-use → hold (the queue drains).
public struct DelayBasedEstimate: Sendable {
    public enum Usage: Sendable, Equatable {
        case normal, overusing, underusing
    }

    public static let burstInterval: Duration = .milliseconds(5)
    public static let smoothing = 0.9
    public static let windowSize = 20
    public static let trendGain = 4.0
    public static let overuseTime: Duration = .milliseconds(10)
    public static let thresholdUp = 0.0087, thresholdDown = 0.039
    public static let initialThreshold = 12.5
    public static let decreaseFactor = 0.85
    public static let decreaseInterval: Duration = .milliseconds(300)
    public static let increasePerSecond = 0.08

    private struct Group {
        var firstSend: Instant
        var lastSend: Instant
        var lastArrival: Int64  // µs, receiver clock
    }

    /// The rate the delay allows (bits/s); nil until a first judgement.
    public private(set) var bitrate: Double?
    /// What the trend says now.
    public private(set) var usage = Usage.normal
    /// When the last decrease for over-use came.
    public private(set) var lastDecrease: Instant?
    public private(set) var threshold = DelayBasedEstimate.initialThreshold
    /// The latest modified trend (ms), for tests and metrics.
    public private(set) var trend = 0.0

    private var current: Group?
    private var previous: Group?
    private var accumulated = 0.0
    private var smoothed = 0.0
    private var firstArrival: Int64?
    private var samples: [(arrival: Double, smoothed: Double)] = []
    private var groups = 0
    /// Send time spent over the threshold (ms), and the groups.
    private var overuseMilliseconds: Double?
    private var overuseCount = 0
    private var previousTrend = 0.0
    private var lastThresholdUpdate: Double?
    private var lastIncrease: Instant?
    private let minimum: Double, maximum: Double

    public init(minimumBitrate: Int, maximumBitrate: Int) {
        minimum = Double(minimumBitrate)
        maximum = Double(maximumBitrate)
    }

    /// A packet transport-cc reported received: sent at `sentAt`, arrived at `arrival` µs on the
    /// receiver's clock. Packets come in sequence order (send order).
    public mutating func packetArrived(sentAt: Instant, arrival: Int64) {
        guard var group = current else {
            current = Group(firstSend: sentAt, lastSend: sentAt, lastArrival: arrival)
            return
        }
        if sentAt - group.firstSend <= Self.burstInterval, sentAt >= group.lastSend {
            group.lastSend = sentAt
            group.lastArrival = max(group.lastArrival, arrival)
            current = group
            return
        }
        if sentAt < group.lastSend { return }  // reordered beyond the group: not a sample
        if let previous { addDelta(from: previous, to: group) }
        previous = group
        current = Group(firstSend: sentAt, lastSend: sentAt, lastArrival: arrival)
    }

    private mutating func addDelta(from earlier: Group, to later: Group) {
        let sendGap = (later.lastSend - earlier.lastSend).seconds * 1000
        let arrivalGap = Double(later.lastArrival - earlier.lastArrival) / 1000
        // A receiver clock jump (a gap over 3 s) says nothing of queues: start over.
        guard abs(arrivalGap - sendGap) < 3000 else {
            samples.removeAll()
            accumulated = 0
            smoothed = 0
            return
        }
        accumulated += arrivalGap - sendGap
        smoothed = Self.smoothing * smoothed + (1 - Self.smoothing) * accumulated
        let origin = firstArrival ?? later.lastArrival
        firstArrival = origin
        samples.append((Double(later.lastArrival - origin) / 1000, smoothed))
        if samples.count > Self.windowSize { samples.removeFirst() }
        groups += 1
        guard samples.count == Self.windowSize, let slope = Self.slope(samples) else { return }
        trend = slope * Double(min(groups, 60)) * Self.trendGain
        detect(sendGap: sendGap, arrival: Double(later.lastArrival) / 1000)
    }

    /// Least-squares slope of smoothed delay against arrival time.
    private static func slope(_ points: [(arrival: Double, smoothed: Double)]) -> Double? {
        let count = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.arrival } / count
        let meanY = points.reduce(0) { $0 + $1.smoothed } / count
        var numerator = 0.0, denominator = 0.0
        for point in points {
            numerator += (point.arrival - meanX) * (point.smoothed - meanY)
            denominator += (point.arrival - meanX) * (point.arrival - meanX)
        }
        return denominator == 0 ? nil : numerator / denominator
    }

    private mutating func detect(sendGap: Double, arrival: Double) {
        if trend > threshold {
            // Over for long enough (in send time), more than once, and still rising (§5.4).
            let over = overuseMilliseconds.map { $0 + sendGap } ?? sendGap / 2
            overuseMilliseconds = over
            overuseCount += 1
            if over > Self.overuseTime.seconds * 1000, overuseCount > 1, trend >= previousTrend {
                overuseMilliseconds = 0
                overuseCount = 0
                usage = .overusing
            }
        } else if trend < -threshold {
            overuseMilliseconds = nil
            overuseCount = 0
            usage = .underusing
        } else {
            overuseMilliseconds = nil
            overuseCount = 0
            usage = .normal
        }
        previousTrend = trend
        adaptThreshold(arrival: arrival)
    }

    /// `arrival`: the group's arrival (ms, receiver clock), the time the threshold moves by.
    private mutating func adaptThreshold(arrival: Double) {
        defer { lastThresholdUpdate = arrival }
        guard let last = lastThresholdUpdate else { return }
        let magnitude = abs(trend)
        guard magnitude - threshold <= 15 else { return }
        let k = magnitude < threshold ? Self.thresholdDown : Self.thresholdUp
        let elapsed = min(max(arrival - last, 0), 100)
        threshold = min(max(threshold + elapsed * k * (magnitude - threshold), 6), 600)
    }

    /// After a feedback: moves the rate by what the trend says, from `current` (the estimate in
    /// use) and the acknowledged rate.
    public mutating func update(current estimate: Double, acknowledgedBitrate: Int?, now: Instant) {
        var rate = bitrate ?? estimate
        switch usage {
        case .overusing:
            if lastDecrease.map({ now - $0 >= Self.decreaseInterval }) ?? true {
                let base = acknowledgedBitrate.map(Double.init) ?? rate
                rate = min(rate, Self.decreaseFactor * base)
                lastDecrease = now
            }
            lastIncrease = now
        case .underusing:
            lastIncrease = now
        case .normal:
            if let last = lastIncrease {
                let seconds = min(1, max(0, (now - last).seconds))
                var increased = rate * exp(log1p(Self.increasePerSecond) * seconds)  // 8 % a second
                if let acknowledgedBitrate { increased = min(increased, max(rate, 1.5 * Double(acknowledgedBitrate) + 10_000)) }
                rate = increased
            }
            lastIncrease = now
        }
        bitrate = min(max(rate, minimum), maximum)
    }

    /// The sender tries a higher rate: the delay-based rate is raised to at least `bitsPerSecond`.
    public mutating func raise(toAtLeast bitsPerSecond: Double) {
        if let bitrate { self.bitrate = min(max(bitrate, bitsPerSecond), maximum) }
    }

}
