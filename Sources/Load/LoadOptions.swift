import Foundation
import Wire

/// What `tessera load` was asked to do, read from its command line.
public struct LoadOptions: Sendable, Equatable {
    /// The picture each synthetic camera sends.
    public struct VideoFormat: Sendable, Equatable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public var framesPerSecond: Int
        public var description: String { "\(width)x\(height)@\(framesPerSecond)" }
    }

    /// The host's base URL, without a trailing slash (`http://127.0.0.1:8080`).
    public var url = "http://127.0.0.1:8080"
    /// Every host of `--url` (a comma-separated list), `url` first: a rejoin (`--rejoin`) tries
    /// them in turn.
    public var urls = ["http://127.0.0.1:8080"]
    /// The URL's host part, as written (brackets removed from IPv6).
    public var host = "127.0.0.1"
    public var room = "load"
    public var participants = 10
    /// How long the run lasts from its start; every run ends then.
    public var duration: Duration = .seconds(30)
    /// Joins per second while the room fills.
    public var joinRate = 10.0
    /// Each camera's picture; nil for an audio-only run.
    public var video: VideoFormat? = VideoFormat(width: 640, height: 360, framesPerSecond: 30)
    /// Participants that send a tone (the first K); the others send silence.
    public var speakers = 3
    /// The most voices the host mixes (its `audio.maxVoices`; 0 for no bound): with more
    /// speakers than that, a listener is checked to hear that many of them steadily, no more.
    public var maxVoices = 3
    /// Leaves per second (each leaver rejoins a second later); 0 for none.
    public var churn = 0.0
    /// Whether audio packets carry their RFC 6464 level, as browsers send it (off: as peers
    /// that send none, whose every packet the host decodes).
    public var audioLevels = true
    /// Each camera sends three simulcast layers (RFC 8853), as Chrome does: the `video` size,
    /// half and a quarter of it, by rid `f`, `h` and `q`.
    public var simulcast = false
    /// Participants that decode the composite to check colours and read frame codes.
    public var decoders = 2
    /// Where the report goes: PATH.json and PATH.html.
    public enum ReportDestination: Sendable, Equatable {
        /// `reports/tessera-load-YYYYMMDD-HHMMSS` under the working directory.
        case defaultFolder
        /// The path given with `--report`, without extension.
        case path(String)
        /// `--report none`.
        case none
    }
    public var report = ReportDestination.defaultFolder
    /// The folder reports go to when `--report` is not given.
    public static let defaultReportFolder = "reports"
    /// Hosts outside loopback are refused unless this is set.
    public var allowRemote = false
    /// No live progress line.
    public var quiet = false
    /// Check bounds: the 95th percentile of each latency, and the loss any participant may see.
    public var maxAudioLatencyMilliseconds = 500.0
    public var maxVideoLatencyMilliseconds = 800.0
    public var maxLossFraction = 0.02
    /// The network each participant's media (RTP and RTCP, both ways) meets; nil for none.
    public var impairment: NetworkImpairment?
    /// Seeds the impairment (each participant's own network is seeded from it).
    public var seed: UInt64 = 1
    /// When (from the run's start) every participant's network goes dark for
    /// `blackoutLength`, both ways; the report says how soon media came back.
    public var blackoutAt: Duration?
    public static let blackoutLength: Duration = .seconds(2)
    /// `--record FOLDER`: the run is recorded (`POST …/recordings`) once everyone is in, and
    /// the file, read from FOLDER (the host's `recordings.folder`, on this machine), is checked
    /// for lip sync.
    public var recordingsFolder: String?
    /// `--secret S`: the host's `auth.secret`; the run signs the tokens it needs with it (each
    /// participant's join its own, the run's other calls the room's admin token).
    public var secret: String?
    /// `--attack`: a hostile peer joins beside the guests and sends what a broken or hostile
    /// one would, while the guests' checks go on (`LoadAttacker`).
    public var attack = false
    /// `--rejoin`: a participant whose transport fails (consent or DTLS lost, or nothing from
    /// the host for `rejoinSilence`) joins again, same room and identity, through the hosts of
    /// `urls` in turn, as a client of a cluster whose host died would.
    public var rejoin = false
    /// No RTP or RTCP from the host for this long is a failed transport (under `--rejoin`):
    /// longer than `--blackout`'s 2 s, which is a network going dark, not a host gone.
    public static let rejoinSilence: Duration = .seconds(3)
    /// A rejoin's tries: at most this many, within this long of the failure, each after a wait
    /// that doubles from the first to the last.
    public static let rejoinAttempts = 12
    public static let rejoinWindow: Duration = .seconds(30)
    public static let rejoinBackoff: (first: Duration, last: Duration) = (.milliseconds(250), .seconds(1))

    public init() {}

    public static let usage = """
        usage: tessera load [--url http://127.0.0.1:8080] [--room load] [--participants 10] [--duration 30s]
                            [--join-rate 10] [--video 640x360@30|off] [--speakers 3] [--max-voices 3] [--churn 0]
                            [--audio-levels on|off] [--decoders 2] [--report PATH|none] [--max-audio-latency 500ms]
                            [--max-video-latency 800ms] [--max-loss 2%] [--allow-remote] [--quiet]
                            [--loss 5%] [--burst 3] [--jitter 50ms] [--reorder 1%] [--seed 1] [--blackout 10s]
                            [--record FOLDER] [--secret S] [--attack] [--simulcast] [--rejoin]
        Synthetic participants join the room, send their tone and colour, check what they receive,
        and report: a table on standard output, and PATH.json and PATH.html (by default
        reports/tessera-load-YYYYMMDD-HHMMSS under the working directory; --report none writes
        none). --max-voices K is the host's audio.maxVoices (3; 0 for no bound): with more speakers
        than K, each listener must hear K of them steadily (K - 1 for a chosen speaker), no more.
        --loss, --burst, --jitter and --reorder put each participant's media (RTP and RTCP, both
        ways) through a seeded lossy network; the loss check then judges only what each
        participant lost beyond what its own network dropped (at most --max-loss). --blackout AT
        drops everything every participant sends and receives for 2 s from AT into the run, and
        reports how soon the mix and the composite came back (the freeze check leaves those 2 s
        out, and loss is not judged). --record FOLDER records the room once
        everyone is in until the end, reads the file from FOLDER (the host's recordings folder) and
        checks that it plays with lips and voices together. --secret S (the host's auth.secret) signs a
        token for each participant's join and the room's admin token for the run's other calls. --attack
        adds a hostile peer that joins too and, for the whole run, sends the host random, truncated and
        replayed datagrams, STUN, DTLS and SRTP that must fail, RTCP claiming the guests' SSRCs, hostile
        SDP and malformed HTTP; the run checks the host refused them while every other check held. --name=value works as well as --name value. Exit status 0 only when every
        check passed, 1 when a check failed, 2 for bad arguments. --simulcast sends each camera as Chrome
        does, in three layers (the --video size, half and a quarter, rids f, h and q), and reports
        which layer the host decoded for each guest. --url takes a comma-separated list of hosts (one
        cluster's); the run joins through the first. --rejoin: a participant whose transport fails
        (ICE consent or DTLS lost, or 3 s without RTP or RTCP from the host) joins again, same room and
        identity, through the hosts of --url in turn (the failed one last; following the 307 to the
        room's owner), at most 12 tries within 30 s, 250 ms to 1 s apart; the report counts the rejoins and the gaps from the
        last packet before the failure to the first after, and the checks judge media outside them.
        """

    /// Reads `tessera load`'s arguments (after the subcommand).
    public init(arguments: [String]) throws(LoadOptionsError) {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--") else { throw .unexpected(argument) }
            let name = String(argument.dropFirst(2))
            switch name {
            case "allow-remote": allowRemote = true; continue
            case "quiet": quiet = true; continue
            case "attack": attack = true; continue
            case "simulcast": simulcast = true; continue
            case "rejoin": rejoin = true; continue
            default: break
            }
            guard let value = rest.popFirst() else { throw .missingValue(argument) }
            func bad(_ why: String) -> LoadOptionsError { .badValue(option: argument, value: value, why: why) }
            switch name {
            case "url": url = value
            case "room":
                guard Self.isValidName(value) else { throw bad("1 to 64 of A-Z a-z 0-9 - _ .") }
                room = value
            case "participants":
                guard let count = Int(value), (1...2000).contains(count) else { throw bad("a count from 1 to 2000") }
                participants = count
            case "duration":
                guard let duration = Self.duration(value), duration >= .seconds(1), duration <= .seconds(86_400) else {
                    throw bad("a duration from 1s to 24h, like 30s, 2m or 1500ms")
                }
                self.duration = duration
            case "join-rate":
                guard let rate = Double(value), rate > 0, rate <= 1000 else { throw bad("joins per second, above 0 and at most 1000") }
                joinRate = rate
            case "video":
                if value == "off" { video = nil; continue }
                guard let format = Self.videoFormat(value) else { throw bad("WIDTHxHEIGHT@FPS (even sizes 64-1920, 1-60 fps) or off") }
                video = format
            case "speakers":
                guard let count = Int(value), (0...SyntheticSignal.mostSpeakers).contains(count) else { throw bad("a count from 0 to \(SyntheticSignal.mostSpeakers)") }
                speakers = count
            case "max-voices":
                guard let count = Int(value), (0...64).contains(count) else { throw bad("a count from 0 (no bound) to 64") }
                maxVoices = count
            case "churn":
                guard let rate = Double(value), rate >= 0, rate <= 100 else { throw bad("leaves per second, from 0 to 100") }
                churn = rate
            case "audio-levels":
                guard value == "on" || value == "off" else { throw bad("on or off") }
                audioLevels = value == "on"
            case "decoders":
                guard let count = Int(value), (0...50).contains(count) else { throw bad("a count from 0 to 50") }
                decoders = count
            case "report":
                guard !value.isEmpty else { throw bad("a path without extension, or none") }
                report = value == "none" ? .none : .path(value)
            case "max-audio-latency", "max-video-latency":
                guard let bound = Self.duration(value), bound > .zero else { throw bad("a duration like 400ms") }
                let milliseconds = bound.seconds * 1000
                if name == "max-audio-latency" { maxAudioLatencyMilliseconds = milliseconds } else { maxVideoLatencyMilliseconds = milliseconds }
            case "loss", "reorder":
                let number = value.hasSuffix("%") ? Double(value.dropLast()).map { $0 / 100 } : Double(value)
                guard let fraction = number, fraction >= 0, fraction <= 1 else { throw bad("a fraction like 0.05 or 5%") }
                var impairment = self.impairment ?? NetworkImpairment(delay: .zero)
                if name == "loss" { impairment.loss = fraction } else { impairment.reorder = fraction }
                self.impairment = impairment
            case "burst":
                guard let length = Double(value), length >= 1, length <= 100 else { throw bad("a mean burst length from 1 to 100 packets") }
                var impairment = self.impairment ?? NetworkImpairment(delay: .zero)
                impairment.burstLength = length
                self.impairment = impairment
            case "jitter":
                guard let jitter = Self.duration(value), jitter <= .seconds(10) else { throw bad("a duration like 50ms") }
                var impairment = self.impairment ?? NetworkImpairment(delay: .zero)
                impairment.jitter = jitter
                self.impairment = impairment
            case "seed":
                guard let seed = UInt64(value) else { throw bad("a whole number") }
                self.seed = seed
            case "record":
                guard !value.isEmpty else { throw bad("the host's recordings folder") }
                recordingsFolder = value
            case "secret":
                guard !value.isEmpty else { throw bad("the host's auth.secret") }
                secret = value
            case "blackout":
                guard let at = Self.duration(value), at >= .seconds(1), at <= .seconds(86_400) else { throw bad("a time into the run, like 10s") }
                blackoutAt = at
            case "max-loss":
                let number = value.hasSuffix("%") ? Double(value.dropLast()).map { $0 / 100 } : Double(value)
                guard let fraction = number, fraction >= 0, fraction <= 1 else { throw bad("a fraction like 0.02 or 2%") }
                maxLossFraction = fraction
            default: throw .unknown(argument)
            }
        }
        if simulcast && video == nil { throw .badValue(option: "--simulcast", value: "", why: "simulcast needs --video") }
        if recordingsFolder != nil && video == nil { throw .badValue(option: "--record", value: recordingsFolder ?? "", why: "lip sync in the recording needs --video") }
        speakers = min(speakers, participants)
        decoders = video == nil ? 0 : min(decoders, participants)
        var bases: [String] = []
        for text in url.split(separator: ",", omittingEmptySubsequences: false) {
            let parsed = try Self.hostOfURL(text.trimmingCharacters(in: .whitespaces))
            if !allowRemote && !Self.isLoopback(parsed.host) { throw .remoteRefused(parsed.host) }
            if bases.isEmpty { host = parsed.host }
            bases.append(parsed.base)
        }
        urls = bases
        url = bases.first ?? url
    }

    /// Room and identity names the host accepts.
    static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || byte == 0x2E
        }
    }

    /// `30s`, `2m`, `1h`, `1500ms`, or plain seconds.
    static func duration(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Int64(text.dropLast(2)), value >= 0, value <= 86_400_000 { return .milliseconds(value) }
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600]
        if let unit = text.last, let scale = units[unit], let value = Int64(text.dropLast()), value >= 0, value <= 86_400 {
            return .seconds(value * scale)
        }
        if let value = Int64(text), value >= 0, value <= 86_400 { return .seconds(value) }
        return nil
    }

    /// The simulcast layers' pictures, smallest first (as Chrome lists them): a quarter, half
    /// and the whole of `video` (even sizes); one layer without `--simulcast`.
    public var cameraLayers: [(rid: String?, format: VideoFormat)] {
        guard let video else { return [] }
        guard simulcast else { return [(nil, video)] }
        return [("q", 4), ("h", 2), ("f", 1)].map { rid, divisor in
            (rid, VideoFormat(width: max(16, video.width / divisor) & ~1, height: max(16, video.height / divisor) & ~1,
                              framesPerSecond: video.framesPerSecond))
        }
    }

    /// `640x360@30`.
    static func videoFormat(_ text: String) -> VideoFormat? {
        let sizeAndRate = text.split(separator: "@", omittingEmptySubsequences: false)
        guard sizeAndRate.count == 2, let fps = Int(sizeAndRate[1]), (1...60).contains(fps) else { return nil }
        let size = sizeAndRate[0].split(separator: "x", omittingEmptySubsequences: false)
        guard size.count == 2, let width = Int(size[0]), let height = Int(size[1]),
              (64...1920).contains(width), (64...1920).contains(height), width % 2 == 0, height % 2 == 0 else { return nil }
        return VideoFormat(width: width, height: height, framesPerSecond: fps)
    }

    /// `http://HOST:PORT[/]` → the base URL without the slash, and HOST.
    static func hostOfURL(_ text: String) throws(LoadOptionsError) -> (base: String, host: String) {
        guard text.hasPrefix("http://") else { throw .badURL(text, "only http:// URLs (the host's API is plain HTTP on loopback)") }
        var rest = text.dropFirst("http://".count)
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?"), !rest.contains("@") else {
            throw .badURL(text, "write http://HOST:PORT with no path")
        }
        let host: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .badURL(text, "an IPv6 address needs its closing ]") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || (after.hasPrefix(":") && UInt16(after.dropFirst()) != nil) else { throw .badURL(text, "bad port") }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty else { throw .badURL(text, "write http://HOST:PORT") }
            if parts.count == 2 { guard UInt16(parts[1]) != nil else { throw .badURL(text, "bad port") } }
            host = parts[0]
        }
        guard !host.isEmpty else { throw .badURL(text, "no host") }
        return ("http://" + rest, String(host))
    }

    /// 127.0.0.0/8, ::1 and localhost.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// Why `tessera load`'s arguments were refused.
public enum LoadOptionsError: Error, Equatable, CustomStringConvertible {
    case unknown(String)
    case unexpected(String)
    case missingValue(String)
    case badValue(option: String, value: String, why: String)
    case badURL(String, String)
    case remoteRefused(String)

    public var description: String {
        switch self {
        case .unknown(let option): "unknown option \(option)"
        case .unexpected(let argument): "unexpected argument \(argument)"
        case .missingValue(let option): "\(option) needs a value"
        case .badValue(let option, let value, let why): "\(option) \(value): \(why)"
        case .badURL(let url, let why): "--url \(url): \(why)"
        case .remoteRefused(let host): "\(host) is not a loopback address: a load test of another machine needs --allow-remote"
        }
    }
}
