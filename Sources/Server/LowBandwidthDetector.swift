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
struct LowBandwidthDetector {
    /// Below this (bits/s) the receiver is low. Under the main encoding's usual bitrate.
    static let lowBelow = 700_000
    /// Above this (bits/s) a low receiver goes back to the main encoding.
    static let highAbove = 1_200_000
    /// The shortest time between two changes.
    static let minimumDwell: Duration = .seconds(3)

    private(set) var estimate: ReceiverBandwidthEstimate
    /// Whether the receiver should get the lower encoding.
    private(set) var isLow = false
    private var lastChange: Instant?

    /// A detector for the receiver of the host's video SSRC `hostVideo`.
    init(hostVideo: SSRC) {
        estimate = ReceiverBandwidthEstimate(mediaSSRCs: [hostVideo])
    }

    /// Takes a compound RTCP packet from the receiver: report blocks about the host video SSRC
    /// (in an RR or an SR) are loss samples, a REMB naming it caps the estimate.
    mutating func receive(_ packets: [RTCPPacket], now: Instant) {
        for packet in packets {
            switch packet {
            case .receiverReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
            case .senderReport(let report):
                for block in report.reports { estimate.receivedReceptionReport(block, now: now) }
            case .receiverEstimatedMaximumBitrate(let remb):
                estimate.receivedREMB(remb, now: now)
            default:
                break
            }
        }
        evaluate(now: now)
    }

    /// Applies the thresholds to the estimate at `now`; true when `isLow` changed.
    @discardableResult
    mutating func evaluate(now: Instant) -> Bool {
        if let lastChange, now - lastChange < Self.minimumDwell { return false }
        let bitsPerSecond = estimate.estimate(now: now).bitsPerSecond
        let low = isLow ? bitsPerSecond <= Self.highAbove : bitsPerSecond < Self.lowBelow
        guard low != isLow else { return false }
        isLow = low
        lastChange = now
        return true
    }
}
