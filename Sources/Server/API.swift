import Foundation

/// Routes the HTTP API of docs/api.md. What is not built yet answers 404 with the contract's
/// JSON error, so clients see a clear reason rather than a hang.
public struct HostAPI: Sendable {
    public init() {}

    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/healthz"), ("HEAD", "/healthz"):
            return .text(200, "ok\n")
        case ("OPTIONS", _):
            return corsPreflight()
        default:
            return .error(404, "not found", detail: "\(request.method) \(request.path) is not part of this host's API")
        }
    }

    private func corsPreflight() -> HTTPResponse {
        HTTPResponse(status: 204, headers: [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "Content-Type, Authorization, If-Match"),
            ("Access-Control-Expose-Headers", "Location, ETag"),
            ("Access-Control-Max-Age", "600"),
        ])
    }
}

/// A running `tessera serve`: the HTTP API, and later the media port and rooms.
public final class ConferenceHost: Sendable {
    public let config: HostConfig
    public let http: HTTPServer

    public init(config: HostConfig) throws {
        self.config = config
        let api = HostAPI()
        let listen = try SocketAddress(parsing: config.http.listen)
        http = try HTTPServer(listen: listen, maxBodyBytes: config.http.maxBodyBytes,
                              connectionLimit: config.http.connectionLimit) { api.handle($0) }
    }

    /// The line `tessera serve` prints once it accepts requests.
    public var readyLine: String { "tessera: listening on http://\(http.address)" }

    public func stop() { http.stop() }
}
