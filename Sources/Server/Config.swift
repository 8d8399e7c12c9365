import Sockets
import Foundation
import Transport

/// The host's configuration, decoded from `Config/tessera.json`. Every field has a default, so
/// `tessera serve` runs with no file at all, and a file need only name what it changes.
public struct HostConfig: Sendable, Equatable {
    public struct HTTP: Sendable, Equatable {
        /// Where the HTTP API and the web page listen.
        public var listen = "127.0.0.1:8080"
        /// Largest request body accepted; larger ones get 413.
        public var maxBodyBytes = 64 * 1024
        public var connectionLimit = 256
        public init() {}
    }
    public struct Media: Sendable, Equatable {
        /// The one UDP port every peer's media shares (demuxed by ICE username, then address).
        public var listen = "127.0.0.1:50000"
        /// Addresses announced as ICE candidates; empty means the listen address.
        public var announce: [String] = []
        public init() {}
    }
    public struct Auth: Sendable, Equatable {
        /// HS256 secret for join tokens. Without it auth is off, allowed only on loopback.
        public var secret: String?
        public init() {}
    }

    public struct Limits: Sendable, Equatable {
        public var maxRooms = 100
        public var maxParticipantsPerRoom = 50
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
        public init() {}
    }

    public var http = HTTP()
    public var media = Media()
    public var auth = Auth()
    public var limits = Limits()
    public var recordings = Recordings()
    public var video = Video()
    public var testing = Testing()

    public init() {}

    public enum LoadError: Error, CustomStringConvertible {
        case unreadable(path: String, reason: String)
        case invalid(path: String, reason: String)
        case unsafe(String)
        public var description: String {
            switch self {
            case .unreadable(let path, let reason): "cannot read config \(path): \(reason)"
            case .invalid(let path, let reason): "config \(path) is not valid: \(reason)"
            case .unsafe(let reason): reason
            }
        }
    }

    /// Reads and checks a config file. A missing path gives the defaults.
    public static func load(path: String?) throws(LoadError) -> HostConfig {
        var config = HostConfig()
        if let path {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
                throw .unreadable(path: path, reason: error.localizedDescription)
            }
            do { config = try JSONDecoder().decode(HostConfig.self, from: data) } catch {
                throw .invalid(path: path, reason: Self.describe(error))
            }
        }
        try config.validate()
        return config
    }

    /// Addresses parse, and auth is off only while every listen address is loopback.
    public func validate() throws(LoadError) {
        let http: TransportAddress, media: TransportAddress
        do {
            http = try TransportAddress(parsing: self.http.listen)
            media = try TransportAddress(parsing: self.media.listen)
        } catch { throw .unsafe("bad listen address: \(error)") }
        if (auth.secret ?? "").isEmpty, !(http.isLoopback && media.isLoopback) {
            throw .unsafe("refusing to listen on \(http.isLoopback ? media : http) without auth.secret: "
                + "set auth.secret in the config, or listen on 127.0.0.1 only")
        }
        if self.http.maxBodyBytes < 1024 { throw .unsafe("http.maxBodyBytes must be at least 1024") }
        if limits.maxRooms < 1 || limits.maxParticipantsPerRoom < 1 { throw .unsafe("limits must be at least 1") }
        if !(2...3840).contains(video.width) || !(2...2160).contains(video.height) {
            throw .unsafe("video.width and video.height must be within 2…3840 × 2…2160")
        }
        if !(1...60).contains(video.fps) { throw .unsafe("video.fps must be 1…60") }
        if !(100_000...20_000_000).contains(video.bitrate) { throw .unsafe("video.bitrate must be 100000…20000000 bit/s") }
        if !(2...3840).contains(video.lowWidth) || !(2...2160).contains(video.lowHeight) {
            throw .unsafe("video.lowWidth and video.lowHeight must be within 2…3840 × 2…2160")
        }
        if !(100_000...20_000_000).contains(video.lowBitrate) { throw .unsafe("video.lowBitrate must be 100000…20000000 bit/s") }
    }

    private static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
            DecodingError.keyNotFound(_, let context), DecodingError.dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }
}

// Decoding keeps the default of every field the file leaves out.
extension HostConfig: Codable {
    enum CodingKeys: String, CodingKey { case http, media, auth, limits, recordings, video, testing }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        http = try c.decodeIfPresent(HTTP.self, forKey: .http) ?? HTTP()
        media = try c.decodeIfPresent(Media.self, forKey: .media) ?? Media()
        auth = try c.decodeIfPresent(Auth.self, forKey: .auth) ?? Auth()
        limits = try c.decodeIfPresent(Limits.self, forKey: .limits) ?? Limits()
        recordings = try c.decodeIfPresent(Recordings.self, forKey: .recordings) ?? Recordings()
        video = try c.decodeIfPresent(Video.self, forKey: .video) ?? Video()
        testing = try c.decodeIfPresent(Testing.self, forKey: .testing) ?? Testing()
    }
}
extension HostConfig.Testing: Codable {
    enum CodingKeys: String, CodingKey { case faults }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        faults = try c.decodeIfPresent(Set<Fault>.self, forKey: .faults) ?? faults
    }
}
extension HostConfig.Video: Codable {
    enum CodingKeys: String, CodingKey { case width, height, fps, bitrate, lowWidth, lowHeight, lowBitrate }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        width = try c.decodeIfPresent(Int.self, forKey: .width) ?? width
        height = try c.decodeIfPresent(Int.self, forKey: .height) ?? height
        fps = try c.decodeIfPresent(Int.self, forKey: .fps) ?? fps
        bitrate = try c.decodeIfPresent(Int.self, forKey: .bitrate) ?? bitrate
        lowWidth = try c.decodeIfPresent(Int.self, forKey: .lowWidth) ?? lowWidth
        lowHeight = try c.decodeIfPresent(Int.self, forKey: .lowHeight) ?? lowHeight
        lowBitrate = try c.decodeIfPresent(Int.self, forKey: .lowBitrate) ?? lowBitrate
    }
}
extension HostConfig.HTTP: Codable {
    enum CodingKeys: String, CodingKey { case listen, maxBodyBytes, connectionLimit }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? listen
        maxBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? maxBodyBytes
        connectionLimit = try c.decodeIfPresent(Int.self, forKey: .connectionLimit) ?? connectionLimit
    }
}
extension HostConfig.Media: Codable {
    enum CodingKeys: String, CodingKey { case listen, announce }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        listen = try c.decodeIfPresent(String.self, forKey: .listen) ?? listen
        announce = try c.decodeIfPresent([String].self, forKey: .announce) ?? announce
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
    enum CodingKeys: String, CodingKey { case maxRooms, maxParticipantsPerRoom }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        maxRooms = try c.decodeIfPresent(Int.self, forKey: .maxRooms) ?? maxRooms
        maxParticipantsPerRoom = try c.decodeIfPresent(Int.self, forKey: .maxParticipantsPerRoom) ?? maxParticipantsPerRoom
    }
}
extension HostConfig.Recordings: Codable {
    enum CodingKeys: String, CodingKey { case folder }
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        folder = try c.decodeIfPresent(String.self, forKey: .folder) ?? folder
    }
}
