import RTP
import Wire

/// The receive side of transport-wide congestion control
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3): records when each packet carrying a
/// transport-wide sequence number arrived, and every `interval` turns what came since the last
/// feedback into a transport-cc feedback packet, so that the sender's own estimator (a browser's
/// GCC for its camera) sees the path's delay and loss.
///
/// Each feedback covers the numbers from the one after the last reported up to the highest
/// arrived. A number that arrives after it was reported lost (late, reordered by jitter) moves
/// the next feedback's start back to it, so the sender learns it arrived (as libwebrtc's
/// `RemoteEstimatorProxy`, whose window start goes back to the lowest number that arrives);
/// arrivals stay held for `backWindow` after they were reported, so that feedback reports them
/// again with their times. Bounded: at most `maximumStatuses` numbers per feedback (the rest go
/// in the next) and the same number of arrivals held.
public struct TransportFeedbackRecorder: Sendable {
    /// How often feedback goes out while packets arrive (libwebrtc's default: 100 ms).
    public static let interval: Duration = .milliseconds(100)
    /// Statuses per feedback packet at most; also the arrivals held.
    public static let maximumStatuses = 1024
    /// How long an arrival is held after it was reported, for a late number's feedback.
    public static let backWindow: Duration = .milliseconds(500)

    private var unwrapper = SequenceUnwrapper()
    /// Arrival per unwrapped number not yet reported, or reported within `backWindow`.
    private var arrivals: [Int64: Instant] = [:]
    /// Numbers reported, with when, oldest first: when each leaves `arrivals`.
    private var reported: [(sequence: Int64, at: Instant)] = []
    private var reportedHead = 0
    /// The first number the next feedback covers.
    private var nextReported: Int64?
    private var highest: Int64?
    private var feedbackCount: UInt8 = 0
    private var lastFeedback: Instant?
    /// When the oldest arrival not yet reported came.
    private var pendingSince: Instant?
    /// Feedback packets made so far.
    public private(set) var feedbackSent = 0

    public init() {}

    /// A packet with transport-wide sequence number `sequenceNumber` arrived at `now`.
    public mutating func packetArrived(sequenceNumber: UInt16, now: Instant) {
        let sequence = unwrapper.unwrap(sequenceNumber)
        guard arrivals[sequence] == nil else { return }  // a duplicate
        if let next = nextReported, sequence < next {
            // Late: reported missing. Reported again from it, if the stretch fits one feedback.
            guard let highest, highest - sequence < Int64(Self.maximumStatuses) else { return }
            nextReported = sequence
        }
        if nextReported == nil { nextReported = sequence }
        forgetReported(olderThan: Self.backWindow, now: now)
        guard arrivals.count < Self.maximumStatuses else { return }
        arrivals[sequence] = now
        if pendingSince == nil { pendingSince = now }
        if sequence > highest ?? .min { highest = sequence }
    }

    /// When feedback is next due, or nil while nothing waits to be reported.
    public var nextTimeout: Instant? {
        guard let pendingSince else { return nil }
        return max(pendingSince, lastFeedback.map { $0 + Self.interval } ?? pendingSince)
    }

    /// The feedback due at `now` (nil when none is), from `senderSSRC` about `mediaSSRC`.
    public mutating func pollFeedback(now: Instant, senderSSRC: SSRC, mediaSSRC: SSRC) -> TransportCCFeedback? {
        guard let due = nextTimeout, due <= now, let first = nextReported, let highest else { return nil }
        let last = min(highest, first + Int64(Self.maximumStatuses) - 1)
        // The reference time is the first arrival's, in 64 ms units; deltas are 250 µs ticks
        // from it, then from each previous arrival (§3.1).
        var firstArrival: Instant?
        for sequence in first...last where firstArrival == nil { firstArrival = arrivals[sequence] }
        guard let firstArrival else {
            // A jump of over `maximumStatuses` numbers: nothing arrived in this stretch.
            nextReported = last + 1
            return nil
        }
        let microseconds = Int64(firstArrival.nanoseconds / 1_000)
        let referenceTime = microseconds / 64_000
        var previousTick = referenceTime * 256
        var deltas: [Int16?] = []
        deltas.reserveCapacity(Int(last - first + 1))
        var end = last
        for sequence in first...last {
            guard let arrival = arrivals[sequence] else {
                deltas.append(nil)
                continue
            }
            let tick = Int64(arrival.nanoseconds / 1_000) / 250
            guard let delta = Int16(exactly: tick - previousTick) else {
                // A gap of over 8 s between arrivals: the rest goes in the next feedback.
                end = sequence - 1
                break
            }
            deltas.append(delta)
            previousTick = tick
        }
        for sequence in first...end where arrivals[sequence] != nil { reported.append((sequence, now)) }
        nextReported = end + 1
        pendingSince = highest > end ? now : nil
        lastFeedback = now
        let feedback = TransportCCFeedback(
            senderSSRC: senderSSRC, mediaSSRC: mediaSSRC, baseSequenceNumber: UInt16(truncatingIfNeeded: first),
            referenceTime: UInt32(truncatingIfNeeded: referenceTime) & 0xFF_FFFF, feedbackPacketCount: feedbackCount,
            receiveDeltas: deltas)
        feedbackCount &+= 1
        feedbackSent += 1
        return feedback
    }

    /// Lets go of arrivals reported more than `age` before `now`.
    private mutating func forgetReported(olderThan age: Duration, now: Instant) {
        while reportedHead < reported.count, now - reported[reportedHead].at > age {
            arrivals[reported[reportedHead].sequence] = nil
            reportedHead += 1
        }
        if reportedHead > 256, reportedHead * 2 > reported.count {
            reported.removeFirst(reportedHead)
            reportedHead = 0
        }
    }
}
