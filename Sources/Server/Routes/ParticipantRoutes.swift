import Compositing
import Conference
import Foundation
import Media
import SDP
import Sockets
import Transport
import Wire

/// `POST …/participants` (and `…/viewers`, the same join without a tile), `PATCH` and `DELETE`
/// of a participant.
extension HostAPI {
    /// The contract's join: an SDP offer in, the answer out. What the participant sends is
    /// received on its transport; it is sent its mix on the audio m-line and the composite on the
    /// first video m-line.
    /// A join as a viewer (WHEP-style, receive only): the composite and the whole room's mix,
    /// no tile, no place in the participant list. The room must exist. With
    /// `?participant=ID&source=camera|screen`, that one track instead, forwarded as it is sent
    /// (the viewer's video m-lines carry it; no audio); it ends when the track ends.
    func joinAsViewer(room: String, _ request: HTTPRequest) -> HTTPResponse {
        guard let publisher = request.query["participant"] else { return join(room: room, request, viewer: true) }
        let sourceName = request.query["source"] ?? "camera"
        guard let source = VideoSource(rawValue: sourceName) else {
            return .error(400, "bad source", detail: "source is camera or screen, not \(sourceName.prefix(64))")
        }
        return join(room: room, request, viewer: true, track: (publisher, source))
    }

    func join(room: String, _ request: HTTPRequest, viewer: Bool = false, track: (publisher: String, source: VideoSource)? = nil) -> HTTPResponse {
        guard Self.isValidName(room) else { return .error(400, "bad room name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ .") }
        let given = viewer ? "viewer-" + UUID().uuidString.prefix(8).lowercased() : request.query["identity"]
        guard let identity = given, Self.isValidName(identity) else {
            return .error(400, "bad identity", detail: "give ?identity= with 1 to 64 of A-Z a-z 0-9 - _ .")
        }
        let name = viewer ? nil : request.query["name"].map { String($0.prefix(128)) }
        guard request.contentType == "application/sdp" else {
            return .error(415, "wrong content type", detail: "send the SDP offer as application/sdp")
        }
        // The first audio and the first video section carry the mix and the composite back; a
        // participant's other video sections carry its subscriptions; a track viewer's carry the track.
        let rule: AcceptedOffer.SendingRule = track != nil ? .everyVideo : viewer ? .firstOfEachKind : .firstAudioEveryVideo
        let accepted: AcceptedOffer
        do {
            accepted = try AcceptedOffer(offer: request.body, host: media, feedback: AcceptedOffer.feedback, sending: rule)
        } catch {
            return error.response
        }
        let media = self.media, rooms = self.rooms, log = self.log, drain = self.drain
        return onLoop { () -> Result<String, HTTPResponseError> in
            guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
            if viewer, rooms.value.rooms[room] == nil { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
            if rooms.value.rooms[room] == nil, drain.isDraining {
                return .failure(HTTPResponseError(503, "host draining", "this host opens no new room; its open rooms go on (join at another host)"))
            }
            if let refusal = rooms.value.refusal(room: room, identity: identity) {
                // A full room or host is a sizing matter the operator should see; a duplicate
                // identity is the client's own business (its answer says so).
                switch refusal {
                case .roomFull: log.info("joinRefused", room: room, participant: identity, ["reason": "room full"])
                case .hostFull: log.info("joinRefused", room: room, participant: identity, ["reason": "host full"])
                case .identityPresent: break
                }
                switch refusal {
                case .identityPresent: return .failure(HTTPResponseError(409, "identity present", "\(identity) is already in \(room)"))
                case .roomFull: return .failure(HTTPResponseError(503, "room full", "\(room) has its limit of participants"))
                case .hostFull: return .failure(HTTPResponseError(503, "host full", "the host has its limit of rooms"))
                }
            }
            let transport: PeerTransport
            do { transport = try accepted.makeTransport(host: media, now: media.loop.clock.now()) } catch {
                return .failure(HTTPResponseError(500, "transport", "\(error)"))
            }
            if let track {
                guard let hosted = rooms.value.rooms[room] else { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
                do throws(SubscriptionError) {
                    return .success(try hosted.joinAsTrackViewer(accepted: accepted, transport: transport, publisher: track.publisher,
                                                                 source: track.source).id)
                } catch {
                    return .failure(error.httpError)
                }
            }
            let participant = rooms.value.open(room, port: port)
                .join(identity: identity, name: name, accepted: accepted, transport: transport, isViewer: viewer)
            return .success(participant.id)
        }
        .response { id in
            // In a cluster the session's URL is absolute, on this host: a client that reached it
            // through a redirect talks to it directly from then on.
            HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"),
                                                ("Location", (cluster?.settings.url ?? "") + "/v1/rooms/\(room)/\(viewer ? "viewers" : "participants")/\(id)")],
                         body: accepted.negotiated.answer.serializedBytes())
        }
    }

    /// Trickled candidates are accepted and need nothing: the host is ICE-lite and learns the
    /// peer's address from its checks (RFC 8838 §4, RFC 8445 §2.5). An SDP offer renegotiates.
    func patchParticipant(room: String, id: String, _ request: HTTPRequest) -> HTTPResponse {
        guard participantExists(room: room, id: id) else {
            return .error(404, "not found", detail: "no participant \(id) in room \(room)")
        }
        switch request.contentType {
        case "application/trickle-ice-sdpfrag":
            return HTTPResponse(status: 204)
        case "application/json":
            return applyHearAndMuted(room: room, id: id, request.body)
        case "application/sdp":
            return renegotiate(room: room, id: id, request.body)
        default:
            return .error(415, "wrong content type", detail: "send application/sdp, application/trickle-ice-sdpfrag or application/json")
        }
    }

    /// A new offer for the session: answered `200` with the host's answer; m-lines it adds are
    /// received and sent on, m-lines it stops end their tracks; new ICE credentials in it
    /// restart ICE, and media goes on meanwhile.
    func renegotiate(room: String, id: String, _ body: [UInt8]) -> HTTPResponse {
        let rooms = self.rooms
        guard let previous = (try? media.runOnLoop({ rooms.value.hosting(room: room, id: id)?.session(id) })) ?? nil else {
            return .error(404, "not found", detail: "no participant \(id) in room \(room)")
        }
        let accepted: AcceptedOffer
        do { accepted = try AcceptedOffer(reoffer: body, previous: previous, host: media, feedback: AcceptedOffer.feedback) } catch {
            return error.response
        }
        let applied = try? media.runOnLoop { rooms.value.hosting(room: room, id: id)?.renegotiated(id, from: previous, to: accepted) ?? false }
        guard applied == true else {
            return .error(409, "renegotiated meanwhile", detail: "another renegotiation of \(id) came first, or it left: offer again")
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/sdp")], body: accepted.negotiated.answer.serializedBytes())
    }

    /// The contract's JSON PATCH: `{"hear": {"bob": false}, "muted": {"audio": true}}`. `hear`
    /// changes only this participant's mix; `muted` takes its voice out of every mix (or its
    /// picture off every tile). Answers the participant as it now is.
    func applyHearAndMuted(room: String, id: String, _ body: [UInt8]) -> HTTPResponse {
        let patch: ParticipantPatch
        do { patch = try ParticipantPatch(json: body) } catch {
            return .error(400, "bad JSON", detail: "\(error); expected {\"hear\": {\"ID\": false}, \"muted\": {\"audio\": true}}")
        }
        for identity in (patch.hear ?? [:]).keys where !Self.isValidName(identity) {
            return .error(400, "bad identity", detail: "hear names \(identity.prefix(64)), not an identity")
        }
        let rooms = self.rooms
        let summary = try? media.runOnLoop { () -> ParticipantSummary? in
            guard let hosted = rooms.value.hosting(room: room, id: id) else { return nil }
            let participant = hosted.patch(id, hear: patch.hear ?? [:], audioMuted: patch.muted?.audio, videoMuted: patch.muted?.video)
            return participant?.summary
        }
        guard let summary = summary ?? nil else { return .error(404, "not found", detail: "no participant \(id) in room \(room)") }
        return .json(200, summary)
    }

    /// `PUT …/placeholder`: a PNG or JPEG shown in place of the participant's camera while it is
    /// muted, ended or stalled; `DELETE` goes back to the placeholder colour. The picture is
    /// decoded here, on the HTTP thread, never on the media loop. 204; 415 for what is not a PNG
    /// or JPEG, 400 for one that cannot be decoded or is over 4096×4096.
    func setPlaceholder(room: String, id: String, _ request: HTTPRequest, remove: Bool = false) -> HTTPResponse {
        var picture: I420Frame?
        if !remove {
            do { picture = try StillImage.decode(request.body) } catch {
                if error == .unsupportedFormat { return .error(415, "not a picture", detail: "send a PNG or JPEG (image/png, image/jpeg)") }
                return .error(400, "bad picture", detail: error.description)
            }
        }
        let rooms = self.rooms, shown = picture
        let done = (try? media.runOnLoop { rooms.value.hosting(room: room, id: id)?.setPlaceholder(id, picture: shown) ?? false }) ?? false
        return done ? HTTPResponse(status: 204) : .error(404, "not found", detail: "no participant \(id) in room \(room)")
    }

    func participantExists(room: String, id: String) -> Bool {
        let rooms = self.rooms
        return (try? media.runOnLoop { rooms.value.hosting(room: room, id: id) != nil }) ?? false
    }

    func leave(room: String, id: String) -> HTTPResponse {
        let rooms = self.rooms
        let found = (try? media.runOnLoop { () -> Bool in
            guard let hosted = rooms.value.hosting(room: room, id: id) else { return false }
            hosted.leave(id)
            return true
        }) ?? false
        return found ? HTTPResponse(status: 204) : .error(404, "not found", detail: "no participant \(id) in room \(room)")
    }
}

/// The body of `PATCH …/participants/{pid}` as JSON.
struct ParticipantPatch: Decodable {
    struct Muted: Decodable { var audio: Bool?; var video: Bool? }
    var hear: [String: Bool]?
    var muted: Muted?

    init(json body: [UInt8]) throws(JSONDocumentError) {
        self = try StrictJSON.decode(Self.self, from: body, shape: .object(["hear": .dictionary(.boolean), "muted": .object(["audio": .boolean, "video": .boolean])]))
    }
}
