import Foundation

/// Everything a run measured and decided: written as JSON, drawn as HTML, summed up as a table.
public struct LoadReport: Codable, Sendable {
    public struct Check: Codable, Sendable {
        public var name: String
        public var passed: Bool
        public var detail: String
    }

    /// One rejoin after a failed transport (`--rejoin`).
    public struct Rejoin: Codable, Sendable {
        /// Seconds into the run when the old transport's media stopped (its last packet from
        /// the host), and why it was given up.
        public var failedAt: Double
        public var reason: String
        /// The host whose session it got (the owner, after any redirect), and the tries it took.
        public var host: String
        public var attempts: Int
        /// From the last packet of the old transport to the first media packet of the new one:
        /// what a user of the page would miss.
        public var gapMilliseconds: Double
    }

    public struct Participant: Codable, Sendable {
        public var identity: String
        public var speaker: Bool
        public var decodes: Bool
        public var joins: Int
        public var failures: [String]
        public var joinMilliseconds: [Double]
        public var firstFrameMilliseconds: Double?
        public var audioPacketsReceived: Int
        public var videoPacketsReceived: Int
        public var lossFraction: Double
        /// What it lost other than to its own impaired network (`--loss`); nil without one.
        public var lossBeyondImpairmentFraction: Double?
        public var jitterMilliseconds: Double
        public var videoFramesReceived: Int
        public var framesDecoded: Int
        public var freezes: Int
        public var freezeMilliseconds: Double
        public var longestFreezeMilliseconds: Double
        /// Repair of the composite: NACKs and key frame requests it sent, packets that came
        /// again on the host's RTX stream, and key frames that arrived.
        public var nacksSent: Int
        public var keyFrameRequestsSent: Int
        public var retransmissionsReceived: Int
        public var keyFramesReceived: Int
        /// After `--blackout`: how soon the mix and the composite came back.
        public var audioRecoveryMilliseconds: Double?
        public var videoRecoveryMilliseconds: Double?
        /// Host audio packets that never came, as a share of those expected: what its player
        /// conceals (the mix is not resent).
        public var audioConcealedFraction: Double?
        /// A/V offset (SR-mapped, positive: lips late), median and 95th percentile of its size.
        public var avOffsetMillisecondsMedian: Double?
        public var avOffsetMillisecondsP95: Double?
        /// Per speaker heard: the fraction of the mix frames (while it spoke) that held its tone.
        public var heard: [String: Double]
        /// The fraction of mix frames holding the participant's own tone (speakers only).
        public var ownToneFraction: Double?
        public var slotChecks: Int
        public var slotChecksPassed: Int
        public var audioLatencyMedianMilliseconds: Double?
        public var videoLatencyMedianMilliseconds: Double?
        /// `--simulcast`: the layer (rid) of its camera the host decoded, and that picture's
        /// width, as the host last said (`GET /v1/rooms/{room}`).
        public var cameraLayer: String?
        public var cameraDecodedWidth: Int?
        /// The host its first join's session was on, and its rejoins (`--rejoin`).
        public var firstHost: String? = nil
        public var rejoins: [Rejoin]? = nil
    }

    /// One second of the run.
    public struct Sample: Codable, Sendable {
        public var seconds: Double
        public var participantsConnected: Int
        public var packetsInPerSecond: Double
        public var packetsOutPerSecond: Double
        public var lossFraction: Double
        public var audioLatencyMilliseconds: Double?
        public var videoLatencyMilliseconds: Double?
        /// The host's CPU (one core = 1) from its /metrics, when it reports it.
        public var hostCPU: Double?
        public var compositeFramesPerSecond: Double?
    }

    /// Medians and percentiles over the run.
    public struct Figures: Codable, Sendable {
        public var participants: Int
        public var speakers: Int
        public var video: String
        public var durationSeconds: Double
        public var joinMillisecondsMedian: Double?
        public var firstFrameMillisecondsMedian: Double?
        public var audioLatencyMillisecondsMedian: Double?
        public var audioLatencyMillisecondsP95: Double?
        public var videoLatencyMillisecondsMedian: Double?
        public var videoLatencyMillisecondsP95: Double?
        public var lossFractionMax: Double
        public var jitterMillisecondsMedian: Double?
        public var freezes: Int
        /// The longest time any receiver's composite stood still (over 200 ms).
        public var longestFreezeMilliseconds: Double
        /// Repair over all receivers: NACKs sent, packets resent on RTX, key frames received
        /// (median per receiver).
        public var nacksSent: Int
        public var retransmissionsReceived: Int
        public var keyFramesPerReceiverMedian: Double?
        /// After `--blackout`, over receivers: the slowest recovery of the mix and of the composite.
        public var audioRecoveryMillisecondsMax: Double?
        public var videoRecoveryMillisecondsMax: Double?
        /// The mix packets receivers never got (each concealed), median share over receivers.
        public var audioConcealedFractionMedian: Double?
        /// Lip sync as receivers that play by the host's sender reports see it: each speaker's new
        /// camera frames against its last tone onset (positive: lips late). Median, and the 95th
        /// percentile of its size.
        public var avOffsetMillisecondsMedian: Double?
        public var avOffsetMillisecondsP95: Double?
        /// The same in the recording (`--record`), as a player shows the file: onsets measured,
        /// median, and the 95th percentile of its size.
        public var recordingOnsetsMeasured: Int?
        public var recordingAVOffsetMillisecondsMedian: Double?
        public var recordingAVOffsetMillisecondsP95: Double?
        /// `--simulcast`: how many guests' cameras the host decoded on each layer (rid).
        public var simulcastLayers: [String: Int]?
        /// While everyone was in (from the last join plus 2 s to the end):
        public var steadySeconds: Double
        public var hostCPU: Double?
        public var hostCPUPerParticipant: Double?
        /// The host's composite pictures drawn per second, over all its rooms.
        public var compositeFramesPerSecond: Double?
        /// Whole composite frames received per second by the slowest receiver of this run's room.
        public var compositeFramesReceivedPerSecondMin: Double?
        public var compositePicturesDropped: Double?
        /// Camera frames the host received and decoded per second, and those it dropped.
        public var cameraFramesDecodedPerSecond: Double?
        public var cameraFramesDropped: Double?
        public var hostPacketsLost: Double?
        public var loadGeneratorCPU: Double
        public var loadGeneratorCPUPerParticipant: Double
        /// How late the load generator's own 20 ms send tick fired at worst, and when (seconds
        /// into the run): a late instant of the host's media at the same time may be the
        /// generator's (or the machine's), not the host's.
        public var loadTickLateMillisecondsMax: Double?
        public var loadTickLateAtSeconds: Double?
        /// What the load generator decoded, in words.
        public var decoding: String
        /// `--rejoin`: rejoins after a failed transport, and their gaps (last packet before to
        /// first media packet after), median and longest.
        public var rejoins: Int? = nil
        public var rejoinGapMillisecondsMedian: Double? = nil
        public var rejoinGapMillisecondsMax: Double? = nil
    }

    public var url: String
    public var room: String
    public var startedAt: String
    public var passed: Bool
    public var checks: [Check]
    public var figures: Figures
    public var participants: [Participant]
    public var samples: [Sample]
    public var audioLatencies: [[Double]]
    /// `--record`: each onset measured in the file, [seconds into the recording, A/V offset ms].
    public var recordingOffsets: [[Double]]?
    public var videoLatencies: [[Double]]

    // MARK: Output

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// The table printed at the end of a run.
    public var table: String {
        func value(_ number: Double?, _ unit: String = "", digits: Int = 1) -> String {
            number.map { String(format: "%.\(digits)f", $0) + unit } ?? "-"
        }
        let f = figures
        var rows: [(String, String)] = [
            ("participants", "\(f.participants) (\(f.speakers) speaking, video \(f.video))"),
            ("steady window", value(f.steadySeconds, " s")),
            ("join (POST to secure), median", value(f.joinMillisecondsMedian, " ms")),
            ("first composite frame, median", value(f.firstFrameMillisecondsMedian, " ms")),
            ("audio latency median / p95", "\(value(f.audioLatencyMillisecondsMedian, " ms")) / \(value(f.audioLatencyMillisecondsP95, " ms"))"),
            ("video latency median / p95", "\(value(f.videoLatencyMillisecondsMedian, " ms")) / \(value(f.videoLatencyMillisecondsP95, " ms"))"),
            ("loss, worst participant", value(f.lossFractionMax * 100, " %", digits: 2)),
            ("jitter, median", value(f.jitterMillisecondsMedian, " ms")),
            ("freezes (> 200 ms), longest", "\(f.freezes), \(value(f.longestFreezeMilliseconds, " ms", digits: 0))"),
            ("NACKs sent / resent packets received", "\(f.nacksSent) / \(f.retransmissionsReceived)"),
            ("key frames per receiver, median", value(f.keyFramesPerReceiverMedian, digits: 0)),
            ("A/V offset by sender reports, median / p95 of size", "\(value(f.avOffsetMillisecondsMedian, " ms")) / \(value(f.avOffsetMillisecondsP95, " ms"))"),
            ("A/V offset in the recording, median / p95 of size", f.recordingOnsetsMeasured == nil ? "-"
                : "\(value(f.recordingAVOffsetMillisecondsMedian, " ms")) / \(value(f.recordingAVOffsetMillisecondsP95, " ms")) (\(f.recordingOnsetsMeasured ?? 0) onsets)"),
            ("mix concealed (packets never received), median", value(f.audioConcealedFractionMedian.map { $0 * 100 }, " %", digits: 2)),
            ("after the blackout: mix / composite back within", "\(value(f.audioRecoveryMillisecondsMax, " ms", digits: 0)) / \(value(f.videoRecoveryMillisecondsMax, " ms", digits: 0))"),
            ("rejoins after a failed transport, gap median / longest", f.rejoins.map {
                "\($0), \(value(f.rejoinGapMillisecondsMedian, " ms", digits: 0)) / \(value(f.rejoinGapMillisecondsMax, " ms", digits: 0))"
            } ?? "-"),
            ("host CPU (cores)", value(f.hostCPU, digits: 3)),
            ("host CPU per participant", value(f.hostCPUPerParticipant.map { $0 * 100 }, " % of a core", digits: 2)),
            ("composite frames per second (host, every room)", value(f.compositeFramesPerSecond)),
            ("composite frames received per second (slowest receiver)", value(f.compositeFramesReceivedPerSecondMin)),
            ("composite pictures dropped", value(f.compositePicturesDropped, digits: 0)),
            ("camera frames decoded by the host per second", value(f.cameraFramesDecodedPerSecond)),
            ("camera frames the host dropped", value(f.cameraFramesDropped, digits: 0)),
            ("load generator CPU per participant", value(f.loadGeneratorCPUPerParticipant * 100, " % of a core", digits: 2)),
            ("load generator's own send tick, latest (at)", f.loadTickLateMillisecondsMax.map {
                "\(value($0, " ms", digits: 0)) (\(value(f.loadTickLateAtSeconds, " s")))"
            } ?? "-"),
            ("decoding", f.decoding),
        ]
        rows += checks.map { ("check: \($0.name)", ($0.passed ? "PASS" : "FAIL") + ($0.detail.isEmpty ? "" : " (\($0.detail))")) }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }

    /// A page with the figures, the checks and four plots (inline SVG, no script).
    public var html: String {
        let escape = { (text: String) in
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        let joinTimes = participants.flatMap(\.joinMilliseconds).sorted()
        let cdf = joinTimes.enumerated().map { (x: $1, y: Double($0 + 1) / Double(joinTimes.count)) }
        let plots = [
            SVGPlot(title: "Latency over time (ms)", xLabel: "run time (s)", series: [
                ("audio", "#1f77b4", audioLatencies.map { (x: $0[0], y: $0[1]) }, true),
                ("video", "#d62728", videoLatencies.map { (x: $0[0], y: $0[1]) }, true),
            ]).svg,
            SVGPlot(title: "Join time, CDF (POST to secure, ms)", xLabel: "ms", series: [("joins", "#2ca02c", cdf, false)]).svg,
            SVGPlot(title: "Loss per participant (%)", xLabel: "participant", series: [
                ("loss", "#9467bd", participants.enumerated().map { (x: Double($0), y: $1.lossFraction * 100) }, true),
            ]).svg,
            SVGPlot(title: "Host CPU over time (cores, from /metrics)", xLabel: "run time (s)", series: [
                ("host CPU", "#ff7f0e", samples.compactMap { sample in sample.hostCPU.map { (x: sample.seconds, y: $0) } }, false),
            ]).svg,
        ]
        let checkRows = checks.map {
            "<tr><td>\(escape($0.name))</td><td class=\($0.passed ? "pass" : "fail")>\($0.passed ? "PASS" : "FAIL")</td><td>\(escape($0.detail))</td></tr>"
        }.joined(separator: "\n")
        return """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>tessera load: \(escape(room))</title>
            <style>body{font-family:sans-serif;margin:2em;max-width:1100px} td,th{padding:2px 10px;text-align:left}
            .pass{color:#2a2} .fail{color:#c22;font-weight:bold} pre{background:#f4f4f4;padding:1em} svg{margin:0.5em}</style>
            </head><body>
            <h1>tessera load: \(passed ? "passed" : "FAILED")</h1>
            <p>\(escape(url)), room \(escape(room)), started \(escape(startedAt))</p>
            <h2>Checks</h2><table>\(checkRows)</table>
            <h2>Figures</h2><pre>\(escape(table))</pre>
            <h2>Plots</h2>
            \(plots.joined(separator: "\n"))
            </body></html>
            """
    }
}

/// A small scatter or line plot as SVG.
struct SVGPlot {
    let title: String
    let xLabel: String
    /// (name, colour, points, dots rather than a line).
    let series: [(String, String, [(x: Double, y: Double)], Bool)]

    var svg: String {
        let width = 520.0, height = 300.0, left = 55.0, right = 15.0, top = 30.0, bottom = 40.0
        let points = series.flatMap(\.2)
        let maxX = max(points.map(\.x).max() ?? 1, 1e-9), maxY = max(points.map(\.y).max() ?? 1, 1e-9)
        let minX = min(points.map(\.x).min() ?? 0, 0)
        func px(_ x: Double) -> Double { left + (x - minX) / max(maxX - minX, 1e-9) * (width - left - right) }
        func py(_ y: Double) -> Double { height - bottom - y / maxY * (height - top - bottom) }
        var body = "<text x=\"\(left)\" y=\"18\" font-size=\"14\">\(title)</text>"
        body += "<line x1=\"\(left)\" y1=\"\(height - bottom)\" x2=\"\(width - right)\" y2=\"\(height - bottom)\" stroke=\"#888\"/>"
        body += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(height - bottom)\" stroke=\"#888\"/>"
        for tick in 0...4 {
            let y = maxY * Double(tick) / 4, x = minX + (maxX - minX) * Double(tick) / 4
            body += "<text x=\"\(left - 5)\" y=\"\(py(y) + 4)\" font-size=\"10\" text-anchor=\"end\">\(String(format: "%.3g", y))</text>"
            body += "<text x=\"\(px(x))\" y=\"\(height - bottom + 14)\" font-size=\"10\" text-anchor=\"middle\">\(String(format: "%.3g", x))</text>"
        }
        body += "<text x=\"\((left + width) / 2)\" y=\"\(height - 6)\" font-size=\"11\" text-anchor=\"middle\">\(xLabel)</text>"
        for (index, (name, colour, values, dots)) in series.enumerated() {
            body += "<text x=\"\(width - right - 90)\" y=\"\(top + 14 * Double(index))\" font-size=\"11\" fill=\"\(colour)\">\(name)</text>"
            if values.isEmpty { continue }
            if dots {
                // At most 4000 dots: a long run's samples are thinned evenly.
                let step = max(1, values.count / 4000)
                for point in stride(from: 0, to: values.count, by: step).map({ values[$0] }) {
                    body += "<circle cx=\"\(String(format: "%.1f", px(point.x)))\" cy=\"\(String(format: "%.1f", py(point.y)))\" r=\"1.5\" fill=\"\(colour)\"/>"
                }
            } else {
                let path = values.map { String(format: "%.1f,%.1f", px($0.x), py($0.y)) }.joined(separator: " ")
                body += "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" points=\"\(path)\"/>"
            }
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\">\(body)</svg>"
    }
}

/// Order statistics of a sample.
enum Percentile {
    static func of(_ values: [Double], _ fraction: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
    }
}
