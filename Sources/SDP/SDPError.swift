// Errors and resource limits of the SDP module.

/// Why an SDP text was refused, or why an offer could not be answered.
///
/// Every parse failure and every negotiation refusal is one of these: the parser never traps on
/// hostile input. `kind` is stable and fit for an HTTP 400 reason;
/// `line` (1-based) and `detail` are for humans.
public struct SDPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The class of failure, stable across releases.
    public enum Kind: String, Sendable, Equatable, Hashable {
        // Input bounds (a hostile offer must not allocate without bound).
        /// The input is larger than `SDPLimits.maxInputBytes`.
        case inputTooLarge
        /// A line is longer than `SDPLimits.maxLineBytes`.
        case lineTooLong
        /// More m= sections than `SDPLimits.maxMediaSections`.
        case tooManyMediaSections
        /// More lines in one section than `SDPLimits.maxLinesPerSection`.
        case tooManyAttributes
        // Lexical (RFC 8866 §5).
        /// A line is not valid UTF-8.
        case invalidUTF8
        /// A NUL byte, or a CR not followed by LF.
        case invalidCharacter
        /// A line is not of the form `<letter>=<value>`.
        case malformedLine
        /// A type letter RFC 8866 does not define: §5 says to refuse the whole description.
        case unknownLineType
        /// The first line is not `v=` (RFC 8866 §5.1).
        case missingVersion
        /// `v=` is not `0`.
        case unsupportedVersion
        /// A required line (`o=`, `s=`, `t=`) is absent.
        case missingField
        /// A line that may appear once appears twice, or a session line inside a media section.
        case duplicateField
        /// `o=` (RFC 8866 §5.2) does not have its six fields.
        case badOrigin
        /// `c=` (RFC 8866 §5.7) does not have its three fields.
        case badConnection
        /// `b=` (RFC 8866 §5.8) is not `<type>:<number>`.
        case badBandwidth
        /// `t=` (RFC 8866 §5.9) is not two numbers.
        case badTiming
        /// `m=` (RFC 8866 §5.14) does not have media, port, proto and a format.
        case badMediaLine
        /// The m= port is not a number in 0...65535 (with an optional `/count`).
        case badPort
        /// The m= proto is not a `/`-separated list of tokens.
        case badProtocol
        /// An RTP payload type outside 0...127 (RFC 3551 §6) or not a number.
        case badPayloadType
        /// An attribute (RFC 8866 §5.13) whose value does not follow its grammar.
        case badAttribute
        /// `a=fingerprint` (RFC 8122 §5) with a bad hash name, bad hex or wrong length.
        case badFingerprint
        /// `a=candidate` (RFC 8839 §5.1) that does not follow its grammar.
        case badCandidate
        /// `a=ice-ufrag` / `a=ice-pwd` (RFC 8839 §5.4) with bad characters or length.
        case badICECredential
        // Negotiation (RFC 8829 §5.3, RFC 8843, RFC 8839, RFC 8842).
        /// No audio or video section of the offer shares a codec with the host.
        case noUsableCodec
        /// Nothing in the offer can be accepted (only data channels, unknown media, disabled lines).
        case noUsableMedia
        /// Several usable sections but no BUNDLE group: the host has one transport per peer.
        case bundleRequired
        /// Usable sections that all lack `a=rtcp-mux`: the host requires RTCP mux (RFC 8858).
        case rtcpMuxRequired
        /// The offer's transport has no `a=fingerprint` (RFC 8842 §5.4).
        case missingFingerprint
        /// The offer's transport has no `a=ice-ufrag` / `a=ice-pwd` (RFC 8839 §5.4).
        case missingICECredentials
        /// `a=setup:holdconn` (RFC 4145 §4): the host will not wait for a later connection.
        case unsupportedSetupRole
        /// An m= section without `a=mid` (RFC 8843 requires one per section).
        case missingMid
        /// Two m= sections with the same `a=mid` (RFC 5888 §4).
        case duplicateMid
        /// Two m= sections name the same SSRC (an SSRC is one source in the session: RFC 3550
        /// §8, and with BUNDLE it is how the answerer routes, RFC 8843 §9.2).
        case duplicateSSRC
        /// The BUNDLE group names a mid that no m= section has (RFC 8843 §7.2).
        case badBundleGroup
        /// The host's own parameters (fingerprint, ICE credentials, codec) are not valid.
        case invalidHostParameters
    }

    /// The class of failure.
    public var kind: Kind
    /// The 1-based line of the input where it was found, when it came from one line.
    public var line: Int?
    /// A sentence for humans (logs, the HTTP error's `detail`).
    public var detail: String

    /// Makes an error of `kind`, found at `line`, explained by `detail`.
    public init(_ kind: Kind, line: Int? = nil, _ detail: String) {
        self.kind = kind
        self.line = line
        self.detail = detail
    }

    /// `kind`, line and detail on one line.
    public var description: String {
        if let line { return "SDP \(kind.rawValue) at line \(line): \(detail)" }
        return "SDP \(kind.rawValue): \(detail)"
    }
}

/// The bounds the parser enforces, so that hostile input costs bounded memory and time.
public enum SDPLimits {
    /// The largest SDP accepted: real offers are 1.5 to 10 KiB.
    public static let maxInputBytes = 64 * 1024
    /// The longest line accepted: a sha-512 fingerprint is about 210 bytes.
    public static let maxLineBytes = 4096
    /// The most m= sections accepted (a call uses 2 or 3).
    public static let maxMediaSections = 32
    /// The most lines in the session part or in one media section (Chromium's video section has
    /// about 140).
    public static let maxLinesPerSection = 1024
    /// The most formats on one m= line: there are 128 RTP payload types.
    public static let maxFormatsPerMedia = 128
}
