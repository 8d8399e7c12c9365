import Cluster
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
    let echoes: LoopConfined<[String: EchoSession]>
    let rooms: LoopConfined<RoomDirectory>
    let events: RoomEventHub
    let log: HostLog
    static let maxEchoSessions = 64
    /// The web page's files, read once (docs/api.md: `GET /` is the page).
    let page: [String: (type: String, bytes: [UInt8])]

    /// The HS256 secret; nil means auth is off (allowed only on loopback, `HostConfig.validate`).
    let secret: String?

    /// Where recordings go.
    let recordingsFolder: String

    /// In a cluster (docs/cluster.md): who owns each room, asked of Redis off the media loop.
    let cluster: ClusterCoordinator?
    /// Set by SIGUSR1 or `POST /v1/drain`: no new room opens here; the open ones go on.
    let drain = DrainState()
    /// On an edge host (`cluster.edge`): the relays of rooms other hosts own, by room; nil
    /// elsewhere. Touched only on the media loop.
    let edges: LoopConfined<EdgeRelays>?

    init(media: MediaHost, limits: HostConfig.Limits, secret: String?, video: HostConfig.Video = HostConfig.Video(),
         recordingsFolder: String = "recordings", faults: Set<HostConfig.Testing.Fault> = [], cluster: ClusterCoordinator? = nil, edge: Bool = false, log: HostLog) {
        self.media = media
        self.cluster = cluster
        edges = cluster != nil && edge ? LoopConfined(EdgeRelays(), on: media.loop) : nil
        self.log = log
        let events = RoomEventHub(log: log)
        self.events = events
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
        rooms = LoopConfined(RoomDirectory(limits: .init(maxRooms: limits.maxRooms, maxParticipantsPerRoom: limits.maxParticipantsPerRoom,
                                                         maxVoices: limits.maxVoices,
                                                         decodeWorkers: limits.decodeWorkers ?? VideoDecodePool.defaultSize),
                                           video: video, faults: faults, events: events, log: log), on: media.loop)
        if let cluster {
            // Before the loop touches the directory: set here, then read only on the loop.
            let rooms = self.rooms, loop = media.loop, edges = self.edges
            loop.execute {
                rooms.value.cluster = cluster
                rooms.value.edgeViewerCount = { edges?.value.viewerCount ?? 0 }
                rooms.value.publishEverySecond(on: loop)
            }
        }
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        var response = route(request)
        // Pages on other origins may call the API (docs/api.md); Location must be readable to them.
        response.headers.append(("Access-Control-Allow-Origin", "*"))
        response.headers.append(("Access-Control-Expose-Headers", "Location, ETag"))
        return response
    }

    /// Everything but the page, the health check and CORS preflights: method, path pattern
    /// (`{room}` and `{id}` stand for one segment each), what the token must grant, and the
    /// handler. The first route whose method and pattern match serves the request.
    static let routes: [Route] = [
        Route("GET", "/metrics", grant: { _, _ in .admin(room: nil) }) { api, _, _ in api.metrics() },
        Route("POST", "/v1/echo", grant: { _, _ in .anyValidToken }) { api, request, _ in api.startEcho(request) },
        Route("DELETE", "/v1/echo/{id}", grant: { _, _ in .anyValidToken }) { api, _, path in api.stopEcho(path.id) },
        Route("GET", "/v1/rooms", grant: { _, _ in .admin(room: nil) }) { api, _, _ in api.listRooms() },
        Route("POST", "/v1/drain", grant: { _, _ in .admin(room: nil) }) { api, _, _ in api.startDraining() },
        Route("GET", "/v1/rooms/{room}", grant: { path, _ in .member(room: path.room, identity: nil) }) { api, _, path in
            api.showRoom(path.room)
        },
        Route("POST", "/v1/rooms/{room}/viewers", grant: { path, _ in .member(room: path.room, identity: nil) }) { api, request, path in
            api.joinAsViewer(room: path.room, request)
        },
        Route("DELETE", "/v1/rooms/{room}/viewers/{id}", grant: { path, _ in .member(room: path.room, identity: nil) }) { api, _, path in
            api.leave(room: path.room, id: path.id)
        },
        Route("POST", "/v1/rooms/{room}/recordings", grant: { path, _ in .admin(room: path.room) }) { api, request, path in
            api.startRecording(room: path.room, request)
        },
        Route("DELETE", "/v1/rooms/{room}/recordings/{id}", grant: { path, _ in .admin(room: path.room) }) { api, _, path in
            api.stopRecording(room: path.room, id: path.id)
        },
        Route("GET", "/v1/rooms/{room}/recordings", grant: { path, _ in .admin(room: path.room) }) { api, _, path in
            api.listRecordings(room: path.room)
        },
        Route("GET", "/v1/recordings/{id}", grant: { _, _ in .admin(room: nil) }) { api, request, path in
            api.serveRecording(file: path.id, request)
        },
        Route("GET", "/v1/rooms/{room}/layout", grant: { path, _ in .admin(room: path.room) }) { api, _, path in api.showLayout(room: path.room) },
        Route("PUT", "/v1/rooms/{room}/layout", grant: { path, _ in .admin(room: path.room) }) { api, request, path in
            api.setLayout(room: path.room, request)
        },
        Route("GET", "/v1/rooms/{room}/events", grant: { path, _ in .member(room: path.room, identity: nil) }) { api, _, path in
            api.subscribe(room: path.room)
        },
        Route("POST", "/v1/rooms/{room}/participants", grant: { path, request in
            .member(room: path.room, identity: request.query["identity"] ?? "")
        }) { api, request, path in api.join(room: path.room, request) },
        Route("PATCH", "/v1/rooms/{room}/participants/{id}", grant: { path, _ in .participant(room: path.room, id: path.id) }) {
            api, request, path in api.patchParticipant(room: path.room, id: path.id, request)
        },
        Route("DELETE", "/v1/rooms/{room}/participants/{id}", grant: { path, _ in .participant(room: path.room, id: path.id) }) {
            api, _, path in api.leave(room: path.room, id: path.id)
        },
        Route("PUT", "/v1/rooms/{room}/participants/{id}/placeholder", grant: { path, _ in .participant(room: path.room, id: path.id) }) {
            api, request, path in api.setPlaceholder(room: path.room, id: path.id, request)
        },
        Route("DELETE", "/v1/rooms/{room}/participants/{id}/placeholder", grant: { path, _ in .participant(room: path.room, id: path.id) }) {
            api, request, path in api.setPlaceholder(room: path.room, id: path.id, request, remove: true)
        },
        Route("POST", "/v1/rooms/{room}/participants/{id}/subscriptions", grant: { path, _ in .participant(room: path.room, id: path.id) }) {
            api, request, path in api.addSubscription(room: path.room, id: path.id, request)
        },
        Route("DELETE", "/v1/rooms/{room}/participants/{id}/subscriptions/{publisher}/{source}", grant: { path, _ in
            .participant(room: path.room, id: path.id)
        }) { api, request, path in api.removeSubscription(room: path.room, id: path.id, publisher: path.publisher, source: path.source, request) },
    ]

    private func route(_ request: HTTPRequest) -> HTTPResponse {
        if request.method == "OPTIONS" { return corsPreflight() }
        if (request.method == "GET" || request.method == "HEAD"), request.path == "/healthz" { return .text(200, "ok\n") }
        if request.method == "GET", let file = page[request.path] {
            return HTTPResponse(status: 200, headers: [("Content-Type", file.type), ("Cache-Control", "no-cache")], body: file.bytes)
        }
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for route in Self.routes where route.method == request.method {
            guard let path = route.match(segments) else { continue }
            let grant = route.grant(path, request)
            if let refused = authorize(request, grant) { return refused }
            if edges != nil, route.method == "DELETE", route.pattern.count == 5, route.pattern[3] == "viewers",
               let answer = leaveEdgeViewer(room: path.room, id: path.id) {
                return answer
            }
            if let cluster, !path.room.isEmpty,
               let elsewhere = clusterAnswer(cluster, request, room: path.room, places: route.method == "POST" && route.pattern.last == "participants",
                                             edgeViewer: edges != nil && route.method == "POST" && route.pattern.last == "viewers"
                                                 && request.query["participant"] == nil) {
                return elsewhere
            }
            return route.handle(self, request, path)
        }
        return .error(404, "not found", detail: "\(request.method) \(request.path) is not part of this host's API")
    }

    /// Runs `body` on the media loop for an HTTP handler: its result, or the 503 of a host that
    /// is stopping (or a loop that did not answer).
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> Result<T, HTTPResponseError>) -> Result<T, HTTPResponseError> {
        do { return try media.runOnLoop(body) } catch {
            return .failure(HTTPResponseError(503, "host stopping", "\(error)"))
        }
    }

    /// What a call needs its token to grant.
    enum Grant {
        /// Any token this host signed that has not expired (diagnostics).
        case anyValidToken
        /// A token for `room`; for `identity` too when one is named, unless it is an admin token.
        case member(room: String, identity: String?)
        /// An admin token (for `room` when one is named).
        case admin(room: String?)
        /// A token for the participant `id` of `room` (its identity), or the room's admin token.
        case participant(room: String, id: String)
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
        case .participant(let room, let id):
            return authorize(request, .member(room: room, identity: identity(room: room, id: id)))
        case .admin(let room):
            guard token.admin else { return .error(403, "forbidden", detail: "this call needs an admin token") }
            if let room, token.room != room { return .error(403, "forbidden", detail: "the token is for room \(token.room)") }
            return nil
        }
    }

    /// The identity of a participant, for checking that a token names it; nil when there is no
    /// such participant (a token for the room then suffices, and the call answers 404).
    func identity(room: String, id: String) -> String? {
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


    func corsPreflight() -> HTTPResponse {
        HTTPResponse(status: 204, headers: [
            ("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "Content-Type, Authorization, If-Match"),
            ("Access-Control-Max-Age", "600"),
        ])
    }
}

extension Result where Failure == HTTPResponseError {
    /// The HTTP answer: `success`'s for a value, the error's JSON for a failure.
    func response(_ success: (Success) -> HTTPResponse) -> HTTPResponse {
        switch self {
        case .success(let value): success(value)
        case .failure(let error): .error(error.status, error.error, detail: error.detail)
        }
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
