import Foundation
import SDP
import Transport

/// Routes the HTTP API of docs/api.md. Runs on libmicrohttpd's thread; anything that touches
/// media hops to the media loop with `MediaHost.runOnLoop`.
public final class HostAPI: Sendable {
    let media: MediaHost
    /// Echo sessions by id; touched only on the media loop thread.
    private let echoes: LoopConfined<[String: EchoSession]>
    static let maxEchoSessions = 64

    init(media: MediaHost) {
        self.media = media
        echoes = LoopConfined([:])
    }

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        var response = route(request)
        // Pages on other origins may call the API (API.md); Location must be readable to them.
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
        case ("POST", 2) where path == ["v1", "echo"]:
            return startEcho(request)
        case ("DELETE", 3) where path[..<2] == ["v1", "echo"]:
            return stopEcho(path[2])
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

/// State that belongs to the media loop thread, carried through `Sendable` closures that run
/// there. Only code running on that loop may touch `value`.
final class LoopConfined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A running `tessera serve`: the HTTP API and the media port.
public final class ConferenceHost: Sendable {
    public let config: HostConfig
    public let http: HTTPServer
    public let media: MediaHost

    public init(config: HostConfig) throws {
        self.config = config
        media = try MediaHost(listen: TransportAddress(parsing: config.media.listen), announce: config.media.announce)
        let api = HostAPI(media: media)
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

    /// Stops taking requests, then stops the media loop.
    public func stop() {
        http.stop()
        media.stop()
    }
}
