// The SDP data model (RFC 8866 §5): a session part and its media sections, every line kept.

/// A parsed SDP description (RFC 8866 §5): session-level fields and attributes, then media
/// sections. `v=` is always 0 and is not stored.
public struct SessionDescription: Sendable, Equatable {
    /// `o=` (RFC 8866 §5.2).
    public var origin: Origin
    /// `s=` (RFC 8866 §5.3); WebRTC writes `-`.
    public var sessionName: String
    /// `i=` (RFC 8866 §5.4).
    public var sessionInformation: String?
    /// `u=` (RFC 8866 §5.5).
    public var uri: String?
    /// `e=` lines (RFC 8866 §5.6).
    public var emails: [String]
    /// `p=` lines (RFC 8866 §5.6).
    public var phones: [String]
    /// The session-level `c=` (RFC 8866 §5.7).
    public var connection: Connection?
    /// Session-level `b=` lines (RFC 8866 §5.8).
    public var bandwidths: [Bandwidth]
    /// `t=` lines with their `r=` lines (RFC 8866 §5.9, §5.10); WebRTC writes `t=0 0`.
    public var timings: [Timing]
    /// `z=` (RFC 8866 §5.11), kept as written.
    public var timeZones: String?
    /// `k=` (RFC 8866 §5.12, obsolete), kept as written.
    public var encryptionKey: String?
    /// Session-level `a=` lines, in order.
    public var attributes: [Attribute]
    /// The media sections, in order.
    public var media: [MediaDescription]

    /// A description with the given fields.
    public init(
        origin: Origin, sessionName: String = "-", sessionInformation: String? = nil, uri: String? = nil,
        emails: [String] = [], phones: [String] = [], connection: Connection? = nil, bandwidths: [Bandwidth] = [],
        timings: [Timing] = [Timing(start: 0, stop: 0)], timeZones: String? = nil, encryptionKey: String? = nil,
        attributes: [Attribute] = [], media: [MediaDescription] = []
    ) {
        self.origin = origin
        self.sessionName = sessionName
        self.sessionInformation = sessionInformation
        self.uri = uri
        self.emails = emails
        self.phones = phones
        self.connection = connection
        self.bandwidths = bandwidths
        self.timings = timings
        self.timeZones = timeZones
        self.encryptionKey = encryptionKey
        self.attributes = attributes
        self.media = media
    }

    /// The BUNDLE groups (RFC 8843 §7), in order.
    public var bundleGroups: [MediaGroup] {
        attributes.compactMap { if case .group(let group) = $0.typed, group.semantics.uppercased() == "BUNDLE" { group } else { nil } }
    }

    /// Whether the session says `a=ice-lite` (RFC 8839 §5.3).
    public var isICELite: Bool { attributes.contains { $0.name == "ice-lite" } }

    /// The session-level `a=msid-semantic` value (e.g. `WMS *`), trimmed, if present.
    public var msidSemantic: String? {
        attributes.first { $0.name == "msid-semantic" }?.value.map { String($0.drop { $0 == " " }) }
    }
}

/// `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>` (RFC 8866 §5.2).
public struct Origin: Sendable, Equatable {
    /// The user name; WebRTC writes `-`.
    public var username: String
    /// The session id, a decimal number kept as written (it may exceed 64 bits).
    public var sessionID: String
    /// The session version, a decimal number kept as written.
    public var sessionVersion: String
    /// The network type, `IN`.
    public var networkType: String
    /// The address type, `IP4` or `IP6`.
    public var addressType: String
    /// The address of the originating host.
    public var address: String

    /// An origin line with the given fields.
    public init(username: String = "-", sessionID: String, sessionVersion: String, networkType: String = "IN",
                addressType: String = "IP4", address: String) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// `c=<nettype> <addrtype> <connection-address>` (RFC 8866 §5.7).
public struct Connection: Sendable, Equatable {
    /// The network type, `IN`.
    public var networkType: String
    /// The address type, `IP4` or `IP6`.
    public var addressType: String
    /// The address (with `/ttl` for IPv4 multicast, kept as written).
    public var address: String

    /// A connection line for `address`.
    public init(networkType: String, addressType: String, address: String) {
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }

    /// `IN IP4 <address>` or `IN IP6 <address>`, chosen by whether the address has a colon.
    public init(address: String) {
        self.init(networkType: "IN", addressType: address.contains(":") ? "IP6" : "IP4", address: address)
    }
}

/// `b=<bwtype>:<bandwidth>` (RFC 8866 §5.8), e.g. `AS:2000` or `TIAS:64000`.
public struct Bandwidth: Sendable, Equatable {
    /// The modifier, e.g. `AS`, `CT`, `TIAS`.
    public var type: String
    /// The value (kbit/s for AS and CT, bit/s for TIAS).
    public var value: UInt64

    /// A bandwidth line.
    public init(type: String, value: UInt64) {
        self.type = type
        self.value = value
    }
}

/// `t=<start> <stop>` (RFC 8866 §5.9) and its `r=` lines (§5.10, kept as written).
public struct Timing: Sendable, Equatable {
    /// The start time (NTP seconds), 0 for unbounded.
    public var start: UInt64
    /// The stop time (NTP seconds), 0 for unbounded.
    public var stop: UInt64
    /// The `r=` lines that follow, as written.
    public var repeats: [String]

    /// A timing line.
    public init(start: UInt64, stop: UInt64, repeats: [String] = []) {
        self.start = start
        self.stop = stop
        self.repeats = repeats
    }
}

/// The media type of an m= line (RFC 8866 §5.14).
public enum MediaKind: Sendable, Equatable, Hashable {
    /// `audio`
    case audio
    /// `video`
    case video
    /// `application` (WebRTC data channels)
    case application
    /// Any other media type, as written.
    case other(String)

    /// The kind named `name`.
    public init(_ name: String) {
        switch name {
        case "audio": self = .audio
        case "video": self = .video
        case "application": self = .application
        default: self = .other(name)
        }
    }

    /// The name written on the m= line.
    public var name: String {
        switch self {
        case .audio: "audio"
        case .video: "video"
        case .application: "application"
        case .other(let name): name
        }
    }
}

/// One media section (RFC 8866 §5.14): the m= line and the lines up to the next one.
public struct MediaDescription: Sendable, Equatable {
    /// The media type (`audio`, `video`, `application`, …).
    public var kind: MediaKind
    /// The port; 0 rejects or disables the section (RFC 3264 §6), except with `a=bundle-only`.
    public var port: UInt16
    /// The number of ports after a `/`, when written.
    public var portCount: UInt16?
    /// The transport protocol, e.g. `UDP/TLS/RTP/SAVPF` (RFC 5764 §8).
    public var transportProtocol: String
    /// The formats: RTP payload types as decimal text, or e.g. `webrtc-datachannel`.
    public var formats: [String]
    /// `i=` (RFC 8866 §5.4).
    public var information: String?
    /// `c=` lines (RFC 8866 §5.7).
    public var connections: [Connection]
    /// `b=` lines (RFC 8866 §5.8).
    public var bandwidths: [Bandwidth]
    /// `k=` (obsolete), kept as written.
    public var encryptionKey: String?
    /// The section's `a=` lines, in order.
    public var attributes: [Attribute]

    /// A media section with the given fields.
    public init(kind: MediaKind, port: UInt16, portCount: UInt16? = nil, transportProtocol: String, formats: [String],
                information: String? = nil, connections: [Connection] = [], bandwidths: [Bandwidth] = [],
                encryptionKey: String? = nil, attributes: [Attribute] = []) {
        self.kind = kind
        self.port = port
        self.portCount = portCount
        self.transportProtocol = transportProtocol
        self.formats = formats
        self.information = information
        self.connections = connections
        self.bandwidths = bandwidths
        self.encryptionKey = encryptionKey
        self.attributes = attributes
    }

    /// Whether the proto carries RTP (`RTP/AVP`, `UDP/TLS/RTP/SAVPF`, …), whose formats are
    /// payload types.
    public var carriesRTP: Bool { Self.protocolCarriesRTP(transportProtocol) }

    static func protocolCarriesRTP(_ proto: String) -> Bool {
        Lexical.check(proto) { $0.hasRTPComponent }
    }

    /// The formats as RTP payload types (those that are numbers in 0...127).
    public var payloadTypes: [UInt8] { formats.compactMap(Lexical.payloadType) }

    /// Every attribute named `name`, in order.
    public func attributes(named name: String) -> [Attribute] { attributes.filter { $0.name == name } }

    /// Whether an attribute named `name` is present (e.g. `rtcp-mux`, `bundle-only`).
    public func hasAttribute(_ name: String) -> Bool { attributes.contains { $0.name == name } }

    /// `a=mid` (RFC 5888 §4).
    public var mid: String? { attributes.lazy.compactMap { if case .mid(let mid) = $0.typed { mid } else { nil } }.first }

    /// The direction attribute; nil when absent (RFC 8866 §6.7: then the session's, else sendrecv).
    public var direction: Direction? { attributes.lazy.compactMap { if case .direction(let d) = $0.typed { d } else { nil } }.first }

    /// `a=rtpmap` lines.
    public var rtpMaps: [RTPMap] { attributes.compactMap { if case .rtpmap(let map) = $0.typed { map } else { nil } } }

    /// `a=fmtp` lines.
    public var formatParameters: [FormatParameters] { attributes.compactMap { if case .fmtp(let fmtp) = $0.typed { fmtp } else { nil } } }

    /// `a=rtcp-fb` lines.
    public var rtcpFeedback: [RTCPFeedback] { attributes.compactMap { if case .rtcpFeedback(let fb) = $0.typed { fb } else { nil } } }

    /// `a=extmap` lines.
    public var extensionMaps: [ExtensionMap] { attributes.compactMap { if case .extmap(let map) = $0.typed { map } else { nil } } }

    /// `a=ssrc` lines.
    public var ssrcAttributes: [SSRCAttribute] { attributes.compactMap { if case .ssrc(let ssrc) = $0.typed { ssrc } else { nil } } }

    /// `a=ssrc-group` lines.
    public var ssrcGroups: [SSRCGroup] { attributes.compactMap { if case .ssrcGroup(let group) = $0.typed { group } else { nil } } }

    /// `a=msid` (RFC 8830), the first if several.
    public var msid: MSID? { attributes.lazy.compactMap { if case .msid(let msid) = $0.typed { msid } else { nil } }.first }

    /// `a=candidate` lines.
    public var candidates: [Candidate] { attributes.compactMap { if case .candidate(let c) = $0.typed { c } else { nil } } }

    /// `a=fingerprint` lines.
    public var fingerprints: [Fingerprint] { attributes.fingerprints }
    /// `a=setup`.
    public var setupRole: SetupRole? { attributes.setupRole }
    /// `a=ice-ufrag`.
    public var iceUsernameFragment: String? { attributes.iceUsernameFragment }
    /// `a=ice-pwd`.
    public var icePassword: String? { attributes.icePassword }
}

extension SessionDescription {
    /// Session-level `a=fingerprint` lines (Firefox writes them there).
    public var fingerprints: [Fingerprint] { attributes.fingerprints }
    /// Session-level `a=setup`.
    public var setupRole: SetupRole? { attributes.setupRole }
    /// Session-level `a=ice-ufrag`.
    public var iceUsernameFragment: String? { attributes.iceUsernameFragment }
    /// Session-level `a=ice-pwd`.
    public var icePassword: String? { attributes.icePassword }
    /// Session-level direction (Firefox writes `a=sendrecv` there), if any.
    public var direction: Direction? { attributes.lazy.compactMap { if case .direction(let d) = $0.typed { d } else { nil } }.first }
    /// Session-level `a=extmap` lines (RFC 8285 §8 allows them for every section).
    public var extensionMaps: [ExtensionMap] { attributes.compactMap { if case .extmap(let map) = $0.typed { map } else { nil } } }
}

/// The transport attributes, read the same way at session and at media level.
extension [Attribute] {
    var fingerprints: [Fingerprint] { compactMap { if case .fingerprint(let f) = $0.typed { f } else { nil } } }
    var setupRole: SetupRole? { lazy.compactMap { if case .setup(let role) = $0.typed { role } else { nil } }.first }
    var iceUsernameFragment: String? { lazy.compactMap { if case .iceUsernameFragment(let ufrag) = $0.typed { ufrag } else { nil } }.first }
    var icePassword: String? { lazy.compactMap { if case .icePassword(let pwd) = $0.typed { pwd } else { nil } }.first }
}
