// What the host brings to a negotiation: its transport credentials, its candidates, the codecs,
// feedback and header extensions it supports, and what it sends on each m= line.

/// The host's side of an offer/answer exchange. The defaults are what Tessera supports: VP8 and
/// Opus, NACK/PLI/FIR/REMB/transport-cc, and five header extensions.
public struct HostParameters: Sendable, Equatable {
    /// The host's `a=ice-ufrag` (RFC 8839 §5.4: 4 to 256 ice-chars).
    public var iceUsernameFragment: String
    /// The host's `a=ice-pwd` (RFC 8839 §5.4: 22 to 256 ice-chars).
    public var icePassword: String
    /// The SHA-256 digest of the host's DTLS certificate as `AB:CD:...` (computed elsewhere).
    public var fingerprintSHA256: String
    /// The addresses the host announces: one host candidate each, in order of preference.
    public var candidateAddresses: [HostCandidateAddress]
    /// The codecs the host receives and sends, in order of preference.
    public var codecs: [CodecCapability]
    /// The RTCP feedback the host understands (payload type ignored).
    public var feedback: [RTCPFeedback]
    /// The RTP header extensions (RFC 8285) the host understands, by URI.
    public var headerExtensionURIs: [String]
    /// What the host sends on each m= line, by mid; a line without an entry is receive-only.
    public var senders: [String: HostSender]
    /// The answer's `o=` session id (RFC 8866 §5.2).
    public var sessionID: UInt64
    /// The answer's `o=` session version.
    public var sessionVersion: UInt64
    /// Whether a simulcast offer's layers are taken (RFC 8853); otherwise it is answered as one
    /// stream (the echo, which sends back what it gets on one SSRC).
    public var receivesSimulcast: Bool

    /// Host parameters; the codec, feedback and extension lists default to Tessera's.
    public init(
        iceUsernameFragment: String, icePassword: String, fingerprintSHA256: String,
        candidateAddresses: [HostCandidateAddress], codecs: [CodecCapability] = [.opus, .vp8],
        feedback: [RTCPFeedback] = HostParameters.defaultFeedback,
        headerExtensionURIs: [String] = HostParameters.defaultHeaderExtensionURIs,
        senders: [String: HostSender] = [:], sessionID: UInt64, sessionVersion: UInt64 = 2, receivesSimulcast: Bool = true
    ) {
        self.receivesSimulcast = receivesSimulcast
        self.iceUsernameFragment = iceUsernameFragment
        self.icePassword = icePassword
        self.fingerprintSHA256 = fingerprintSHA256
        self.candidateAddresses = candidateAddresses
        self.codecs = codecs
        self.feedback = feedback
        self.headerExtensionURIs = headerExtensionURIs
        self.senders = senders
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
    }

    /// nack (RFC 4585), nack pli (RFC 4585 §6.3.1), ccm fir (RFC 5104), goog-remb,
    /// transport-cc (draft-holmer-rmcat-transport-wide-cc-extensions).
    public static let defaultFeedback: [RTCPFeedback] = [
        RTCPFeedback(payloadType: nil, type: "nack"),
        RTCPFeedback(payloadType: nil, type: "nack", parameter: "pli"),
        RTCPFeedback(payloadType: nil, type: "ccm", parameter: "fir"),
        RTCPFeedback(payloadType: nil, type: "goog-remb"),
        RTCPFeedback(payloadType: nil, type: "transport-cc"),
    ]

    /// mid (RFC 8843 §15.1), audio level (RFC 6464), abs-send-time, transport-wide CC, and
    /// video orientation (3GPP TS 26.114).
    public static let defaultHeaderExtensionURIs: [String] = [
        "urn:ietf:params:rtp-hdrext:sdes:mid",
        "urn:ietf:params:rtp-hdrext:ssrc-audio-level",
        "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        "urn:3gpp:video-orientation",
    ]
}

/// An address and port the host receives media on: UDP, or TCP for ICE-TCP (RFC 6544, a
/// passive candidate: the peer connects).
public struct HostCandidateAddress: Sendable, Equatable {
    /// The IPv4 or IPv6 address, e.g. `127.0.0.1`.
    public var address: String
    /// The port, e.g. 50000.
    public var port: UInt16
    /// A TCP passive candidate rather than UDP.
    public var isTCP: Bool

    /// The address `address`:`port`, UDP unless `isTCP`.
    public init(address: String, port: UInt16, isTCP: Bool = false) {
        self.address = address
        self.port = port
        self.isTCP = isTCP
    }
}

/// A codec the host supports, matched against an offer's `a=rtpmap` by name (case-insensitive),
/// clock rate and channel count.
public struct CodecCapability: Sendable, Equatable {
    /// audio or video.
    public var kind: MediaKind
    /// The encoding name, e.g. `VP8`, `opus`.
    public var name: String
    /// The RTP clock rate.
    public var clockRate: UInt32
    /// The channel count for audio (RFC 7587 §7: Opus is always `/2`).
    public var channels: UInt8?
    /// The `a=fmtp` the host writes in its answer for this codec, if any.
    public var formatParameters: String?
    /// Whether the host accepts RTX (RFC 4588) for this codec when offered.
    public var acceptsRetransmission: Bool

    /// A codec capability.
    public init(kind: MediaKind, name: String, clockRate: UInt32, channels: UInt8? = nil,
                formatParameters: String? = nil, acceptsRetransmission: Bool = false) {
        self.kind = kind
        self.name = name
        self.clockRate = clockRate
        self.channels = channels
        self.formatParameters = formatParameters
        self.acceptsRetransmission = acceptsRetransmission
    }

    /// VP8 (RFC 7741) at 90 kHz, with RTX.
    public static let vp8 = CodecCapability(kind: .video, name: "VP8", clockRate: 90000, acceptsRetransmission: true)
    /// Opus (RFC 7587) at 48 kHz, two channels, with in-band FEC, and DTX asked of the sender
    /// (`usedtx=1`, §6.1: in silence a browser then sends a packet every 400 ms instead of 50 a
    /// second; most guests of a large room are silent most of the time).
    public static let opus = CodecCapability(kind: .audio, name: "opus", clockRate: 48000, channels: 2,
                                             formatParameters: "minptime=10;useinbandfec=1;usedtx=1")

    /// Whether `map` describes this codec: same name ignoring case, clock rate and channels (an
    /// absent channel count means 1, RFC 8866 §6.6).
    public func matches(_ map: RTPMap) -> Bool {
        map.encodingName.lowercased() == name.lowercased() && map.clockRate == clockRate
            && (map.channels ?? 1) == (channels ?? 1)
    }
}

/// What the host sends on one m= line: its source, RTX source and identifiers (RFC 5576, RFC 8830).
public struct HostSender: Sendable, Equatable {
    /// The host's media SSRC.
    public var ssrc: UInt32
    /// The host's RTX SSRC, announced with `a=ssrc-group:FID` when RTX is negotiated.
    public var rtxSSRC: UInt32?
    /// The RTCP CNAME (RFC 3550 §6.5.1).
    public var cname: String
    /// The media stream id of `a=msid` (RFC 8830).
    public var streamID: String
    /// The track id of `a=msid`.
    public var trackID: String

    /// A sender.
    public init(ssrc: UInt32, rtxSSRC: UInt32? = nil, cname: String, streamID: String, trackID: String) {
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.cname = cname
        self.streamID = streamID
        self.trackID = trackID
    }
}
