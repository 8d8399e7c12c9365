// SDP attributes (RFC 8866 §5.13, §6) and the typed values of the ones a WebRTC host reads.
//
// An `Attribute` keeps its name and value exactly as written, so a parsed description
// serializes back to the same lines; `typed` is its meaning, read once at parse time. Unknown
// attributes (and a=simulcast, a=rid, a=rtcp, a=msid-semantic, …) are kept, in order, as `.other`.

/// One `a=` line: `a=<name>` or `a=<name>:<value>` (RFC 8866 §5.13).
public struct Attribute: Sendable, Equatable {
    /// The attribute name (RFC 8866 att-field), e.g. `rtpmap`.
    public let name: String
    /// The text after the first `:`, as written; nil for a property attribute such as `a=rtcp-mux`.
    public let value: String?
    /// What the attribute means, for the attributes this module understands.
    public let typed: AttributeValue

    /// Reads `a=<name>:<value>`: validates and types the attributes this module knows, keeps any
    /// other as `.other`.
    public init(name: String, value: String?) throws(SDPError) {
        let typed: AttributeValue = try Lexical.withSpan(name[...]) { nameSpan throws(SDPError) in
            guard nameSpan.isToken else { throw SDPError(.badAttribute, "attribute name '\(name.prefix(40))' is not a token") }
            guard let value else { return try AttributeValue(name: nameSpan, value: nil) }
            return try Lexical.withSpan(value[...]) { valueSpan throws(SDPError) in try AttributeValue(name: nameSpan, value: valueSpan) }
        }
        self.init(name: name, value: value, typed: typed)
    }

    /// An attribute built from a typed value; `value` is its canonical text.
    init(name: String, value: String?, typed: AttributeValue) {
        self.name = name
        self.value = value
        self.typed = typed
    }

    /// A property attribute with no value, such as `rtcp-mux`, `ice-lite` or `end-of-candidates`.
    public static func flag(_ name: String) -> Attribute {
        Attribute(name: name, value: nil, typed: Direction(rawValue: name).map { .direction($0) } ?? .other)
    }

    /// Reads the bytes after `a=`; `name` is a validated token, `value` validated UTF-8.
    static func parse(name: ByteSpan, value: ByteSpan?, valueText: String?) throws(SDPError) -> Attribute {
        guard name.isToken else { throw SDPError(.badAttribute, "attribute name is not a token") }
        let typed = try AttributeValue(name: name, value: value)
        return Attribute(name: typed.knownName ?? name.string, value: valueText, typed: typed)
    }

    /// `a=mid:<mid>` (RFC 5888 §4).
    public static func mid(_ mid: String) -> Attribute { Attribute(name: "mid", value: mid, typed: .mid(mid)) }
    /// `a=group:<semantics> <mids>` (RFC 5888 §5).
    public static func group(_ group: MediaGroup) -> Attribute { Attribute(name: "group", value: group.attributeValue, typed: .group(group)) }
    /// `a=rtpmap:` (RFC 8866 §6.6).
    public static func rtpmap(_ map: RTPMap) -> Attribute { Attribute(name: "rtpmap", value: map.attributeValue, typed: .rtpmap(map)) }
    /// `a=fmtp:` (RFC 8866 §6.15).
    public static func fmtp(_ fmtp: FormatParameters) -> Attribute { Attribute(name: "fmtp", value: fmtp.attributeValue, typed: .fmtp(fmtp)) }
    /// `a=rtcp-fb:` (RFC 4585 §4.2).
    public static func rtcpFeedback(_ feedback: RTCPFeedback) -> Attribute { Attribute(name: "rtcp-fb", value: feedback.attributeValue, typed: .rtcpFeedback(feedback)) }
    /// `a=extmap:` (RFC 8285 §8).
    public static func extmap(_ map: ExtensionMap) -> Attribute { Attribute(name: "extmap", value: map.attributeValue, typed: .extmap(map)) }
    /// `a=ssrc:` (RFC 5576 §4.1).
    public static func ssrc(_ ssrc: SSRCAttribute) -> Attribute { Attribute(name: "ssrc", value: ssrc.attributeValue, typed: .ssrc(ssrc)) }
    /// `a=ssrc-group:` (RFC 5576 §4.2).
    public static func ssrcGroup(_ group: SSRCGroup) -> Attribute { Attribute(name: "ssrc-group", value: group.attributeValue, typed: .ssrcGroup(group)) }
    /// `a=msid:` (RFC 8830 §2).
    public static func msid(_ msid: MSID) -> Attribute { Attribute(name: "msid", value: msid.attributeValue, typed: .msid(msid)) }
    /// `a=sendrecv` and the other directions (RFC 8866 §6.7).
    public static func direction(_ direction: Direction) -> Attribute { Attribute(name: direction.rawValue, value: nil, typed: .direction(direction)) }
    /// `a=setup:` (RFC 4145 §4, RFC 8842 §5).
    public static func setup(_ role: SetupRole) -> Attribute { Attribute(name: "setup", value: role.rawValue, typed: .setup(role)) }
    /// `a=ice-ufrag:` (RFC 8839 §5.4).
    public static func iceUsernameFragment(_ ufrag: String) -> Attribute { Attribute(name: "ice-ufrag", value: ufrag, typed: .iceUsernameFragment(ufrag)) }
    /// `a=ice-pwd:` (RFC 8839 §5.4).
    public static func icePassword(_ pwd: String) -> Attribute { Attribute(name: "ice-pwd", value: pwd, typed: .icePassword(pwd)) }
    /// `a=fingerprint:` (RFC 8122 §5).
    public static func fingerprint(_ fingerprint: Fingerprint) -> Attribute { Attribute(name: "fingerprint", value: fingerprint.attributeValue, typed: .fingerprint(fingerprint)) }
    /// `a=candidate:` (RFC 8839 §5.1).
    public static func candidate(_ candidate: Candidate) -> Attribute { Attribute(name: "candidate", value: candidate.attributeValue, typed: .candidate(candidate)) }
    /// Any attribute, kept as text and not interpreted.
    public static func other(_ name: String, _ value: String?) -> Attribute { Attribute(name: name, value: value, typed: .other) }
}

/// The meaning of an attribute this module understands; `.other` for any other one.
public enum AttributeValue: Sendable, Equatable {
    /// `a=group` (RFC 5888 §5), e.g. BUNDLE (RFC 8843).
    case group(MediaGroup)
    /// `a=mid` (RFC 5888 §4).
    case mid(String)
    /// `a=rtpmap` (RFC 8866 §6.6).
    case rtpmap(RTPMap)
    /// `a=fmtp` (RFC 8866 §6.15).
    case fmtp(FormatParameters)
    /// `a=rtcp-fb` (RFC 4585 §4.2).
    case rtcpFeedback(RTCPFeedback)
    /// `a=extmap` (RFC 8285 §8), including the RFC 6904 encrypted form.
    case extmap(ExtensionMap)
    /// `a=ssrc` (RFC 5576 §4.1).
    case ssrc(SSRCAttribute)
    /// `a=ssrc-group` (RFC 5576 §4.2).
    case ssrcGroup(SSRCGroup)
    /// `a=msid` (RFC 8830 §2).
    case msid(MSID)
    /// `a=sendrecv`, `a=sendonly`, `a=recvonly`, `a=inactive` (RFC 8866 §6.7).
    case direction(Direction)
    /// `a=setup` (RFC 4145 §4).
    case setup(SetupRole)
    /// `a=ice-ufrag` (RFC 8839 §5.4).
    case iceUsernameFragment(String)
    /// `a=ice-pwd` (RFC 8839 §5.4).
    case icePassword(String)
    /// `a=ice-options` (RFC 8839 §5.6).
    case iceOptions([String])
    /// `a=fingerprint` (RFC 8122 §5).
    case fingerprint(Fingerprint)
    /// `a=candidate` (RFC 8839 §5.1). Boxed: a candidate is large and most attributes are not one.
    indirect case candidate(Candidate)
    /// Kept as written, not interpreted.
    case other

    /// Types the value of attribute `name`; throws when a known attribute breaks its grammar.
    init(name: ByteSpan, value: ByteSpan?) throws(SDPError) {
        let known = KnownAttribute(name)
        if case .direction(let direction) = known {
            guard value == nil else { throw SDPError(.badAttribute, "a=\(direction.rawValue) takes no value") }
            self = .direction(direction)
            return
        }
        guard let known else {
            self = .other
            return
        }
        guard let value else { throw SDPError(.badAttribute, "a=\(name.string) needs a value") }
        switch known {
        case .group: self = .group(try MediaGroup(span: value))
        case .mid:
            // RFC 5888 §4: identification-tag = token.
            guard value.isToken, value.count <= 256 else { throw SDPError(.badAttribute, "a=mid is not a token") }
            self = .mid(value.string)
        case .rtpmap: self = .rtpmap(try RTPMap(span: value))
        case .fmtp: self = .fmtp(try FormatParameters(span: value))
        case .rtcpFeedback: self = .rtcpFeedback(try RTCPFeedback(span: value))
        case .extmap: self = .extmap(try ExtensionMap(span: value))
        case .ssrc: self = .ssrc(try SSRCAttribute(span: value))
        case .ssrcGroup: self = .ssrcGroup(try SSRCGroup(span: value))
        case .msid: self = .msid(try MSID(span: value))
        case .setup:
            guard let role = SetupRole(span: value) else { throw SDPError(.badAttribute, "a=setup value is not a role") }
            self = .setup(role)
        case .iceUsernameFragment:
            // RFC 8839 §5.4: ice-ufrag = 4*256ice-char.
            guard (4...256).contains(value.count), value.isICEChars else {
                throw SDPError(.badICECredential, "a=ice-ufrag must be 4 to 256 ice-chars")
            }
            self = .iceUsernameFragment(value.string)
        case .icePassword:
            // RFC 8839 §5.4: ice-pwd = 22*256ice-char.
            guard (22...256).contains(value.count), value.isICEChars else {
                throw SDPError(.badICECredential, "a=ice-pwd must be 22 to 256 ice-chars")
            }
            self = .icePassword(value.string)
        case .iceOptions:
            let options = value.fields()
            guard !options.isEmpty, options.allSatisfy(\.isToken) else { throw SDPError(.badAttribute, "a=ice-options needs tokens") }
            self = .iceOptions(options.map(\.string))
        case .fingerprint: self = .fingerprint(try Fingerprint(span: value))
        case .candidate: self = .candidate(try Candidate(span: value))
        case .direction: self = .other  // handled above
        }
    }
}

extension AttributeValue {
    /// The attribute name of a typed value (a literal, so parsing makes no String for it).
    var knownName: String? {
        switch self {
        case .group: "group"
        case .mid: "mid"
        case .rtpmap: "rtpmap"
        case .fmtp: "fmtp"
        case .rtcpFeedback: "rtcp-fb"
        case .extmap: "extmap"
        case .ssrc: "ssrc"
        case .ssrcGroup: "ssrc-group"
        case .msid: "msid"
        case .direction(let direction): direction.rawValue
        case .setup: "setup"
        case .iceUsernameFragment: "ice-ufrag"
        case .icePassword: "ice-pwd"
        case .iceOptions: "ice-options"
        case .fingerprint: "fingerprint"
        case .candidate: "candidate"
        case .other: nil
        }
    }
}

/// The attributes `AttributeValue` types, recognised from the name's bytes without making a String.
enum KnownAttribute {
    case group, mid, rtpmap, fmtp, rtcpFeedback, extmap, ssrc, ssrcGroup, msid, setup
    case iceUsernameFragment, icePassword, iceOptions, fingerprint, candidate
    case direction(Direction)

    init?(_ name: ByteSpan) {
        switch name.count {
        case 3: if name.equals("mid") { self = .mid; return }
        case 4:
            if name.equals("fmtp") { self = .fmtp; return }
            if name.equals("ssrc") { self = .ssrc; return }
            if name.equals("msid") { self = .msid; return }
        case 5:
            if name.equals("group") { self = .group; return }
            if name.equals("setup") { self = .setup; return }
        case 6:
            if name.equals("rtpmap") { self = .rtpmap; return }
            if name.equals("extmap") { self = .extmap; return }
        case 7:
            if name.equals("rtcp-fb") { self = .rtcpFeedback; return }
            if name.equals("ice-pwd") { self = .icePassword; return }
        case 8:
            if name.equals("sendrecv") { self = .direction(.sendrecv); return }
            if name.equals("sendonly") { self = .direction(.sendonly); return }
            if name.equals("recvonly") { self = .direction(.recvonly); return }
            if name.equals("inactive") { self = .direction(.inactive); return }
        case 9:
            if name.equals("ice-ufrag") { self = .iceUsernameFragment; return }
            if name.equals("candidate") { self = .candidate; return }
        case 10: if name.equals("ssrc-group") { self = .ssrcGroup; return }
        case 11:
            if name.equals("ice-options") { self = .iceOptions; return }
            if name.equals("fingerprint") { self = .fingerprint; return }
        default: break
        }
        return nil
    }
}

/// The media direction of RFC 8866 §6.7, from the point of view of whoever wrote the description.
public enum Direction: String, Sendable, Equatable, Hashable, CaseIterable {
    /// Sends and receives (the default when no direction attribute is present).
    case sendrecv
    /// Only sends.
    case sendonly
    /// Only receives.
    case recvonly
    /// Neither sends nor receives.
    case inactive

    /// Whether the writer sends media.
    public var sends: Bool { self == .sendrecv || self == .sendonly }
    /// Whether the writer receives media.
    public var receives: Bool { self == .sendrecv || self == .recvonly }

    /// The direction with `sends` and `receives` given.
    public init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// The direction seen from the other side (RFC 3264 §6.1): sendonly and recvonly swap.
    public var reversed: Direction { Direction(sends: receives, receives: sends) }
}

/// The DTLS connection role of RFC 4145 §4 as used by RFC 8842 §5.
public enum SetupRole: String, Sendable, Equatable, Hashable {
    /// Will open the DTLS connection (DTLS client).
    case active
    /// Will accept the DTLS connection (DTLS server).
    case passive
    /// Either; the answerer chooses (what a JSEP offer must say, RFC 8842 §5.2).
    case actpass
    /// Not now.
    case holdconn

    init?(span: ByteSpan) {
        if span.equals("actpass") { self = .actpass } else if span.equals("passive") { self = .passive }
        else if span.equals("active") { self = .active } else if span.equals("holdconn") { self = .holdconn }
        else { return nil }
    }
}

/// `a=group:<semantics> <mid>...` (RFC 5888 §5), e.g. `BUNDLE 0 1` (RFC 8843 §7).
public struct MediaGroup: Sendable, Equatable {
    /// The group's semantics, e.g. `BUNDLE` or `LS`.
    public var semantics: String
    /// The mids of the grouped m= sections, in order.
    public var mids: [String]

    /// A group of `mids` with `semantics`.
    public init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }

    init(span: ByteSpan) throws(SDPError) {
        let fields = span.fields()
        guard let first = fields.first, fields.allSatisfy(\.isToken) else {
            throw SDPError(.badAttribute, "a=group needs a semantics token and mids")
        }
        semantics = first.string
        mids = fields.dropFirst().map(\.string)
    }

    /// The text after `a=group:`.
    public var attributeValue: String { ([semantics] + mids).joined(separator: " ") }
}

/// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<channels>]` (RFC 8866 §6.6).
public struct RTPMap: Sendable, Equatable {
    /// The RTP payload type, 0...127.
    public var payloadType: UInt8
    /// The encoding name as written (`opus`, `OPUS`, `VP8`, `rtx`); compare case-insensitively.
    public var encodingName: String
    /// The RTP clock rate in Hz.
    public var clockRate: UInt32
    /// The channel count for audio, when written.
    public var channels: UInt8?

    /// An rtpmap for `payloadType`.
    public init(payloadType: UInt8, encodingName: String, clockRate: UInt32, channels: UInt8? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    init(span: ByteSpan) throws(SDPError) {
        guard let (ptText, encoding) = span.split(atFirst: 0x20) else {
            throw SDPError(.badAttribute, "a=rtpmap needs '<pt> <name>/<rate>'")
        }
        guard let pt = ptText.payloadType else {
            throw SDPError(.badPayloadType, "a=rtpmap payload type '\(ptText.string.prefix(20))' is not in 0...127")
        }
        guard let (name, rateAndChannels) = encoding.split(atFirst: 0x2F), name.isToken else {
            throw SDPError(.badAttribute, "a=rtpmap encoding is not <name>/<rate>[/<channels>]")
        }
        var rateText = rateAndChannels
        var channels: UInt8?
        if let (rate, channelText) = rateAndChannels.split(atFirst: 0x2F) {
            guard let count = channelText.number(max: 255), count > 0 else {
                throw SDPError(.badAttribute, "a=rtpmap channel count is not in 1...255")
            }
            rateText = rate
            channels = UInt8(count)
        }
        guard let rate = rateText.number(max: UInt64(UInt32.max)), rate > 0 else {
            throw SDPError(.badAttribute, "a=rtpmap clock rate is not a positive number")
        }
        self.init(payloadType: pt, encodingName: name.string, clockRate: UInt32(rate), channels: channels)
    }

    /// The text after `a=rtpmap:`.
    public var attributeValue: String {
        var text = "\(payloadType) \(encodingName)/\(clockRate)"
        if let channels { text += "/\(channels)" }
        return text
    }
}

/// `a=fmtp:<format> <parameters>` (RFC 8866 §6.15).
public struct FormatParameters: Sendable, Equatable {
    /// The format the parameters apply to (an RTP payload type in RTP media).
    public var format: String
    /// The format-specific parameters, as written (e.g. `minptime=10;useinbandfec=1`).
    public var parameters: String

    /// Parameters for `format`.
    public init(format: String, parameters: String) {
        self.format = format
        self.parameters = parameters
    }

    /// Parameters for RTP payload type `payloadType`.
    public init(payloadType: UInt8, parameters: String) {
        self.init(format: String(payloadType), parameters: parameters)
    }

    init(span: ByteSpan) throws(SDPError) {
        var format = span
        var parameters = span.dropFirst(span.count)
        if let (head, rest) = span.split(atFirst: 0x20) { (format, parameters) = (head, rest) }
        guard format.isToken else { throw SDPError(.badAttribute, "a=fmtp format is not a token") }
        if format.isDigits, format.payloadType == nil {
            throw SDPError(.badPayloadType, "a=fmtp payload type '\(format.string.prefix(20))' is not in 0...127")
        }
        self.init(format: format.string, parameters: parameters.string)
    }

    /// The RTP payload type, when the format is one.
    public var payloadType: UInt8? { Lexical.payloadType(format) }

    /// The `key=value` pairs separated by `;` (keys lower-cased; a bare key has an empty value).
    public var pairs: [(key: String, value: String)] {
        parameters.split(separator: ";").map { item in
            let trimmed = item.drop { $0 == " " }
            if let equals = trimmed.firstIndex(of: "=") {
                return (trimmed[..<equals].lowercased(), String(trimmed[trimmed.index(after: equals)...]))
            }
            return (trimmed.lowercased(), "")
        }
    }

    /// The value of parameter `key` (case-insensitive), if present.
    public func value(of key: String) -> String? {
        let lowered = key.lowercased()
        return pairs.first { $0.key == lowered }?.value
    }

    /// RFC 4588 §8.6: the payload type an RTX format repairs (`apt=`).
    public var associatedPayloadType: UInt8? { value(of: "apt").flatMap(Lexical.payloadType) }

    /// The text after `a=fmtp:`.
    public var attributeValue: String { "\(format) \(parameters)" }
}

/// `a=rtcp-fb:<pt|*> <type> [<parameter>]` (RFC 4585 §4.2), e.g. `96 nack pli`.
public struct RTCPFeedback: Sendable, Equatable, Hashable {
    /// The payload type it applies to; nil for `*` (every payload type).
    public var payloadType: UInt8?
    /// The feedback type: `nack`, `ccm`, `goog-remb`, `transport-cc`, …
    public var type: String
    /// The parameter after the type (`pli` for `nack pli`, `fir` for `ccm fir`), if any.
    public var parameter: String?

    /// Feedback `type` [`parameter`] for `payloadType` (nil: `*`).
    public init(payloadType: UInt8?, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    init(span: ByteSpan) throws(SDPError) {
        guard let (ptText, rest) = span.split(atFirst: 0x20) else {
            throw SDPError(.badAttribute, "a=rtcp-fb needs '<pt> <type>'")
        }
        var pt: UInt8?
        if !ptText.equals("*") {
            guard let value = ptText.payloadType else {
                throw SDPError(.badPayloadType, "a=rtcp-fb payload type '\(ptText.string.prefix(20))' is not in 0...127")
            }
            pt = value
        }
        var typeText = rest
        var parameter: String?
        if let (head, tail) = rest.split(atFirst: 0x20) {
            typeText = head
            parameter = tail.string
        }
        guard typeText.isToken else { throw SDPError(.badAttribute, "a=rtcp-fb type is not a token") }
        self.init(payloadType: pt, type: typeText.string, parameter: parameter)
    }

    /// Whether this and `other` name the same feedback, whatever their payload types.
    public func sameFeedback(as other: RTCPFeedback) -> Bool {
        type.lowercased() == other.type.lowercased() && parameter?.lowercased() == other.parameter?.lowercased()
    }

    /// The text after `a=rtcp-fb:`.
    public var attributeValue: String {
        var text = "\(payloadType.map(String.init) ?? "*") \(type)"
        if let parameter { text += " \(parameter)" }
        return text
    }
}

/// `a=extmap:<id>[/<direction>] <uri> [<attributes>]` (RFC 8285 §8).
public struct ExtensionMap: Sendable, Equatable {
    /// RFC 6904 §4: the URI that marks an encrypted extension; the real URI follows it.
    public static let encryptURI = "urn:ietf:params:rtp-hdrext:encrypt"

    /// The local identifier: 1...14 (one-byte), 1...255 (two-byte), 4096...4351 (negotiation).
    public var id: UInt16
    /// The direction, when written.
    public var direction: Direction?
    /// The URI as written (`urn:ietf:params:rtp-hdrext:encrypt` for the encrypted form).
    public var uri: String
    /// Extension attributes after the URI, as written.
    public var extensionAttributes: String?

    /// A mapping of `id` to `uri`.
    public init(id: UInt16, direction: Direction? = nil, uri: String, extensionAttributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.extensionAttributes = extensionAttributes
    }

    init(span: ByteSpan) throws(SDPError) {
        guard let (idText, rest) = span.split(atFirst: 0x20) else {
            throw SDPError(.badAttribute, "a=extmap needs '<id> <uri>'")
        }
        var numberText = idText
        var direction: Direction?
        if let (number, directionText) = idText.split(atFirst: 0x2F) {
            numberText = number
            guard case .direction(let value) = KnownAttribute(directionText) else {
                throw SDPError(.badAttribute, "a=extmap direction is not one of sendrecv/sendonly/recvonly/inactive")
            }
            direction = value
        }
        guard let id = numberText.number(max: 4351), (1...255).contains(id) || id >= 4096 else {
            throw SDPError(.badAttribute, "a=extmap id is not in 1...255 or 4096...4351 (RFC 8285 §8)")
        }
        var uri = rest
        var attributes: String?
        if let (head, tail) = rest.split(atFirst: 0x20) {
            uri = head
            attributes = tail.string
        }
        guard uri.isVisible else { throw SDPError(.badAttribute, "a=extmap has no URI") }
        self.init(id: UInt16(id), direction: direction, uri: uri.string, extensionAttributes: attributes)
    }

    /// Whether this is the RFC 6904 encrypted form.
    public var isEncrypted: Bool { uri == Self.encryptURI }

    /// The URI of the extension itself (for the encrypted form, the one after the marker).
    public var extensionURI: String {
        guard isEncrypted, let extensionAttributes else { return uri }
        return String(extensionAttributes.split(separator: " ").first ?? "")
    }

    /// The text after `a=extmap:`.
    public var attributeValue: String {
        var text = String(id)
        if let direction { text += "/\(direction.rawValue)" }
        text += " \(uri)"
        if let extensionAttributes { text += " \(extensionAttributes)" }
        return text
    }
}

/// `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576 §4.1), e.g. `ssrc:1234 cname:abc`.
public struct SSRCAttribute: Sendable, Equatable {
    /// The synchronization source.
    public var ssrc: UInt32
    /// The source attribute's name (`cname`, `msid`, …).
    public var attribute: String
    /// The source attribute's value, if any.
    public var value: String?

    /// Source attribute `attribute`[:`value`] of `ssrc`.
    public init(ssrc: UInt32, attribute: String, value: String?) {
        self.ssrc = ssrc
        self.attribute = attribute
        self.value = value
    }

    init(span: ByteSpan) throws(SDPError) {
        guard let (ssrcText, rest) = span.split(atFirst: 0x20), let ssrc = ssrcText.number(max: UInt64(UInt32.max)) else {
            throw SDPError(.badAttribute, "a=ssrc needs '<ssrc> <attribute>'")
        }
        var name = rest
        var value: String?
        if let (head, tail) = rest.split(atFirst: 0x3A) {
            name = head
            value = tail.string
        }
        guard name.isToken else { throw SDPError(.badAttribute, "a=ssrc attribute name is not a token") }
        self.init(ssrc: UInt32(ssrc), attribute: name.string, value: value)
    }

    /// The text after `a=ssrc:`.
    public var attributeValue: String {
        var text = "\(ssrc) \(attribute)"
        if let value { text += ":\(value)" }
        return text
    }
}

/// `a=ssrc-group:<semantics> <ssrc>...` (RFC 5576 §4.2), e.g. `FID 1 2` (RFC 4588 §8.7).
public struct SSRCGroup: Sendable, Equatable {
    /// The group's semantics: `FID` (media, then RTX), `SIM`, `FEC-FR`, …
    public var semantics: String
    /// The grouped sources, in order.
    public var ssrcs: [UInt32]

    /// A group of `ssrcs` with `semantics`.
    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }

    init(span: ByteSpan) throws(SDPError) {
        let fields = span.fields()
        guard let first = fields.first, first.isToken, fields.count >= 2 else {
            throw SDPError(.badAttribute, "a=ssrc-group needs semantics and sources")
        }
        var ssrcs: [UInt32] = []
        ssrcs.reserveCapacity(fields.count - 1)
        for field in fields.dropFirst() {
            guard let ssrc = field.number(max: UInt64(UInt32.max)) else {
                throw SDPError(.badAttribute, "a=ssrc-group source is not a 32-bit number")
            }
            ssrcs.append(UInt32(ssrc))
        }
        self.init(semantics: first.string, ssrcs: ssrcs)
    }

    /// The text after `a=ssrc-group:`.
    public var attributeValue: String { ([semantics] + ssrcs.map(String.init)).joined(separator: " ") }
}

/// `a=msid:<stream id> [<track id>]` (RFC 8830 §2): the media stream and track of an m= section.
public struct MSID: Sendable, Equatable {
    /// The media stream identifier (`-` for no stream).
    public var streamID: String
    /// The application data, used as the track identifier, if written.
    public var trackID: String?

    /// Stream `streamID` with track `trackID`.
    public init(streamID: String, trackID: String?) {
        self.streamID = streamID
        self.trackID = trackID
    }

    /// Reads `<stream id> [<track id>]`, the value of `a=msid` (or of `a=ssrc:<n> msid:`).
    public init(attributeValue text: Substring) throws(SDPError) {
        self = try Lexical.withSpan(text) { span throws(SDPError) in try MSID(span: span) }
    }

    init(span: ByteSpan) throws(SDPError) {
        let fields = span.fields()
        // RFC 8830 §2: msid-id and msid-appdata are 1*64 token-char; be lenient on length and
        // characters (GStreamer's ids hold an `@`).
        guard (1...2).contains(fields.count), fields.allSatisfy({ $0.isVisible && $0.count <= 256 }) else {
            throw SDPError(.badAttribute, "a=msid needs '<stream id> [<track id>]'")
        }
        self.init(streamID: fields[0].string, trackID: fields.count == 2 ? fields[1].string : nil)
    }

    /// The text after `a=msid:`.
    public var attributeValue: String { trackID.map { "\(streamID) \($0)" } ?? streamID }
}

/// `a=fingerprint:<hash function> <hex bytes>` (RFC 8122 §5): the hash of a DTLS certificate.
public struct Fingerprint: Sendable, Equatable {
    /// The hash function as written, e.g. `sha-256`; compare case-insensitively.
    public var hashFunction: String
    /// The digest.
    public var bytes: [UInt8]

    /// A fingerprint of `bytes` made with `hashFunction`.
    public init(hashFunction: String, bytes: [UInt8]) {
        self.hashFunction = hashFunction
        self.bytes = bytes
    }

    /// Reads `<hash function> AB:CD:...`, the value of `a=fingerprint`.
    public init(attributeValue text: Substring) throws(SDPError) {
        self = try Lexical.withSpan(text) { span throws(SDPError) in try Fingerprint(span: span) }
    }

    init(span: ByteSpan) throws(SDPError) {
        guard let (hash, hexText) = span.split(atFirst: 0x20), hash.isToken else {
            throw SDPError(.badFingerprint, "a=fingerprint needs '<hash> <hex bytes>'")
        }
        let bytes = try Self.bytes(fromHex: hexText)
        let hashName = hash.string
        if let expected = Self.digestLength(of: hashName.lowercased()), expected != bytes.count {
            throw SDPError(.badFingerprint, "a fingerprint of \(hashName) has \(expected) bytes, not \(bytes.count)")
        }
        self.init(hashFunction: hashName, bytes: bytes)
    }

    /// Reads a colon-separated digest, `AB:CD:...` (RFC 8122 §5: 2UHEX pairs; lower case accepted).
    public static func bytes(fromHex text: Substring) throws(SDPError) -> [UInt8] {
        try Lexical.withSpan(text) { span throws(SDPError) in try bytes(fromHex: span) }
    }

    static func bytes(fromHex span: ByteSpan) throws(SDPError) -> [UInt8] {
        let count = span.count
        guard count >= 2, count <= 64 * 3, (count + 1) % 3 == 0 else {
            throw SDPError(.badFingerprint, "fingerprint is not colon-separated hex pairs")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((count + 1) / 3)
        var index = 0
        while index < count {
            guard let high = hexValue(span[index]), let low = hexValue(span[index + 1]) else {
                throw SDPError(.badFingerprint, "fingerprint has a character that is not hex")
            }
            bytes.append(high << 4 | low)
            if index + 2 < count, span[index + 2] != 0x3A {
                throw SDPError(.badFingerprint, "fingerprint pairs are not separated by ':'")
            }
            index += 3
        }
        return bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The digest length of the RFC 8122 §5 hash functions this module knows.
    static func digestLength(of hash: String) -> Int? {
        switch hash {
        case "sha-1": 20
        case "sha-224": 28
        case "sha-256": 32
        case "sha-384": 48
        case "sha-512": 64
        case "md5", "md2": 16
        default: nil
        }
    }

    /// The digest as upper-case hex pairs separated by colons (RFC 8122 §5).
    public var hexDigest: String {
        let digits: [Character] = Array("0123456789ABCDEF")
        var text = ""
        text.reserveCapacity(bytes.count * 3)
        for (index, byte) in bytes.enumerated() {
            if index > 0 { text.append(":") }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }

    /// The text after `a=fingerprint:`.
    public var attributeValue: String { "\(hashFunction) \(hexDigest)" }
}
