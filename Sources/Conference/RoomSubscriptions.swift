import Compositing
import RTP
import SDP
import Wire

/// Which of a participant's video tracks: its camera or its screen.
public typealias VideoSource = TemplateDescription.Source

/// One participant's camera or screen, by participant id: what a subscription carries.
public struct TrackReference: Hashable, Sendable {
    public let participant: String
    public let source: VideoSource
    public init(participant: String, source: VideoSource) {
        self.participant = participant
        self.source = source
    }
}

/// A subscription as the API answers it: whose track, on which of the subscriber's m-lines, and
/// how many subscriptions hold it.
public struct SubscriptionState: Codable, Sendable, Equatable {
    /// The identity of the participant whose track it is.
    public let participant: String
    public let source: VideoSource
    public let mid: String
    public let count: Int
    public init(participant: String, source: VideoSource, mid: String, count: Int) {
        self.participant = participant
        self.source = source
        self.mid = mid
        self.count = count
    }
}

/// Why a subscription could not be made or changed.
public enum SubscriptionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No such participant, or it sends no such track now.
    case noSuchTrack(String)
    /// Every video m-line the subscriber receives on carries another track (or it has none).
    case noFreeMLine(String)
    /// The subscriber holds no subscription to that track.
    case notSubscribed(String)

    public var description: String {
        switch self {
        case .noSuchTrack(let detail), .noFreeMLine(let detail), .notSubscribed(let detail): detail
        }
    }
}

/// Subscriptions (seed 003): a participant, or a viewer of one track, receives another's camera
/// or screen as it is sent, forwarded on one of its own video m-lines (`RTPForwarder`: its own
/// SSRC, sequence numbers and timestamps; no decode, no encode). Reference counted per
/// (subscriber, track): subscribing again raises the count on the same m-line, unsubscribing
/// lowers it, and the stream stops at zero. A track that ends ends its subscriptions (an RTCP
/// BYE on the m-line); a viewer of that one track leaves with it.
extension Room {
    /// Binds `source` of `publisher` (an identity, or a participant id) to the subscriber's
    /// m-line that carries it already, else to its first free one; its sender is asked for a key
    /// frame.
    @discardableResult
    public func subscribe(_ subscriberID: String, to publisher: String, source: VideoSource, now: Instant) throws(SubscriptionError) -> SubscriptionState {
        guard let subscriber = participant(id: subscriberID) else { throw .noSuchTrack("no participant \(subscriberID)") }
        let owner = try publishing(publisher, source)
        let track = TrackReference(participant: owner.id, source: source)
        let slots = subscriber.outbound.forwardingSlots
        guard let index = slots.firstIndex(where: { $0.subscription?.track == track }) ?? slots.firstIndex(where: { $0.subscription == nil }) else {
            throw .noFreeMLine(slots.isEmpty
                ? "\(subscriber.identity) receives no video m-line besides the composite: add a recvonly video m-line (renegotiate) and subscribe again"
                : "each of \(subscriber.identity)'s \(slots.count) extra video m-lines carries a track: add one (renegotiate) or unsubscribe one")
        }
        let count = subscriber.outbound.subscribe(slot: index, to: track)
        reindexForwarding()
        if count == 1 {
            owner.inbound.requestKeyFrame(of: source, now: now)
            serviceRTCP(owner, now: now)
        }
        return SubscriptionState(participant: owner.identity, source: source, mid: slots[index].mid, count: count)
    }

    /// One subscription fewer (every one with `all`); at zero the m-line is free and its stream
    /// stops. Returns the count left.
    @discardableResult
    public func unsubscribe(_ subscriberID: String, from publisher: String, source: VideoSource, all: Bool = false) throws(SubscriptionError) -> Int {
        guard let subscriber = participant(id: subscriberID) else { throw .notSubscribed("no participant \(subscriberID)") }
        let owner = participants.first { !$0.isViewer && ($0.identity == publisher || $0.id == publisher) }
        guard let owner, let index = subscriber.outbound.forwardingSlots.firstIndex(where: {
            $0.subscription?.track == TrackReference(participant: owner.id, source: source)
        }) else {
            throw .notSubscribed("\(subscriber.identity) does not subscribe to \(publisher.prefix(64))'s \(source.rawValue)")
        }
        let count = subscriber.outbound.unsubscribe(slot: index, all: all)
        if count == 0 { reindexForwarding() }
        return count
    }

    /// The subscriptions a participant holds, in m-line order.
    public func subscriptions(of subscriberID: String) -> [SubscriptionState] {
        guard let subscriber = participant(id: subscriberID) else { return [] }
        return subscriber.outbound.forwardingSlots.compactMap { slot in
            guard let (track, count) = slot.subscription, let owner = participant(id: track.participant) else { return nil }
            return SubscriptionState(participant: owner.identity, source: track.source, mid: slot.mid, count: count)
        }
    }

    /// Who subscribes to a track (participants by identity; viewers of that track too).
    public func subscribers(of track: TrackReference) -> [Participant] {
        (forwarding[track] ?? []).compactMap(participant(id:))
    }

    /// The participant named `publisher` (identity or id), when it sends `source` now.
    private func publishing(_ publisher: String, _ source: VideoSource) throws(SubscriptionError) -> Participant {
        guard let owner = participants.first(where: { !$0.isViewer && ($0.identity == publisher || $0.id == publisher) }) else {
            throw .noSuchTrack("no participant \(publisher.prefix(64)) in room \(name)")
        }
        guard owner.inbound.sends(source) else { throw .noSuchTrack("\(owner.identity) sends no \(source.rawValue) now") }
        return owner
    }

    /// A viewer of one track: joins without a composite (every video m-line it receives on is a
    /// forwarding slot) and subscribes its first to `source` of `publisher`. Throws, having
    /// added nobody, when there is no such track or its offer receives no video.
    @discardableResult
    public func joinAsTrackViewer(id: String, negotiated: NegotiatedSession, publisher: String, source: VideoSource, seed: UInt64,
                                  now: Instant) throws(SubscriptionError) -> Participant {
        _ = try publishing(publisher, source)
        let viewer = join(id: id, identity: "viewer-\(id.prefix(8))", name: nil, negotiated: negotiated, isViewer: true,
                          forwardsOnly: true, seed: seed, now: now)
        do { try subscribe(id, to: publisher, source: source, now: now) } catch {
            leave(id, now: now)
            throw error
        }
        return viewer
    }

    /// Forwards a camera or screen packet to those who subscribe to it (not a camera muted by
    /// PATCH: its tile shows the placeholder and its subscribers get nothing either). A slot
    /// waiting for a key frame, or due its follow-up one, asks the sender for one.
    func forward(_ packet: RTPPacket, of track: TrackReference, from owner: Participant, now: Instant) {
        guard let subscribers = forwarding[track], !(track.source == .camera && owner.videoMuted) else { return }
        var keyFrameNeeded = false
        for id in subscribers {
            guard let subscriber = participant(id: id), subscriber.state == .secure else { continue }
            let (packets, wanted) = subscriber.outbound.forwardedPackets(packet, of: track, now: now)
            keyFrameNeeded = keyFrameNeeded || wanted
            for bytes in packets { emit(.sendRTP(participant: id, bytes: bytes)) }
        }
        if keyFrameNeeded { owner.inbound.requestKeyFrame(of: track.source, now: now) }
    }

    /// Its subscribers start again at its next key frame (asked for at its next packet): its
    /// camera was unmuted.
    func restartForwarding(of track: TrackReference) {
        for subscriber in subscribers(of: track) { subscriber.outbound.restartForwarding(of: track) }
    }

    /// A track ended (its participant left, or its m-line stopped or stopped sending): each
    /// m-line that carried it is sent an RTCP BYE and is free; a viewer of that track leaves.
    func endForwarding(of track: TrackReference, now: Instant) {
        for subscriber in subscribers(of: track) {
            for bytes in subscriber.outbound.endSubscriptions(to: track, now: now) {
                emit(.sendRTCP(participant: subscriber.id, bytes: bytes))
            }
            if subscriber.outbound.forwardsOnly && subscriber.outbound.forwardingSlots.allSatisfy({ $0.subscription == nil }) {
                leave(subscriber.id, reason: "track ended", now: now)
                emit(.closed(participant: subscriber.id))
            }
        }
        reindexForwarding()
    }

    /// Recomputes who subscribes to what (after subscriptions, leaves and renegotiations: rare,
    /// so the per-packet lookup is one dictionary read).
    func reindexForwarding() {
        var index: [TrackReference: [String]] = [:]
        for participant in participants {
            for slot in participant.outbound.forwardingSlots {
                if let track = slot.subscription?.track, index[track]?.contains(participant.id) != true {
                    index[track, default: []].append(participant.id)
                }
            }
        }
        forwarding = index
        refreshCameraCaps()  // a subscribed camera is forwarded at its full size
    }
}

/// A track in `GET /v1/rooms/{room}`: what a participant sends, how it stands, and who
/// subscribes to it.
public struct TrackSummary: Codable, Sendable, Equatable {
    /// `microphone`, `camera` or `screen`.
    public let source: String
    /// `audio` or `video`.
    public let kind: String
    /// `live` or `ended`.
    public let state: String
    public let muted: Bool
    /// Video only: pictures came within the last 2 s, their size, and how many in the last second.
    public let rendering: Bool?
    public let width: Int?
    public let height: Int?
    public let fps: Int?
    /// A simulcast camera (RFC 8853): the rid of the layer the host decodes, and every layer
    /// offered.
    public var layer: String?
    public var layers: [LayerSummary]?
    /// Identities (viewers by their viewer id) of those who subscribe to it.
    public let subscribers: [String]
}

/// One simulcast layer of a camera in `GET /v1/rooms/{room}`: its rid, its picture's size (from
/// its last key frame) and whether it is sent now (a sender drops its upper layers when its
/// bandwidth falls).
public struct LayerSummary: Codable, Sendable, Equatable {
    public let rid: String
    public let width: Int?
    public let height: Int?
    public let sending: Bool
}

/// One of the composite's encodings in `GET /v1/rooms/{room}`, and how many receive it.
public struct OutputSummary: Codable, Sendable, Equatable {
    public let encoding: String
    public let width: Int
    public let height: Int
    public let bitrate: Int
    public let receivers: Int
}

extension Room {
    /// The tracks a participant sends now, in the order microphone, camera, screen.
    public func tracks(of id: String, now: Instant) -> [TrackSummary] {
        guard let participant = participant(id: id) else { return [] }
        var tracks: [TrackSummary] = []
        if participant.inbound.sendsMicrophone {
            tracks.append(TrackSummary(source: "microphone", kind: "audio", state: "live", muted: participant.audioMuted, rendering: nil,
                                       width: nil, height: nil, fps: nil, subscribers: []))
        }
        for source in VideoSource.allCases where participant.inbound.sends(source) {
            let track = source == .camera ? participant.inbound.cameraTrack : participant.inbound.screenTrack
            let subscribers = subscribers(of: TrackReference(participant: id, source: source)).map { $0.isViewer ? $0.id : $0.identity }
            let layers = source == .camera ? participant.inbound.cameraLayers : nil
            tracks.append(TrackSummary(source: source.rawValue, kind: "video", state: track.readyState == .live ? "live" : "ended",
                                       muted: track.isMuted, rendering: track.isRendering(now: now),
                                       width: track.frameSize?.width, height: track.frameSize?.height, fps: track.frameRate(now: now),
                                       layer: layers?.decodedRID,
                                       layers: layers.map { choice in
                                           choice.layers.indices.map { index in
                                               let layer = choice.layers[index]
                                               return LayerSummary(rid: layer.rid, width: layer.width, height: layer.height,
                                                                   sending: choice.isSending(index, now: now))
                                           }
                                       },
                                       subscribers: subscribers))
        }
        return tracks
    }

    /// The composite's encodings running now (the main one always), with their receivers.
    public var compositeOutputs: [OutputSummary] {
        CompositeEncoding.Kind.allCases.compactMap { kind -> OutputSummary? in
            let (size, bitrate): (VideoSize, Int)
            switch kind {
            case .main: (size, bitrate) = (compositor.canvasSize, configuration.bitrate)
            case .low: (size, bitrate) = (VideoSize(width: configuration.lowWidth, height: configuration.lowHeight), configuration.lowBitrate)
            case .small: (size, bitrate) = (VideoSize(width: configuration.smallWidth, height: configuration.smallHeight), configuration.smallBitrate)
            }
            guard kind == .main || runsEncoding(kind) else { return nil }
            return OutputSummary(encoding: kind.rawValue, width: size.width, height: size.height, bitrate: bitrate, receivers: receivers(of: kind))
        }
    }
}
