import Conference
import Wire
import Sockets
import Compositing
import Foundation
import SDP
import Transport

/// Routes the HTTP API of docs/api.md. Runs on libmicrohttpd's thread; anything that touches
/// media hops to the media loop with `MediaHost.runOnLoop`.
public final class HostAPI: Sendable {
    let media: MediaHost
    /// Echo sessions by id, and the rooms; touched only on the media loop thread.
    private let echoes: LoopConfined<[String: EchoSession]>
    private let rooms: LoopConfined<RoomDirectory>
    let events = RoomEventHub()
    static let maxEchoSessions = 64
    /// The web page's files, read once (docs/api.md: `GET /` is the page).
    private let page: [String: (type: String, bytes: [UInt8])]

    /// The HS256 secret; nil means auth is off (allowed only on loopback, `HostConfig.validate`).
    let secret: String?

    /// Where recordings go.
    let recordingsFolder: String

    init(media: MediaHost, limits: HostConfig.Limits, secret: String?, video: HostConfig.Video = HostConfig.Video(),
         recordingsFolder: String = "recordings", faults: Set<HostConfig.Testing.Fault> = []) {
        self.media = media
        self.recordingsFolder = recordingsFolder
        self.secret = secret?.isEmpty == false ? secret : nil
        var page: [String: (type: String, bytes: [UInt8])] = [:]
        for (path, file, type) in [("/", "index.html", "text/html; charset=utf-8"), ("/app.js", "app.js", "text/javascript; charset=utf-8")] {
            if let url = Bundle.module.url(forResource: "Web/\(file)", withExtension: nil), let data = try? Data(contentsOf: url) {
                page[path] = (type, Array(data))
            }
        }
        self.page = page
        echoes = LoopConfined([:], on: media.loop)
        rooms = LoopConfined(RoomDirectory(limits: .init(maxRooms: limits.maxRooms, maxParticipantsPerRoom: limits.maxParticipantsPerRoom),
                                           video: video, faults: faults, events: events), on: media.loop)
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        var response = route(request)
        // Pages on other origins may call the API (docs/api.md); Location must be readable to them.
        response.headers.append(("Access-Control-Allow-Origin", "*"))
        response.headers.append(("Access-Control-Expose-Headers", "Location, ETag"))
        return response
    }

    private func route(_ request: HTTPRequest) -> HTTPResponse {
        let path = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (request.method, path.count) {
        case ("GET", 1) where path == ["healthz"], ("HEAD", 1) where path == ["healthz"]:
            return .text(200, "ok\n")
        case ("OPTIONS", _):
            return corsPreflight()
        case ("GET", _) where page[request.path] != nil:
            guard let file = page[request.path] else { return .error(500, "page missing", detail: request.path) }
            return HTTPResponse(status: 200, headers: [("Content-Type", file.type), ("Cache-Control", "no-cache")], body: file.bytes)
        case ("GET", 1) where path == ["metrics"]:
            return authorize(request, .admin(room: nil)) ?? metrics()
        case ("POST", 2) where path == ["v1", "echo"]:
            return authorize(request, .anyValidToken) ?? startEcho(request)
        case ("DELETE", 3) where path[..<2] == ["v1", "echo"]:
            return authorize(request, .anyValidToken) ?? stopEcho(path[2])
        case ("GET", 2) where path == ["v1", "rooms"]:
            return authorize(request, .admin(room: nil)) ?? listRooms()
        case ("GET", 3) where path[..<2] == ["v1", "rooms"]:
            return authorize(request, .member(room: path[2], identity: nil)) ?? showRoom(path[2])
        case ("POST", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "viewers":
            return authorize(request, .member(room: path[2], identity: nil)) ?? joinAsViewer(room: path[2], request)
        case ("DELETE", 5) where path[0] == "v1" && path[1] == "rooms" && path[3] == "viewers":
            return authorize(request, .member(room: path[2], identity: nil)) ?? leave(room: path[2], id: path[4])
        case ("POST", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "recordings":
            return authorize(request, .admin(room: path[2])) ?? startRecording(room: path[2], request)
        case ("DELETE", 5) where path[0] == "v1" && path[1] == "rooms" && path[3] == "recordings":
            return authorize(request, .admin(room: path[2])) ?? stopRecording(room: path[2], id: path[4])
        case ("GET", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "layout":
            return authorize(request, .admin(room: path[2])) ?? showLayout(room: path[2])
        case ("PUT", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "layout":
            return authorize(request, .admin(room: path[2])) ?? setLayout(room: path[2], request)
        case ("GET", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "events":
            return authorize(request, .member(room: path[2], identity: nil)) ?? subscribe(room: path[2])
        case ("POST", 4) where path[0] == "v1" && path[1] == "rooms" && path[3] == "participants":
            return authorize(request, .member(room: path[2], identity: request.query["identity"] ?? "")) ?? join(room: path[2], request)
        case ("PATCH", 5) where path[0] == "v1" && path[1] == "rooms" && path[3] == "participants":
            return authorize(request, .member(room: path[2], identity: identity(room: path[2], id: path[4])))
                ?? patchParticipant(room: path[2], id: path[4], request)
        case ("DELETE", 5) where path[0] == "v1" && path[1] == "rooms" && path[3] == "participants":
            return authorize(request, .member(room: path[2], identity: identity(room: path[2], id: path[4])))
                ?? leave(room: path[2], id: path[4])
        default:
            return .error(404, "not found", detail: "\(request.method) \(request.path) is not part of this host's API")
        }
    }

    private func startEcho(_ request: HTTPRequest) -> HTTPResponse {
        guard request.contentType == "application/sdp" else {
            return .error(415, "wrong content type", detail: "send the SDP offer as application/sdp")
        }
        let accepted: AcceptedOffer
        do {
            accepted = try AcceptedOffer(offer: request.body, host: media, feedback: AcceptedOffer.feedback) { $0 == .audio || $0 == .video }
        } catch {
            return error.response
        }
        let media = self.media, echoes = self.echoes
        let outcome: Result<String, HTTPResponseError>
        do {
            outcome = try media.runOnLoop { () -> Result<String, HTTPResponseError> in
                guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
                guard echoes.value.count < Self.maxEchoSessions else {
                    return .failure(HTTPResponseError(503, "host full", "at most \(Self.maxEchoSessions) echo sessions at once"))
                }
                let transport: PeerTransport
                do { transport = try accepted.makeTransport(host: media, now: media.loop.clock.now()) } catch {
                    return .failure(HTTPResponseError(500, "transport", "\(error)"))
                }
                let id = UUID().uuidString.lowercased()
                let session = EchoSession(id: id, negotiated: accepted.negotiated, port: port) { echoes.value[$0] = nil }
                echoes.value[id] = session
                session.attach(transport, localUfrag: accepted.localICE.ufrag)
                return .success(id)
            }
        } catch {
            return .error(503, "host stopping", detail: "\(error)")
        }
        switch outcome {
        case .success(let id):
            return HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"), ("Location", "/v1/echo/\(id)")],
                                body: accepted.negotiated.answer.serializedBytes())
        case .failure(let error):
            return .error(error.status, error.error, detail: error.detail)
        }
    }

    private func stopEcho(_ id: String) -> HTTPResponse {
        let echoes = self.echoes
        let found = (try? media.runOnLoop { () -> Bool in
            guard let session = echoes.value[id] else { return false }
            session.end()
            return true
        }) ?? false
        return found ? HTTPResponse(status: 204) : .error(404, "not found", detail: "no echo session \(id)")
    }

    /// What a call needs its token to grant.
    enum Grant {
        /// Any token this host signed that has not expired (diagnostics).
        case anyValidToken
        /// A token for `room`; for `identity` too when one is named, unless it is an admin token.
        case member(room: String, identity: String?)
        /// An admin token (for `room` when one is named).
        case admin(room: String?)
    }

    /// Nil when the call may go ahead, else the contract's 401 (no or bad token) or 403 (a good
    /// token that does not grant this). Tokens come as `Authorization: Bearer …` or `?token=`.
    func authorize(_ request: HTTPRequest, _ grant: Grant) -> HTTPResponse? {
        guard let secret else { return nil }
        let bearer = request.headers["authorization"].flatMap { header -> String? in
            let parts = header.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
        }
        guard let text = bearer ?? request.query["token"] else {
            return .error(401, "token required", detail: "send a join token as Authorization: Bearer <token> (tessera token mints one)")
        }
        let token: JoinToken
        do { token = try JoinToken(verifying: text, secret: secret) } catch {
            return .error(401, "bad token", detail: error.description)
        }
        switch grant {
        case .anyValidToken:
            return nil
        case .member(let room, let identity):
            guard token.room == room else { return .error(403, "forbidden", detail: "the token is for room \(token.room)") }
            if token.admin { return nil }
            if let identity, identity != token.identity {
                return .error(403, "forbidden", detail: "the token is for identity \(token.identity)")
            }
            return nil
        case .admin(let room):
            guard token.admin else { return .error(403, "forbidden", detail: "this call needs an admin token") }
            if let room, token.room != room { return .error(403, "forbidden", detail: "the token is for room \(token.room)") }
            return nil
        }
    }

    /// The identity of a participant, for checking that a token names it; nil when there is no
    /// such participant (a token for the room then suffices, and the call answers 404).
    private func identity(room: String, id: String) -> String? {
        guard secret != nil else { return nil }
        let rooms = self.rooms
        return (try? media.runOnLoop { rooms.value.hosting(room: room, id: id)?.room.participant(id: id)?.identity }) ?? nil
    }

    /// Room names and identities: 1 to 64 of letters, digits, `-`, `_` and `.`.
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
        }
    }

    /// The contract's join: an SDP offer in, the answer out. What the participant sends is
    /// received on its transport; it is sent its mix on the audio m-line and the composite on the
    /// first video m-line.
    /// A join as a viewer (WHEP-style, receive only): the composite and the whole room's mix,
    /// no tile, no place in the participant list. The room must exist.
    private func joinAsViewer(room: String, _ request: HTTPRequest) -> HTTPResponse {
        join(room: room, request, viewer: true)
    }

    private func join(room: String, _ request: HTTPRequest, viewer: Bool = false) -> HTTPResponse {
        guard Self.isValidName(room) else { return .error(400, "bad room name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ .") }
        let given = viewer ? "viewer-" + UUID().uuidString.prefix(8).lowercased() : request.query["identity"]
        guard let identity = given, Self.isValidName(identity) else {
            return .error(400, "bad identity", detail: "give ?identity= with 1 to 64 of A-Z a-z 0-9 - _ .")
        }
        let name = viewer ? nil : request.query["name"].map { String($0.prefix(128)) }
        guard request.contentType == "application/sdp" else {
            return .error(415, "wrong content type", detail: "send the SDP offer as application/sdp")
        }
        // The first audio and the first video section carry the mix and the composite back.
        var sendingKinds: Set<String> = []
        let accepted: AcceptedOffer
        do {
            accepted = try AcceptedOffer(offer: request.body, host: media, feedback: AcceptedOffer.feedback) { kind in
                sendingKinds.insert(kind.name).inserted && (kind == .audio || kind == .video)
            }
        } catch {
            return error.response
        }
        let media = self.media, rooms = self.rooms
        let outcome: Result<String, HTTPResponseError>
        do {
            outcome = try media.runOnLoop { () -> Result<String, HTTPResponseError> in
                guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
                if viewer, rooms.value.rooms[room] == nil { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
                if let refusal = rooms.value.refusal(room: room, identity: identity) {
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
                let participant = rooms.value.open(room, port: port)
                    .join(identity: identity, name: name, negotiated: accepted.negotiated, transport: transport,
                          localUfrag: accepted.localICE.ufrag, isViewer: viewer)
                return .success(participant.id)
            }
        } catch {
            return .error(503, "host stopping", detail: "\(error)")
        }
        switch outcome {
        case .success(let id):
            let collection = viewer ? "viewers" : "participants"
            return HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"), ("Location", "/v1/rooms/\(room)/\(collection)/\(id)")],
                                body: accepted.negotiated.answer.serializedBytes())
        case .failure(let error):
            return .error(error.status, error.error, detail: error.detail)
        }
    }

    /// Trickled candidates are accepted and need nothing: the host is ICE-lite and learns the
    /// peer's address from its checks (RFC 8838 §4, RFC 8445 §2.5).
    private func patchParticipant(room: String, id: String, _ request: HTTPRequest) -> HTTPResponse {
        guard participantExists(room: room, id: id) else {
            return .error(404, "not found", detail: "no participant \(id) in room \(room)")
        }
        switch request.contentType {
        case "application/trickle-ice-sdpfrag":
            return HTTPResponse(status: 204)
        case "application/json":
            return applyHearAndMuted(room: room, id: id, request.body)
        default:
            return .error(415, "wrong content type", detail: "send application/trickle-ice-sdpfrag or application/json")
        }
    }

    /// The contract's JSON PATCH: `{"hear": {"bob": false}, "muted": {"audio": true}}`. `hear`
    /// changes only this participant's mix; `muted` takes its voice out of every mix (or its
    /// picture off every tile). Answers the participant as it now is.
    private func applyHearAndMuted(room: String, id: String, _ body: [UInt8]) -> HTTPResponse {
        struct Patch: Decodable {
            struct Muted: Decodable { var audio: Bool?; var video: Bool? }
            var hear: [String: Bool]?
            var muted: Muted?
        }
        let patch: Patch
        do {
            patch = try StrictJSON.decode(Patch.self, from: body, shape: .object(["hear": .dictionary(.boolean), "muted": .object(["audio": .boolean, "video": .boolean])]))
        } catch {
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

    private func participantExists(room: String, id: String) -> Bool {
        let rooms = self.rooms
        return (try? media.runOnLoop { rooms.value.hosting(room: room, id: id) != nil }) ?? false
    }

    private func leave(room: String, id: String) -> HTTPResponse {
        let rooms = self.rooms
        let found = (try? media.runOnLoop { () -> Bool in
            guard let hosted = rooms.value.hosting(room: room, id: id) else { return false }
            hosted.leave(id)
            return true
        }) ?? false
        return found ? HTTPResponse(status: 204) : .error(404, "not found", detail: "no participant \(id) in room \(room)")
    }

    /// `POST /v1/rooms/{room}/recordings` with an optional `{"file": "name.webm"}`: records the
    /// room's composite and whole mix into the configured folder.
    private func startRecording(room: String, _ request: HTTPRequest) -> HTTPResponse {
        struct Body: Decodable { var file: String? }
        var file: String?
        if !request.body.isEmpty {
            do { file = try StrictJSON.decode(Body.self, from: request.body, shape: .object(["file": .string])).file } catch {
                return .error(400, "bad JSON", detail: #"\#(error); expected {"file": "name.webm"} or no body"#)
            }
        }
        let id = UUID().uuidString.lowercased()
        let name = file ?? "\(room)-\(Int(Date().timeIntervalSince1970)).webm"
        // A plain file name in the folder: no paths, no hidden files.
        guard Self.isValidName(name), name.hasSuffix(".webm"), !name.hasPrefix(".") else {
            return .error(400, "bad file name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ . ending in .webm")
        }
        do { try FileManager.default.createDirectory(atPath: recordingsFolder, withIntermediateDirectories: true) } catch {
            return .error(500, "recordings folder", detail: "cannot make \(recordingsFolder): \(error.localizedDescription)")
        }
        let path = URL(fileURLWithPath: recordingsFolder).appendingPathComponent(name).path
        guard !FileManager.default.fileExists(atPath: path) else {
            return .error(409, "file exists", detail: "\(name) is already in the recordings folder")
        }
        let rooms = self.rooms, events = self.events
        let outcome = (try? media.runOnLoop { () -> Result<Void, HTTPResponseError> in
            guard let hosted = rooms.value.rooms[room] else { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
            do { try hosted.startRecording(id: id, file: name, path: path) } catch {
                return .failure(HTTPResponseError(500, "recording", "\(error)"))
            }
            events.publish(RoomEvent(.recordingStarted, room: room, reason: name))
            return .success(())
        }) ?? .failure(HTTPResponseError(503, "host stopping", "the host is shutting down"))
        switch outcome {
        case .success: return .json(201, ["id": id, "file": name])
        case .failure(let error): return .error(error.status, error.error, detail: error.detail)
        }
    }

    /// `DELETE /v1/rooms/{room}/recordings/{id}`: answered once the file is complete.
    private func stopRecording(room: String, id: String) -> HTTPResponse {
        let rooms = self.rooms, events = self.events
        let outcome = (try? media.runOnLoop { () -> Result<String, HTTPResponseError> in
            guard let hosted = rooms.value.rooms[room] else { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
            do {
                guard let file = try hosted.stopRecording(id: id) else {
                    return .failure(HTTPResponseError(404, "not found", "no recording \(id) in \(room)"))
                }
                events.publish(RoomEvent(.recordingStopped, room: room, reason: file))
                return .success(file)
            } catch {
                return .failure(HTTPResponseError(500, "recording", "\(error)"))
            }
        }) ?? .failure(HTTPResponseError(503, "host stopping", "the host is shutting down"))
        switch outcome {
        case .success(let file): return .json(200, ["id": id, "file": file])
        case .failure(let error): return .error(error.status, error.error, detail: error.detail)
        }
    }

    /// Finishes every recording (the host is stopping: SIGTERM must leave playable files).
    func finishRecordings() {
        let rooms = self.rooms
        _ = try? media.runOnLoop { for hosted in rooms.value.rooms.values { hosted.stopAllRecordings() } }
    }

    /// Server-sent events of one room, from now on (the room need not exist yet).
    private func subscribe(room: String) -> HTTPResponse {
        guard Self.isValidName(room) else { return .error(400, "bad room name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard let stream = events.subscribe(room: room) else {
            return .error(503, "too many listeners", detail: "at most \(RoomEventHub.maxSubscribersPerRoom) event streams per room")
        }
        stream.send(event: "hello", data: #"{"room":"\#(room)"}"#)
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        response.stream = stream
        return response
    }

    private func listRooms() -> HTTPResponse {
        struct Room: Encodable { let name: String; let participants: Int }
        let rooms = self.rooms
        let list = (try? media.runOnLoop { rooms.value.rooms.map { Room(name: $0.key, participants: $0.value.participants.count) } }) ?? []
        return .json(200, ["rooms": list.sorted { $0.name < $1.name }])
    }

    private func showRoom(_ name: String) -> HTTPResponse {
        struct Room: Encodable { let name: String; let participants: [ParticipantSummary]; let viewers: Int }
        let rooms = self.rooms
        let members = (try? media.runOnLoop { rooms.value.rooms[name]?.participants.map { ($0.summary, $0.isViewer) } }) ?? nil
        guard let members else { return .error(404, "not found", detail: "no room \(name)") }
        return .json(200, Room(name: name, participants: members.filter { !$0.1 }.map(\.0).sorted { $0.identity < $1.identity },
                               viewers: members.filter(\.1).count))
    }

    /// `GET /v1/rooms/{room}/layout`: the template in use, in the contract's format (for a
    /// preset, the positions it produces now).
    private func showLayout(room: String) -> HTTPResponse {
        let rooms = self.rooms
        let description = (try? media.runOnLoop { rooms.value.rooms[room]?.room.currentDescription }) ?? nil
        guard let description else { return .error(404, "not found", detail: "no room \(room)") }
        return .json(200, description)
    }

    /// `PUT /v1/rooms/{room}/layout`: `{"preset": "grid|speaker|sideBySide|pip"}` or a template
    /// (docs/api.md, "Templates") whose every position names a participant in the room. Answers the
    /// template now in use, and publishes `layoutChanged`.
    private func setLayout(room: String, _ request: HTTPRequest) -> HTTPResponse {
        guard request.contentType == "application/json" else {
            return .error(415, "wrong content type", detail: "send the layout as application/json")
        }
        let layout: LayoutRequest
        do { layout = try LayoutRequest(json: request.body) } catch { return .error(400, "bad layout", detail: error.description) }
        let rooms = self.rooms
        let outcome: Result<TemplateDescription, HTTPResponseError>
        do {
            outcome = try media.runOnLoop { () -> Result<TemplateDescription, HTTPResponseError> in
                guard let hosted = rooms.value.rooms[room] else {
                    return .failure(HTTPResponseError(404, "not found", "no room \(room)"))
                }
                do throws(Room.LayoutRefusal) { return .success(try hosted.setLayout(layout)) } catch {
                    return .failure(HTTPResponseError(400, "bad layout", "`\(error.field)`: \(error.reason)"))
                }
            }
        } catch {
            return .error(503, "host stopping", detail: "\(error)")
        }
        switch outcome {
        case .success(let description): return .json(200, description)
        case .failure(let error): return .error(error.status, error.error, detail: error.detail)
        }
    }

    /// Prometheus text format (version 0.0.4): what the media loop has counted.
    private func metrics() -> HTTPResponse {
        let media = self.media, rooms = self.rooms, echoes = self.echoes
        let lines = (try? media.runOnLoop { () -> [String] in
            guard let port = media.port else { return [] }
            let counters = port.counters
            let hosted = Array(rooms.value.rooms.values)
            let participants = hosted.reduce(0) { $0 + $1.participants.count }
            let encoders = hosted.reduce(0) { $0 + $1.room.mixer.encodersRunning }
            let videoStatistics = hosted.compactMap(\.encodeStatistics)
            let framesEncoded = videoStatistics.reduce(0) { $0 + $1.framesEncoded }
            let picturesDropped = videoStatistics.reduce(0) { $0 + $1.picturesDropped }
            let encodeSeconds = videoStatistics.reduce(0.0) { $0 + $1.totalEncodeTime.seconds }
            let lowReceivers = hosted.reduce(0) { $0 + $1.room.lowReceivers }
            let lowFramesEncoded = hosted.reduce(0) { $0 + $1.lowFramesEncoded }
            let everyone = hosted.flatMap(\.participants).map(\.inbound)
            let lost = everyone.reduce(Int64(0)) { $0 + $1.packetsLost }
            let nacks = everyone.reduce(0) { $0 + $1.nacksSent }
            let silentAudioSkipped = everyone.reduce(0) { $0 + $1.silentAudioPacketsSkipped }
            let cameras = everyone.compactMap(\.cameraStatistics)
            let cameraFramesDecoded = cameras.reduce(0) { $0 + $1.framesDecoded }
            let cameraFramesDropped = cameras.reduce(0) { $0 + $1.framesLost + $1.framesDroppedWaitingForKeyFrame + $1.decodeErrors }
            let decodeSeconds = everyone.reduce(0.0) { $0 + $1.decodeTime.seconds }
            let composed = hosted.reduce(0) { $0 + $1.room.framesComposed }
            let composeSeconds = hosted.reduce(0.0) { $0 + $1.room.composeTime.seconds }
            let keyFrameRequests = everyone.reduce(0) { $0 + $1.keyFrameRequestsSent }
            let audioResets = hosted.reduce(0) { $0 + $1.room.audioScheduleResets }
            let videoResets = hosted.reduce(0) { $0 + $1.room.videoScheduleResets }
            let cpuSeconds = ProcessCPU.seconds()
            return [
                "# HELP process_cpu_seconds_total User and system CPU time the host process has used.",
                "# TYPE process_cpu_seconds_total counter",
                "process_cpu_seconds_total \(cpuSeconds)",
                "# HELP tessera_packets_lost Packets participants sent that did not arrive (open rooms, RFC 3550 A.3).",
                "# TYPE tessera_packets_lost gauge",
                "tessera_packets_lost \(lost)",
                "# HELP tessera_feedback_sent RTCP feedback the host sent participants of the open rooms.",
                "# TYPE tessera_feedback_sent gauge",
                "tessera_feedback_sent{type=\"nack\"} \(nacks)",
                "tessera_feedback_sent{type=\"pli\"} \(keyFrameRequests)",
                "# HELP tessera_audio_silent_packets_skipped Audio packets of the open rooms' participants played as silence without decoding (their RFC 6464 level said silence).",
                "# TYPE tessera_audio_silent_packets_skipped gauge",
                "tessera_audio_silent_packets_skipped \(silentAudioSkipped)",
                "# HELP tessera_camera_frames Camera frames of the open rooms' participants: decoded, or dropped (lost, refused by the decoder, or waiting for a key frame).",
                "# TYPE tessera_camera_frames gauge",
                "tessera_camera_frames{result=\"decoded\"} \(cameraFramesDecoded)",
                "tessera_camera_frames{result=\"dropped\"} \(cameraFramesDropped)",
                "# HELP tessera_video_decode_seconds Time spent decoding the open rooms' cameras.",
                "# TYPE tessera_video_decode_seconds gauge",
                "tessera_video_decode_seconds \(decodeSeconds)",
                "# HELP tessera_video_frames_composed Composite pictures drawn in the open rooms.",
                "# TYPE tessera_video_frames_composed gauge",
                "tessera_video_frames_composed \(composed)",
                "# HELP tessera_video_compose_seconds Time spent drawing them (per frame: divide by frames composed).",
                "# TYPE tessera_video_compose_seconds gauge",
                "tessera_video_compose_seconds \(composeSeconds)",
                "# HELP tessera_tick_late Media ticks that came over their lateness bound and restarted their schedule.",
                "# TYPE tessera_tick_late gauge",
                "tessera_tick_late{media=\"audio\"} \(audioResets)",
                "tessera_tick_late{media=\"video\"} \(videoResets)",
                "# HELP tessera_rooms Rooms with at least one participant.",
                "# TYPE tessera_rooms gauge",
                "tessera_rooms \(rooms.value.rooms.count)",
                "# HELP tessera_participants Participants in all rooms.",
                "# TYPE tessera_participants gauge",
                "tessera_participants \(participants)",
                "# HELP tessera_audio_encoders Opus encoders running for rooms' mixes (one per distinct mix).",
                "# TYPE tessera_audio_encoders gauge",
                "tessera_audio_encoders \(encoders)",
                "# HELP tessera_video_frames_encoded Composite frames encoded by the open rooms' encoder threads.",
                "# TYPE tessera_video_frames_encoded gauge",
                "tessera_video_frames_encoded \(framesEncoded)",
                "# HELP tessera_video_pictures_dropped Composite pictures the open rooms' encoder threads had no time for.",
                "# TYPE tessera_video_pictures_dropped gauge",
                "tessera_video_pictures_dropped \(picturesDropped)",
                "# HELP tessera_video_encode_seconds Time the open rooms' encoder threads spent encoding.",
                "# TYPE tessera_video_encode_seconds gauge",
                "tessera_video_encode_seconds \(encodeSeconds)",
                "# HELP tessera_video_low_receivers Receivers sent the lower composite encoding (their bandwidth estimate is low).",
                "# TYPE tessera_video_low_receivers gauge",
                "tessera_video_low_receivers \(lowReceivers)",
                "# HELP tessera_video_low_frames_encoded Composite frames the open rooms' lower encodings encoded.",
                "# TYPE tessera_video_low_frames_encoded gauge",
                "tessera_video_low_frames_encoded \(lowFramesEncoded)",
                "# HELP tessera_echo_sessions Sessions of POST /v1/echo.",
                "# TYPE tessera_echo_sessions gauge",
                "tessera_echo_sessions \(echoes.value.count)",
                "# HELP tessera_peers Transports on the media port.",
                "# TYPE tessera_peers gauge",
                "tessera_peers \(port.peerCount)",
                "# HELP tessera_datagrams_total UDP datagrams on the media port.",
                "# TYPE tessera_datagrams_total counter",
                "tessera_datagrams_total{direction=\"in\"} \(counters.datagramsIn)",
                "tessera_datagrams_total{direction=\"out\"} \(counters.datagramsOut)",
                "# HELP tessera_bytes_total UDP payload bytes on the media port.",
                "# TYPE tessera_bytes_total counter",
                "tessera_bytes_total{direction=\"in\"} \(counters.bytesIn)",
                "tessera_bytes_total{direction=\"out\"} \(counters.bytesOut)",
                "# HELP tessera_datagrams_unroutable_total Datagrams from unknown addresses that named no peer.",
                "# TYPE tessera_datagrams_unroutable_total counter",
                "tessera_datagrams_unroutable_total \(counters.unroutable)",
                "# HELP tessera_start_failures_total Codecs, renderers and recorders that failed to start (each kind logged once with its reason).",
                "# TYPE tessera_start_failures_total counter",
            ] + ["opus-decoder", "opus-encoder", "vp8-decoder", "vp8-encoder", "text-renderer", "recorder"].map { component in
                "tessera_start_failures_total{component=\"\(component)\"} \(StartFailures.shared.snapshot[component] ?? 0)"
            }
        }) ?? []
        return .text(200, lines.joined(separator: "\n") + "\n", contentType: "text/plain; version=0.0.4")
    }

    private func corsPreflight() -> HTTPResponse {
        HTTPResponse(status: 204, headers: [
            ("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "Content-Type, Authorization, If-Match"),
            ("Access-Control-Max-Age", "600"),
        ])
    }
}

/// An error answer decided on the media loop.
struct HTTPResponseError: Error, Sendable {
    let status: Int
    let error: String
    let detail: String
    init(_ status: Int, _ error: String, _ detail: String) {
        self.status = status
        self.error = error
        self.detail = detail
    }
}

/// A running `tessera serve`: the HTTP API and the media port.
public final class ConferenceHost: Sendable {
    public let config: HostConfig
    public let http: HTTPServer
    public let media: MediaHost
    private let api: HostAPI

    public init(config: HostConfig) throws {
        self.config = config
        media = try MediaHost(listen: TransportAddress(parsing: config.media.listen), announce: config.media.announce)
        if !config.testing.faults.isEmpty {
            FileHandle.standardError.write(Data("tessera: WARNING: deliberate faults for tests are on: \(config.testing.faults.map(\.rawValue).sorted())\n".utf8))
        }
        let api = HostAPI(media: media, limits: config.limits, secret: config.auth.secret, video: config.video,
                          recordingsFolder: config.recordings.folder, faults: config.testing.faults)
        self.api = api
        let listen = try TransportAddress(parsing: config.http.listen)
        do {
            http = try HTTPServer(listen: listen, maxBodyBytes: config.http.maxBodyBytes,
                                  connectionLimit: config.http.connectionLimit) { api.handle($0) }
        } catch {
            media.stop()
            throw error
        }
    }

    /// The line `tessera serve` prints once it accepts requests.
    public var readyLine: String { "tessera: listening on http://\(http.address)" }

    /// Ends the event streams, stops taking requests, then stops the media loop.
    public func stop() {
        api.events.closeAll()
        http.stop()
        api.finishRecordings()
        media.stop()
    }
}
