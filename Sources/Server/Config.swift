import Cluster
import Compositing
import Foundation
import Sockets
import Transport
import Wire

/// The host's configuration, decoded from `Config/tessera.json`. Every field has a default, so
/// `tessera serve` runs with no file at all, and a file need only name what it changes.
public struct HostConfig: Sendable, Equatable {
    public struct HTTP: Sendable, Equatable {
        /// Where the HTTP API and the web page listen.
        public var listen = "127.0.0.1:8080"
        /// Largest request body accepted; larger ones get 413.
        public var maxBodyBytes = 64 * 1024
        /// Connections held at once (each has a thread), and from one address: a client that
        /// opens many and sends slowly (slowloris) or nothing holds at most its address's share.
        public var connectionLimit = 256
        public var connectionsPerAddress = 32
        /// HTTPS instead of HTTP: PEM files of the certificate (its chain may follow it) and
        /// its unencrypted private key. Nil: plain HTTP.
        public var tls: TLS?
        public init() {}
    }
    public struct TLS: Sendable, Equatable, Codable {
        public var certificate: String
        public var key: String
        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }
    public struct Media: Sendable, Equatable {
        /// The one UDP port every peer's media shares (demuxed by ICE username, then address).
        public var listen = "127.0.0.1:50000"
        /// Addresses announced as ICE candidates; empty means the listen address.
        public var announce: [String] = []
        /// Where ICE-TCP (RFC 6544) listens for peers whose UDP is blocked: `HOST:PORT`, or
        /// `off`. Nil: `listen`'s address and port, on TCP.
        public var tcpListen: String?
        public init() {}

        /// The TCP address to listen on, nil when off.
        public var tcpAddress: String? {
            guard let tcpListen else { return listen }
            return tcpListen == "off" ? nil : tcpListen
        }
    }
    public struct Auth: Sendable, Equatable {
        /// HS256 secret for join tokens. Without it auth is off, allowed only on loopback.
        public var secret: String?
        public init() {}
    }

    public struct Limits: Sendable, Equatable {
        public var maxRooms = 100
        public var maxParticipantsPerRoom = 50
        /// The most voices a mix holds, the loudest (Top K); 0 for no bound.
        public var maxVoices = 3
        /// Threads that decode the rooms' cameras and screens; nil: one per core but the media
        /// loop's, at least one.
        public var decodeWorkers: Int?
        public init() {}
    }

    public struct Recordings: Sendable, Equatable {
        /// Where recordings are written (made when the first starts).
        public var folder = "recordings"
        public init() {}
    }

    /// The room composite: one canvas per room, encoded once and sent to every participant.
    public struct Video: Sendable, Equatable {
        /// Canvas width in pixels (2…3840), until a template sets another.
        public var width = 1280
        /// Canvas height in pixels (2…2160).
        public var height = 720
        /// Pictures per second (1…60).
        public var fps = 30
        /// The composite's VP8 target bit rate, bits per second.
        public var bitrate = 1_500_000
        /// The lower encoding's width, for receivers whose bandwidth estimate is low (2…3840).
        public var lowWidth = 640
        /// The lower encoding's height (2…2160).
        public var lowHeight = 360
        /// The lower encoding's VP8 target bit rate, bits per second.
        public var lowBitrate = 500_000
        /// The small encoding, for receivers whose estimate is lower still (2…3840 × 2…2160).
        public var smallWidth = 320
        public var smallHeight = 180
        /// The small encoding's VP8 target bit rate, bits per second.
        public var smallBitrate = 150_000
        public init() {}
    }

    /// Deliberate faults, for tests that show a checker (`tessera load`) catches a broken host.
    /// Never set outside such a test.
    public struct Testing: Sendable, Equatable {
        public enum Fault: String, Sendable, Equatable, Codable, CaseIterable {
            /// Every guest's mix holds its own voice too.
            case ownVoiceInMix
            /// Each camera is drawn in the next position's slot (the layout read back is unchanged).
            case camerasInWrongSlots
        }
        public var faults: Set<Fault> = []
        /// Impairs the host's own media socket (RTP and RTCP both ways; STUN and DTLS pass), so
        /// that real peers meet a lossy network: `{"loss": 0.05, "burst": 3, "delay": "20ms",
        /// "jitter": "50ms", "reorder": 0.01, "seed": 1}`, every field optional.
        public var impair: Impair?
        public init() {}
    }

    /// What `testing.impair` does to the media socket's RTP and RTCP.
    public struct Impair: Sendable, Equatable {
        public var loss = 0.0
        public var burst = 1.0
        public var delay: Duration = .zero
        public var jitter: Duration = .zero
        public var reorder = 0.0
        public var seed: UInt64 = 1
        public init() {}

        /// As the in-memory network takes it.
        public var networkImpairment: NetworkImpairment {
            NetworkImpairment(loss: loss, burstLength: burst, delay: delay, jitter: jitter, reorder: reorder)
        }
    }

    /// Many hosts, one service (docs/cluster.md): rooms placed across the hosts that share one
    /// Redis. Nil: this host alone, as before.
    public struct Cluster: Sendable, Equatable {
        /// `redis://HOST:PORT[/DB]`: the directory every host of the cluster shares.
        public var redis: String
        /// This host's name in the cluster (1 to 64 of A-Z a-z 0-9 - _ .), unique in it.
        public var node: String
        /// How clients reach this host (`http://HOST:PORT`, or `https://…`): redirects point here.
        public var url: String
        /// An edge host for cascaded viewers: a composite viewer (`POST …/viewers`) of a room
        /// another host owns is served here, from one pull of the room from its owner, instead of
        /// being redirected (docs/cluster.md, "Viewers at edge hosts").
        public var edge = false
        public init(redis: String, node: String, url: String, edge: Bool = false) {
            self.redis = redis
            self.node = node
            self.url = url
            self.edge = edge
        }
    }

    /// The host's log (`HostLog`): its format and the least level written.
    public struct Log: Sendable, Equatable {
        public var format = HostLog.Format.text
        public var level = HostLog.Level.info
        public init() {}
    }

    public var http = HTTP()
    public var media = Media()
    public var auth = Auth()
    public var limits = Limits()
    public var recordings = Recordings()
    public var video = Video()
    public var testing = Testing()
    public var log = Log()
    public var cluster: Cluster?

    public init() {}

    public enum LoadError: Error, CustomStringConvertible {
        case unreadable(path: String, reason: String)
        case invalid(path: String, reason: String)
        case unsafe(String)
        public var description: String {
            switch self {
            case .unreadable(let path, let reason): "cannot read config \(path): \(reason)"
            case .invalid(let path, let reason): "config \(path): \(reason)"
            case .unsafe(let reason): reason
            }
        }
    }

    /// The config file read when no `--config` is given and it exists (relative to the
    /// working directory).
    public static let conventionalPath = "Config/tessera.json"

    /// Where a command's config came from, as it says at start ("config: Config/tessera.json").
    public enum Source: Sendable, Equatable, CustomStringConvertible {
        case file(String)
        case builtInDefaults
        public var description: String {
            switch self {
            case .file(let path): path
            case .builtInDefaults: "built-in defaults (no --config and no \(HostConfig.conventionalPath))"
            }
        }
    }

    /// The one rule every subcommand follows: `--config FILE` when given, else
    /// `Config/tessera.json` when it exists, else the built-in defaults.
    public static func resolve(explicitPath: String?, fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) })
        throws(LoadError) -> (config: HostConfig, source: Source)
    {
        if let explicitPath { return (try load(path: explicitPath), .file(explicitPath)) }
        if fileExists(conventionalPath) { return (try load(path: conventionalPath), .file(conventionalPath)) }
        return (try load(path: nil), .builtInDefaults)
    }

    /// What a config file may hold; an unknown key is refused with the nearest known one.
    static let shape: JSONShape = .object([
        "http": .object(["listen": .string, "maxBodyBytes": .integer, "connectionLimit": .integer, "connectionsPerAddress": .integer,
                         "tls": .object(["certificate": .string, "key": .string])]),
        "media": .object(["listen": .string, "announce": .array(.string), "tcpListen": .string]),
        "auth": .object(["secret": .nullable(.string)]),
        "limits": .object(["maxRooms": .integer, "maxParticipantsPerRoom": .integer, "maxVoices": .integer, "decodeWorkers": .integer]),
        "recordings": .object(["folder": .string]),
        "video": .object(["width": .integer, "height": .integer, "fps": .integer, "bitrate": .integer,
                          "lowWidth": .integer, "lowHeight": .integer, "lowBitrate": .integer,
                          "smallWidth": .integer, "smallHeight": .integer, "smallBitrate": .integer]),
        "testing": .object(["faults": .array(.string), "impair": .object([
            "loss": .number, "burst": .number, "delay": .string, "jitter": .string, "reorder": .number, "seed": .integer,
        ])]),
        "log": .object(["format": .string, "level": .string]),
        "cluster": .object(["redis": .string, "node": .string, "url": .string, "edge": .boolean]),
    ])

    /// Reads and checks a config file. A missing path gives the defaults.
    public static func load(path: String?) throws(LoadError) -> HostConfig {
        var config = HostConfig()
        if let path {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                throw .unreadable(path: path, reason: error.localizedDescription)
            }
            do { config = try decode(fileContents: Array(data)) } catch { throw .invalid(path: path, reason: error.description) }
        } else {
            try config.validate()
        }
        return config
    }

    /// A config file's bytes, decoded and checked: strict JSON of `shape` (an unknown key is
    /// refused), then `validate()`. The error names the field.
    public static func decode(fileContents bytes: [UInt8]) throws(LoadError) -> HostConfig {
        let config: HostConfig
        do { config = try StrictJSON.decode(HostConfig.self, from: bytes, shape: shape) } catch { throw .unsafe(error.description) }
        try config.validate()
        return config
    }

    /// The HTTPS certificate and key read from `http.tls`'s files and checked to belong
    /// together; nil without `http.tls`. The error names the field.
    public func tlsIdentity() throws(LoadError) -> HTTPServer.TLSIdentity? {
        guard let tls = http.tls else { return nil }
        func read(_ field: String, _ path: String) throws(LoadError) -> String {
            guard !path.isEmpty, let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                throw .unsafe(JSONDocumentError(field: field, reason: "cannot read \(path.isEmpty ? "an empty path" : path)").description)
            }
            return text
        }
        let certificate = try read("http.tls.certificate", tls.certificate), key = try read("http.tls.key", tls.key)
        if let problem = DTLSCertificate.problem(certificatePEM: certificate, keyPEM: key) {
            throw .unsafe(JSONDocumentError(field: "http.tls", reason: problem).description)
        }
        return HTTPServer.TLSIdentity(certificatePEM: certificate, keyPEM: key)
    }

    /// Every value within its bounds, and auth off only while every listen address is loopback.
    /// The error names the field.
    public func validate() throws(LoadError) {
        func bad(_ field: String, _ reason: String) -> LoadError { .unsafe(JSONDocumentError(field: field, reason: reason).description) }
        func address(_ field: String, _ text: String) throws(LoadError) -> TransportAddress {
            do { return try TransportAddress(parsing: text) } catch { throw bad(field, "\(error)") }
        }
        let http = try address("http.listen", self.http.listen)
        let media = try address("media.listen", self.media.listen)
        let tcp = try self.media.tcpAddress.map { text throws(LoadError) in try address("media.tcpListen", text) }
        for (index, announced) in self.media.announce.enumerated() {
            let field = "media.announce[\(index)]"
            let parsed = try? TransportAddress(parsing: announced.contains(":") ? "[\(announced)]:0" : "\(announced):0")
            guard let parsed else { throw bad(field, "\"\(announced.prefix(64))\" is not an IPv4 or IPv6 address") }
            guard !parsed.isUnspecified else { throw bad(field, "\(announced) is not an address a peer can reach") }
        }
        if let secret = auth.secret, secret.isEmpty { throw bad("auth.secret", "is empty: leave it out (or null) for no auth") }
        if auth.secret == nil, let tcp, !tcp.isLoopback {
            throw .unsafe("refusing to listen on \(tcp) (media.tcpListen) without auth.secret: "
                + "set auth.secret in the config, or listen on 127.0.0.1 only")
        }
        if auth.secret == nil, !(http.isLoopback && media.isLoopback) {
            throw .unsafe("refusing to listen on \(http.isLoopback ? media : http) without auth.secret: "
                + "set auth.secret in the config, or listen on 127.0.0.1 only")
        }
        func within(_ field: String, _ value: Int, _ range: ClosedRange<Int>, _ unit: String = "") throws(LoadError) {
            guard range.contains(value) else { throw bad(field, "must be \(range.lowerBound)…\(range.upperBound)\(unit), not \(value)") }
        }
        try within("http.maxBodyBytes", self.http.maxBodyBytes, 1024...(64 << 20), " bytes")
        try within("http.connectionLimit", self.http.connectionLimit, 1...65_536)
        try within("http.connectionsPerAddress", self.http.connectionsPerAddress, 1...65_536)
        _ = try tlsIdentity()
        try within("limits.maxRooms", limits.maxRooms, 1...100_000)
        try within("limits.maxParticipantsPerRoom", limits.maxParticipantsPerRoom, 1...10_000)
        try within("limits.maxVoices", limits.maxVoices, 0...64)
        if let workers = limits.decodeWorkers { try within("limits.decodeWorkers", workers, 1...64) }
        let folder = recordings.folder
        if folder.isEmpty || folder.contains("\0") { throw bad("recordings.folder", "must be a folder path") }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw bad("recordings.folder", "\(folder) exists and is not a folder")
        }
        try within("video.width", video.width, 2...3840)
        try within("video.height", video.height, 2...2160)
        try within("video.fps", video.fps, 1...60)
        try within("video.bitrate", video.bitrate, 100_000...20_000_000, " bit/s")
        try within("video.lowWidth", video.lowWidth, 2...3840)
        try within("video.lowHeight", video.lowHeight, 2...2160)
        try within("video.lowBitrate", video.lowBitrate, 100_000...20_000_000, " bit/s")
        try within("video.smallWidth", video.smallWidth, 2...3840)
        try within("video.smallHeight", video.smallHeight, 2...2160)
        try within("video.smallBitrate", video.smallBitrate, 60_000...20_000_000, " bit/s")
        if let cluster {
            do { _ = try RedisURL(parsing: cluster.redis) } catch { throw bad("cluster.redis", error.description) }
            guard ClusterNames.isValid(cluster.node) else { throw bad("cluster.node", "must be 1 to 64 of A-Z a-z 0-9 - _ .") }
            guard ClusterNames.isValidURL(cluster.url) else {
                throw bad("cluster.url", "must be how clients reach this host: http://HOST:PORT or https://HOST:PORT, with no path")
            }
        }
        if let impair = testing.impair {
            guard (0...1).contains(impair.loss) else { throw bad("testing.impair.loss", "must be a fraction 0…1, not \(impair.loss)") }
            guard (0...1).contains(impair.reorder) else { throw bad("testing.impair.reorder", "must be a fraction 0…1, not \(impair.reorder)") }
            guard (1...100).contains(impair.burst) else { throw bad("testing.impair.burst", "must be a mean burst length 1…100, not \(impair.burst)") }
        }
    }
}

// Decoding keeps the default of every field the file leaves out.
extension HostConfig: Codable {
    enum CodingKeys: String, CodingKey { case http, media, auth, limits, recordings, video, testing, log, cluster }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        http = try c.decodeIfPresent(HTTP.self, forKey: .http) ?? HTTP()
        media = try c.decodeIfPresent(Media.self, forKey: .media) ?? Media()
        auth = try c.decodeIfPresent(Auth.self, forKey: .auth) ?? Auth()
        limits = try c.decodeIfPresent(Limits.self, forKey: .limits) ?? Limits()
        recordings = try c.decodeIfPresent(Recordings.self, forKey: .recordings) ?? Recordings()
        video = try c.decodeIfPresent(Video.self, forKey: .video) ?? Video()
        testing = try c.decodeIfPresent(Testing.self, forKey: .testing) ?? Testing()
        log = try c.decodeIfPresent(Log.self, forKey: .log) ?? Log()
        cluster = try c.decodeIfPresent(Cluster.self, forKey: .cluster)
    }
}
extension HostConfig.Cluster: Codable {
    enum CodingKeys: String, CodingKey { case redis, node, url, edge }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        redis = try c.decode(String.self, forKey: .redis)
        node = try c.decode(String.self, forKey: .node)
        url = try c.decode(String.self, forKey: .url)
        edge = try c.decodeIfPresent(Bool.self, forKey: .edge) ?? false
    }
}
extension HostConfig.Log: Codable {
    enum CodingKeys: String, CodingKey { case format, level }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try c.decodeIfPresent(String.self, forKey: .format) {
            guard let format = HostLog.Format(rawValue: text) else {
                throw DecodingError.dataCorruptedError(forKey: .format, in: c, debugDescription: #"must be "text" or "json", not "\#(text.prefix(32))""#)
            }
            self.format = format
        }
        if let text = try c.decodeIfPresent(String.self, forKey: .level) {
            // The config chooses how much detail: warnings and errors are always written.
            guard let level = HostLog.Level(rawValue: text), level <= .info else {
                throw DecodingError.dataCorruptedError(forKey: .level, in: c, debugDescription: #"must be "info" or "debug", not "\#(text.prefix(32))""#)
            }
            self.level = level
        }
    }
}
extension HostConfig.Testing: Codable {
    enum CodingKeys: String, CodingKey { case faults, impair }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        for name in try c.decodeIfPresent([String].self, forKey: .faults) ?? [] {
            guard let fault = Fault(rawValue: name) else {
                throw DecodingError.dataCorruptedError(forKey: .faults, in: c, debugDescription:
                    "unknown fault \"\(name.prefix(64))\" (one of \(Fault.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            faults.insert(fault)
        }
        impair = try c.decodeIfPresent(HostConfig.Impair.self, forKey: .impair)
    }
}
extension HostConfig.Video: Codable {
    enum CodingKeys: String, CodingKey { case width, height, fps, bitrate, lowWidth, lowHeight, lowBitrate, smallWidth, smallHeight, smallBitrate }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        width = try c.decodeIfPresent(Int.self, forKey: .width) ?? width
        height = try c.decodeIfPresent(Int.self, forKey: .height) ?? height
        fps = try c.decodeIfPresent(Int.self, forKey: .fps) ?? fps
        bitrate = try c.decodeIfPresent(Int.self, forKey: .bitrate) ?? bitrate
        lowWidth = try c.decodeIfPresent(Int.self, forKey: .lowWidth) ?? lowWidth
        lowHeight = try c.decodeIfPresent(Int.self, forKey: .lowHeight) ?? lowHeight
        lowBitrate = try c.decodeIfPresent(Int.self, forKey: .lowBitrate) ?? lowBitrate
        smallWidth = try c.decodeIfPresent(Int.self, forKey: .smallWidth) ?? smallWidth
        smallHeight = try c.decodeIfPresent(Int.self, forKey: .smallHeight) ?? smallHeight
        smallBitrate = try c.decodeIfPresent(Int.self, forKey: .smallBitrate) ?? smallBitrate
    }
}
extension HostConfig.HTTP: Codable {
    enum CodingKeys: String, CodingKey { case listen, maxBodyBytes, connectionLimit, connectionsPerAddress, tls }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? listen
        maxBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? maxBodyBytes
        connectionLimit = try c.decodeIfPresent(Int.self, forKey: .connectionLimit) ?? connectionLimit
        connectionsPerAddress = try c.decodeIfPresent(Int.self, forKey: .connectionsPerAddress) ?? connectionsPerAddress
        tls = try c.decodeIfPresent(HostConfig.TLS.self, forKey: .tls)
    }
}
extension HostConfig.Media: Codable {
    enum CodingKeys: String, CodingKey { case listen, announce, tcpListen }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? listen
        announce = try c.decodeIfPresent([String].self, forKey: .announce) ?? announce
        tcpListen = try c.decodeIfPresent(String.self, forKey: .tcpListen)
    }
}
extension HostConfig.Auth: Codable {
    enum CodingKeys: String, CodingKey { case secret }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        secret = try c.decodeIfPresent(String.self, forKey: .secret)
    }
}
extension HostConfig.Limits: Codable {
    enum CodingKeys: String, CodingKey { case maxRooms, maxParticipantsPerRoom, maxVoices, decodeWorkers }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxRooms = try c.decodeIfPresent(Int.self, forKey: .maxRooms) ?? maxRooms
        maxParticipantsPerRoom = try c.decodeIfPresent(Int.self, forKey: .maxParticipantsPerRoom) ?? maxParticipantsPerRoom
        maxVoices = try c.decodeIfPresent(Int.self, forKey: .maxVoices) ?? maxVoices
        decodeWorkers = try c.decodeIfPresent(Int.self, forKey: .decodeWorkers)
    }
}
extension HostConfig.Recordings: Codable {
    enum CodingKeys: String, CodingKey { case folder }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        folder = try c.decodeIfPresent(String.self, forKey: .folder) ?? folder
    }
}
extension HostConfig.Impair: Codable {
    enum CodingKeys: String, CodingKey { case loss, burst, delay, jitter, reorder, seed }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        loss = try c.decodeIfPresent(Double.self, forKey: .loss) ?? loss
        burst = try c.decodeIfPresent(Double.self, forKey: .burst) ?? burst
        reorder = try c.decodeIfPresent(Double.self, forKey: .reorder) ?? reorder
        seed = try c.decodeIfPresent(UInt64.self, forKey: .seed) ?? seed
        for (key, target) in [(CodingKeys.delay, \Self.delay), (.jitter, \Self.jitter)] {
            guard let text = try c.decodeIfPresent(String.self, forKey: key) else { continue }
            guard let value = Self.milliseconds(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "a duration like \"50ms\", not \"\(text.prefix(32))\"")
            }
            self[keyPath: target] = value
        }
    }
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(loss, forKey: .loss)
        try c.encode(burst, forKey: .burst)
        try c.encode(reorder, forKey: .reorder)
        try c.encode(seed, forKey: .seed)
    }
    /// `50ms` or `0.05s`.
    static func milliseconds(_ text: String) -> Duration? {
        if text.hasSuffix("ms"), let value = Double(text.dropLast(2)), value >= 0, value <= 10_000 { return .microseconds(Int64(value * 1000)) }
        if text.hasSuffix("s"), let value = Double(text.dropLast()), value >= 0, value <= 10 { return .microseconds(Int64(value * 1_000_000)) }
        return nil
    }
}
