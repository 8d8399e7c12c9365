import RTP
import Streams
import Wire

/// Whether one receiver of the composite should get the room's lower encoding: its
/// `ReceiverBandwidthEstimate` (fed with the receiver reports and REMB it sends about its host
/// video SSRC) against two thresholds, with hysteresis so that an estimate hovering near one
/// threshold does not flip the receiver between encodings (each switch costs a key frame).
///
/// Low when the estimate falls below `lowBelow`; back to the main encoding only above `highAbove`;
/// and at most one change per `minimumDwell` (the first change may come at once).
///
/// A REMB counts only when it is below what the host sent the receiver: a browser's congestion
/// control (GCC) keeps its REMB near 1.5 times what it receives, so while the composite is still
/// and small, Chromium reports 300-600 kbit/s with nothing wrong. Such a REMB is no sign of a
/// shortfall; one under 90% of the rate sent is. The same holds on the lower encoding, so a
/// receiver whose REMB only follows what it gets climbs back by its loss-based estimate; if the
/// main encoding is then too much for it, its REMBs fall under the rate sent and it goes low again.
public struct LowBandwidthDetector {
    /// Below this (bits/s) the receiver is low. Under the main encoding's usual bitrate.
    public static let lowBelow = 700_000
    /// Above this (bits/s) a low receiver goes back to the main encoding.
    public static let highAbove = 1_200_000
    /// The shortest time between two changes.
    public static let minimumDwell: Duration = .seconds(3)

    public private(set) var estimate: ReceiverBandwidthEstimate
    /// Whether the receiver should get the lower encoding.
    public private(set) var isLow = false
    private var lastChange: Instant?
    /// The rate of video the host sent the receiver over the last whole window, and the window
    /// being counted.
    public private(set) var sentBitsPerSecond: Int?
    private var sentWindow: (start: Instant, bytes: Int)?
    public static let sendRateWindow: Duration = .seconds(1)

    /// A detector for the receiver of the host's video SSRC `hostVideo`.
    public init(hostVideo: SSRC) {
        estimate = ReceiverBandwidthEstimate(mediaSSRCs: [hostVideo])
    }

    /// Takes a compound RTCP packet from the receiver: report blocks about the host video SSRC
    /// (in an RR or an SR) are loss samples, a REMB naming it caps the estimate.
    public mutating func receive(_ packets: [RTCPPacket], now: Instant) {
        for packet in packets {
            switch packet {
            case .receiverReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
            case .senderReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
            case .receiverEstimatedMaximumBitrate(let remb):
                let shortfall = sentBitsPerSecond.map { Double(remb.bitrate) < 0.9 * Double($0) } ?? false
                if shortfall { estimate.receivedREMB(remb, now: now) } else { estimate.forgetREMB() }
            default:
                break
            }
        }
        evaluate(now: now)
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

    /// Applies the thresholds to the estimate at `now`; true when `isLow` changed.
    @discardableResult
    public mutating func evaluate(now: Instant) -> Bool {
        if let lastChange, now - lastChange < Self.minimumDwell { return false }
        let bitsPerSecond = estimate.estimate(now: now).bitsPerSecond
        let low = isLow ? bitsPerSecond <= Self.highAbove : bitsPerSecond < Self.lowBelow
        guard low != isLow else { return false }
        isLow = low
        lastChange = now
        return true
    }
}
