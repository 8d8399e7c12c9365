import Foundation
import Wire
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The host's HTTP API from a client (the load generator; an edge host pulling a room from its
/// owner): requests go out on URLSession's threads (libcurl underneath), and each answer is
/// handed to `deliver`, which the caller points at its event loop.
public final class HostHTTPClient: Sendable {
    public struct Reply: Sendable {
        public let status: Int
        /// The URL that answered (after any redirect).
        public var url: String
        public let headers: [String: String]
        public let body: [UInt8]
        public init(status: Int, url: String = "", headers: [String: String], body: [UInt8]) {
            self.status = status
            self.url = url
            self.headers = headers
            self.body = body
        }
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public enum Failure: Error, CustomStringConvertible {
        case transport(String)
        public var description: String {
            switch self {
            case .transport(let why): why
            }
        }
    }

    /// The token a request carries (`Authorization: Bearer`), by method and path; nil: none.
    public typealias Credentials = @Sendable (_ method: String, _ path: String) -> String?

    public let base: String
    private let session: URLSession
    private let credentials: Credentials?

    public init(base: String, credentials: Credentials? = nil) {
        self.base = base
        self.credentials = credentials
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.httpMaximumConnectionsPerHost = 16
        // Redirects are followed here, not by URLSession: on Linux it re-sends a 307's POST
        // without its body, and the cluster (docs/cluster.md) redirects joins.
        session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
    }

    /// How many 307/308 redirects one call follows (a cluster needs one).
    public static let maximumRedirects = 3

    public func send(_ method: String, _ path: String, contentType: String? = nil, body: [UInt8]? = nil, redirects: Int = 0,
              completion: @escaping @Sendable (Result<Reply, Failure>) -> Void) {
        // A path, or a URL in full: in a cluster a join's session is named on its host
        // (docs/cluster.md), which may not be `base`. URLSession follows 307s itself.
        let target = path.hasPrefix("http://") || path.hasPrefix("https://") ? path : base + path
        guard let url = URL(string: target) else {
            completion(.failure(.transport("cannot make a URL of \(target)")))
            return
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let token = credentials?(method, path) { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body { request.httpBody = Data(body) }
        session.dataTask(with: request) { data, response, error in
            if let error {
                completion(.failure(.transport("\(method) \(path): \(error.localizedDescription)")))
                return
            }
            guard let response = response as? HTTPURLResponse else {
                completion(.failure(.transport("\(method) \(path): no HTTP response")))
                return
            }
            var headers: [String: String] = [:]
            for (name, value) in response.allHeaderFields {
                if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
            }
            // A 307 or 308 is repeated at its Location with the same method, body and token.
            if [307, 308].contains(response.statusCode), let location = headers["location"], redirects < Self.maximumRedirects,
               location.hasPrefix("http://") || location.hasPrefix("https://") || location.hasPrefix("/") {
                self.send(method, location, contentType: contentType, body: body, redirects: redirects + 1, completion: completion)
                return
            }
            completion(.success(Reply(status: response.statusCode, url: target, headers: headers, body: data.map { Array($0) } ?? [])))
        }.resume()
    }

    /// Sends and waits at most `timeout` for the answer (for the run's start and end, off the loop).
    public func sendAndWait(_ method: String, _ path: String, timeout: Duration = .seconds(10)) -> Result<Reply, Failure> {
        let box = ResultBox()
        let done = DispatchSemaphore(value: 0)
        send(method, path) { result in
            box.set(result)
            done.signal()
        }
        let seconds = timeout.seconds
        guard done.wait(timeout: .now() + seconds) == .success, let result = box.get() else {
            return .failure(.transport("\(method) \(path): no answer within \(timeout)"))
        }
        return result
    }

    public func cancelAll() { session.invalidateAndCancel() }

    /// Lets the requests under way finish, then lets the session go (a client made for one
    /// peer's life, such as an edge's pull, must not keep its session after).
    public func finishAndInvalidate() { session.finishTasksAndInvalidate() }

    /// `http://HOST:PORT` of an absolute URL; nil for a path.
    public static func origin(of url: String) -> String? {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme, let host = parts.host else { return nil }
        let shown = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shown)" + (parts.port.map { ":\($0)" } ?? "")
    }
}

/// Refuses URLSession's own redirects: the 3xx answer itself is delivered.
private final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// One result handed from URLSession's thread to a waiting one.
private final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>?
    func set(_ value: Result<HostHTTPClient.Reply, HostHTTPClient.Failure>) { lock.withLock { result = value } }
    func get() -> Result<HostHTTPClient.Reply, HostHTTPClient.Failure>? { lock.withLock { result } }
}
