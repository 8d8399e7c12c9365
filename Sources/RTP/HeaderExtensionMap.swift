/// The URI that names a header extension in SDP `a=extmap` (RFC 8285 §5).
public struct HeaderExtensionURI: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral {
    /// The URI as SDP writes it.
    public var rawValue: String
    /// The extension with this URI.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The extension with this URI, written as a string literal.
    public init(stringLiteral value: String) { rawValue = value }

    /// The media identification (BUNDLE) `mid` (RFC 8843 §14, sdes:mid).
    public static let mid: HeaderExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:mid"
    /// Client-to-mixer audio level (RFC 6464).
    public static let audioLevel: HeaderExtensionURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
    /// Absolute send time, 6.18 fixed point seconds (webrtc.org abs-send-time).
    public static let absoluteSendTime: HeaderExtensionURI =
        "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    /// Transport-wide sequence number (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2).
    public static let transportSequenceNumber: HeaderExtensionURI =
        "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
    /// Coordination of video orientation, CVO (3GPP TS 26.114 §7.4.5).
    public static let videoOrientation: HeaderExtensionURI = "urn:3gpp:video-orientation"
    /// The simulcast layer's rid (RFC 8852 §3.1).
    public static let rtpStreamID: HeaderExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
    /// The rid a retransmission repairs (RFC 8852 §3.2).
    public static let repairedRTPStreamID: HeaderExtensionURI = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
}

/// The header extensions negotiated for one session: URI to local id, from SDP `a=extmap`
/// (RFC 8285 §5). Lookups of the standard URIs are stored fields, so per-packet use costs no hashing.
public struct HeaderExtensionMap: Equatable, Sendable {
    private var ids: [HeaderExtensionURI: UInt8] = [:]
    /// Negotiated id of `HeaderExtensionURI.mid`.
    public private(set) var midID: UInt8?
    /// Negotiated id of `HeaderExtensionURI.audioLevel`.
    public private(set) var audioLevelID: UInt8?
    /// Negotiated id of `HeaderExtensionURI.absoluteSendTime`.
    public private(set) var absoluteSendTimeID: UInt8?
    /// Negotiated id of `HeaderExtensionURI.transportSequenceNumber`.
    public private(set) var transportSequenceNumberID: UInt8?
    /// Negotiated id of `HeaderExtensionURI.videoOrientation`.
    public private(set) var videoOrientationID: UInt8?

    /// A map with nothing negotiated.
    public init() {}

    /// A map from these `a=extmap` pairs. Ids outside 1...255 are ignored.
    public init(_ pairs: [HeaderExtensionURI: UInt8]) {
        for (uri, id) in pairs { set(uri, id: id) }
    }

    /// Binds `uri` to `id` (replacing an earlier binding of the URI); id 0 removes it.
    public mutating func set(_ uri: HeaderExtensionURI, id: UInt8) {
        let value: UInt8? = id == 0 ? nil : id
        ids[uri] = value
        switch uri {
        case .mid: midID = value
        case .audioLevel: audioLevelID = value
        case .absoluteSendTime: absoluteSendTimeID = value
        case .transportSequenceNumber: transportSequenceNumberID = value
        case .videoOrientation: videoOrientationID = value
        default: break
        }
    }

    /// The negotiated id of `uri`, or nil when the session did not negotiate it.
    public func id(for uri: HeaderExtensionURI) -> UInt8? {
        switch uri {
        case .mid: return midID
        case .audioLevel: return audioLevelID
        case .absoluteSendTime: return absoluteSendTimeID
        case .transportSequenceNumber: return transportSequenceNumberID
        case .videoOrientation: return videoOrientationID
        default: return ids[uri]
        }
    }

    /// The URI bound to `id`, if any.
    public func uri(for id: UInt8) -> HeaderExtensionURI? {
        ids.first { $0.value == id }?.key
    }
}

/// A typed header extension value: how one URI's element data reads and writes.
public protocol RTPHeaderExtensionValue: Equatable, Sendable {
    /// The URI that SDP negotiates for this extension.
    static var uri: HeaderExtensionURI { get }
    /// The negotiated id of this extension in `map` (a stored field for the standard ones).
    static func id(in map: HeaderExtensionMap) -> UInt8?
    /// Reads the value from an element's data; `id` is only for the error.
    init(extensionData data: ArraySlice<UInt8>, id: UInt8) throws(RTPParseError)
    /// The element data that carries this value.
    var extensionData: [UInt8] { get }
}

extension RTPHeaderExtensionValue {
    /// Looks the URI up in `map`.
    public static func id(in map: HeaderExtensionMap) -> UInt8? { map.id(for: uri) }
}

extension RTPPacket {
    /// The value of a typed extension, or nil when it is not negotiated or not in this packet.
    /// Throws when the element is present but malformed.
    public func headerExtension<Value: RTPHeaderExtensionValue>(_ type: Value.Type, in map: HeaderExtensionMap)
        throws(RTPParseError) -> Value?
    {
        guard let id = Value.id(in: map), let data = headerExtensionData(id: id) else { return nil }
        return try Value(extensionData: data, id: id)
    }

    /// Sets a typed extension under its negotiated id; returns false (and changes nothing) when the
    /// session did not negotiate it.
    @discardableResult
    public mutating func setHeaderExtension<Value: RTPHeaderExtensionValue>(_ value: Value, in map: HeaderExtensionMap)
        -> Bool
    {
        guard let id = Value.id(in: map) else { return false }
        setHeaderExtensionData(id: id, value.extensionData[...])
        return true
    }
}
