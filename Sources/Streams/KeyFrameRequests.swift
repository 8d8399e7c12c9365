import RTP
import Wire

/// How a receiver asks a sender for a keyframe, as negotiated in SDP `a=rtcp-fb`.
public enum KeyFrameRequestMethod: Equatable, Sendable {
    /// Picture loss indication (RFC 4585 §6.3.1), `a=rtcp-fb:<pt> nack pli`; preferred.
    case pictureLossIndication
    /// Full intra request (RFC 5104 §4.3.1), `a=rtcp-fb:<pt> ccm fir`, when PLI is not negotiated.
    case fullIntraRequest
}

/// The receive side's keyframe request: once a keyframe is needed (a loss NACK could not repair,
/// a decoder error, a new viewer) it asks by PLI or FIR, and repeats the request every
/// `retryInterval` until a keyframe arrives.
///
/// FIR carries a command sequence number that stays the same for repetitions of one request and
/// grows by one for a new request (RFC 5104 §4.3.1.2), so the sender can drop duplicates.
public struct KeyFrameRequester: Sendable {
    /// Our SSRC, the feedback's sender.
    public let localSSRC: SSRC
    /// The video stream we need a keyframe of.
    public let mediaSSRC: SSRC
    /// PLI or FIR.
    public let method: KeyFrameRequestMethod
    /// Time between repetitions while waiting.
    public let retryInterval: Duration
    private var waitingSince: Instant?
    private var lastRequestAt: Instant?
    private var firSequenceNumber: UInt8 = 0
    private var firRequestOpen = false
    /// Requests sent so far (first requests and repetitions).
    public private(set) var requestsSent: Int64 = 0

    /// A requester for `mediaSSRC`; 300 ms between repetitions by default.
    public init(localSSRC: SSRC, mediaSSRC: SSRC, method: KeyFrameRequestMethod = .pictureLossIndication,
                retryInterval: Duration = .milliseconds(300)) {
        self.localSSRC = localSSRC
        self.mediaSSRC = mediaSSRC
        self.method = method
        self.retryInterval = retryInterval
    }

    /// Whether a keyframe is awaited.
    public var isWaiting: Bool { waitingSince != nil }

    /// A keyframe is needed from now on (repeated calls while waiting change nothing).
    public mutating func keyFrameNeeded(now: Instant) {
        guard waitingSince == nil else { return }
        waitingSince = now
        if method == .fullIntraRequest {
            // A new request: the next FIR carries the next command sequence number.
            if firRequestOpen { firSequenceNumber &+= 1 }
            firRequestOpen = true
        }
    }

    /// A keyframe arrived: stop asking.
    public mutating func keyFrameReceived() {
        waitingSince = nil
        lastRequestAt = nil
    }

    /// The request to send now, if one is due: the first at once, then one per `retryInterval`.
    public mutating func poll(now: Instant) -> RTCPPacket? {
        guard waitingSince != nil else { return nil }
        if let last = lastRequestAt, now - last < retryInterval { return nil }
        lastRequestAt = now
        requestsSent += 1
        switch method {
        case .pictureLossIndication:
            return .pictureLossIndication(PictureLossIndication(senderSSRC: localSSRC, mediaSSRC: mediaSSRC))
        case .fullIntraRequest:
            // RFC 5104 §4.3.1.2: the media source field is 0; the FCI names the stream.
            return .fullIntraRequest(FullIntraRequest(
                senderSSRC: localSSRC, mediaSSRC: 0,
                entries: [FIREntry(ssrc: mediaSSRC, sequenceNumber: firSequenceNumber)]))
        }
    }

    /// When the next request is due, while waiting.
    public var nextTimeout: Instant? {
        guard let waitingSince else { return nil }
        return lastRequestAt.map { $0 + retryInterval } ?? waitingSince
    }
}

/// The send side's keyframe request coalescer: PLI and FIR from any number of receivers become
/// at most one "encode a keyframe now" per `minimumInterval`, so a storm of requests (50 viewers
/// losing the same packet) costs one keyframe. A request within the interval after a keyframe is
/// held and granted when the interval ends (the requester may not have had that keyframe).
/// Repeated FIRs (same sender, same command sequence number) are ignored (RFC 5104 §4.3.1.2).
public struct KeyFrameRequestPacer: Sendable {
    /// The video stream the encoder feeds.
    public let mediaSSRC: SSRC
    /// Keyframes at most this often.
    public let minimumInterval: Duration
    private var pending = false
    private var lastKeyFrameAt: Instant?
    /// Last FIR command sequence number per requester; bounded by `maxFIRSenders`.
    private var firSequenceNumbers: [SSRC: UInt8] = [:]
    private static let maxFIRSenders = 1024
    /// Requests taken (PLI and new FIR), before coalescing.
    public private(set) var requestsReceived: Int64 = 0
    /// Keyframes asked of the encoder.
    public private(set) var keyFramesRequested: Int64 = 0

    /// A pacer for `mediaSSRC`: one keyframe per 500 ms at most by default.
    public init(mediaSSRC: SSRC, minimumInterval: Duration = .milliseconds(500)) {
        self.mediaSSRC = mediaSSRC
        self.minimumInterval = minimumInterval
    }

    /// Takes a PLI; ignored when it is about another stream.
    public mutating func receivedPictureLossIndication(_ pli: PictureLossIndication) {
        guard pli.mediaSSRC == mediaSSRC else { return }
        requestsReceived += 1
        pending = true
    }

    /// Takes a FIR; only its entries for this stream with a new command sequence number count.
    public mutating func receivedFullIntraRequest(_ fir: FullIntraRequest) {
        for entry in fir.entries where entry.ssrc == mediaSSRC {
            if firSequenceNumbers[fir.senderSSRC] == entry.sequenceNumber { continue }
            if firSequenceNumbers.count >= Self.maxFIRSenders, firSequenceNumbers[fir.senderSSRC] == nil {
                firSequenceNumbers.removeAll(keepingCapacity: true)
            }
            firSequenceNumbers[fir.senderSSRC] = entry.sequenceNumber
            requestsReceived += 1
            pending = true
        }
    }

    /// The encoder made a keyframe on its own (start, periodic refresh): requests made before it
    /// are answered.
    public mutating func keyFrameEncoded(now: Instant) {
        pending = false
        lastKeyFrameAt = now
    }

    /// Whether to encode a keyframe now; true at most once per `minimumInterval`.
    public mutating func pollKeyFrame(now: Instant) -> Bool {
        guard pending else { return false }
        if let last = lastKeyFrameAt, now - last < minimumInterval { return false }
        pending = false
        lastKeyFrameAt = now
        keyFramesRequested += 1
        return true
    }

    /// When a held request will be granted (an instant in the past means at once).
    public var nextTimeout: Instant? {
        guard pending else { return nil }
        return lastKeyFrameAt.map { $0 + minimumInterval } ?? Instant(nanoseconds: 0)
    }
}
