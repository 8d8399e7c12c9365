import Wire
import Sockets
import Foundation
import Transport
private import CMicroHTTPD

/// One HTTP request as the API sees it: the whole body is read before the handler runs.
public struct HTTPRequest: Sendable {
    public var method: String
    public var path: String
    public var query: [String: String]
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The media type of the body, without parameters, in lower case.
    public var contentType: String? {
        headers["content-type"].map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() }
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// When set, the body is this open event stream instead of `body`.
    public var stream: HTTPEventStream?
    /// When set, the body is `length` bytes of this open file from `offset` (sent by
    /// libmicrohttpd with sendfile where it can; it closes the descriptor).
    public var file: (descriptor: Int32, offset: UInt64, length: UInt64)?

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(text.utf8))
    }

    /// The contract's error shape: `{"error": "...", "detail": "..."}`.
    public static func error(_ status: Int, _ error: String, detail: String) -> HTTPResponse {
        json(status, ["error": error, "detail": detail])
    }

    /// A JSON body with sorted keys.
    public static func json<Body: Encodable>(_ status: Int, _ body: Body) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(body)) ?? Data(#"{"error": "internal", "detail": "could not encode the answer"}"#.utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: Array(data))
    }
}

/// An HTTP/1.1 server on libmicrohttpd's own epoll thread. Bodies larger than `maxBodyBytes` are
/// drained and answered 413 without reaching the handler.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    public enum StartError: Error, CustomStringConvertible {
        case cannotListen(TransportAddress)
        case cannotStartTLS(TransportAddress)
        public var description: String {
            switch self {
            case .cannotListen(let a): "cannot listen on http://\(a) (in use, or not an address of this machine)"
            case .cannotStartTLS(let a): "cannot listen on https://\(a) (in use, not an address of this machine, or the TLS library refused the certificate and key)"
            }
        }
    }

    /// A certificate and its key, PEM, for HTTPS.
    public struct TLSIdentity: Sendable {
        public let certificatePEM: String
        public let keyPEM: String
        public init(certificatePEM: String, keyPEM: String) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
        }
    }

    /// Where the server listens, with the port it actually bound (after asking for port 0).
    public private(set) var address: TransportAddress
    // Immutable after init; read from libmicrohttpd's thread.
    fileprivate let handler: Handler
    fileprivate let maxBodyBytes: Int
    private var daemon: OpaquePointer?
    private let stopLock = NSLock()
    /// The PEM strings libmicrohttpd reads while it runs (it keeps the pointers, not copies).
    private let tlsStrings: (certificate: UnsafeMutablePointer<CChar>, key: UnsafeMutablePointer<CChar>)?
    /// `https` with a TLS identity, else `http`.
    public let scheme: String

    /// A server on `listen`; with `tls` it speaks HTTPS only. It holds at most `connectionLimit`
    /// connections, `connectionsPerAddress` of them from one address (more are closed as they
    /// come), each on a thread of its own with a 1 MiB stack, closed after 30 s without a byte
    /// either way (an event stream writes a comment every 15 s).
    public init(listen: TransportAddress, maxBodyBytes: Int, connectionLimit: Int = 256, connectionsPerAddress: Int = 32,
                tls: TLSIdentity? = nil, handler: @escaping Handler) throws(StartError) {
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
        address = listen
        scheme = tls == nil ? "http" : "https"
        tlsStrings = tls.flatMap { identity in
            guard let certificate = strdup(identity.certificatePEM) else { return nil }
            guard let key = strdup(identity.keyPEM) else {
                free(certificate)
                return nil
            }
            return (certificate, key)
        }
        // libmicrohttpd holds an unretained pointer to self; deinit stops the daemon first.
        let me = Unmanaged.passUnretained(self).toOpaque()
        let strings = tlsStrings
        let started = listen.withSockaddr { sa, _ in
            tessera_mhd_start(sa, accessHandler, me, requestCompleted, nil, UInt32(connectionLimit), UInt32(connectionsPerAddress), 30,
                              strings?.certificate, strings?.key)
        }
        // On a throw, deinit (all properties are set) frees the PEM strings.
        guard let started else { throw tls == nil ? .cannotListen(listen) : .cannotStartTLS(listen) }
        daemon = started
        address.port = tessera_mhd_bound_port(started)
    }

    /// Stops listening and waits for libmicrohttpd's thread to end. Safe to call twice.
    public func stop() {
        stopLock.lock()
        defer { stopLock.unlock() }
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }

    deinit {
        stop()
        if let tlsStrings {
            free(tlsStrings.certificate)
            free(tlsStrings.key)
        }
    }
}

private final class Box<T> { var value: T; init(_ value: T) { self.value = value } }

/// Per-request state kept between libmicrohttpd's calls while the body arrives.
private final class PendingRequest {
    var body: [UInt8] = []
    var tooLarge = false
}

private func connectionValues(_ connection: OpaquePointer?, _ kind: MHD_ValueKind, lowercaseKeys: Bool) -> [String: String] {
    let box = Box((values: [String: String](), lowercaseKeys: lowercaseKeys))
    let cls = Unmanaged.passUnretained(box).toOpaque()
    MHD_get_connection_values(connection, kind, { cls, _, key, value in
        guard let cls, let key else { return MHD_Result.YES }
        let box = Unmanaged<Box<(values: [String: String], lowercaseKeys: Bool)>>.fromOpaque(cls).takeUnretainedValue()
        let name = String(cString: key)
        box.value.values[box.value.lowercaseKeys ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
        return MHD_Result.YES
    }, cls)
    return box.value.values
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, uploadData, uploadDataSize, requestContext in
    guard let cls, let requestContext, let uploadDataSize else { return MHD_Result.NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()

    // First call: only the headers are known. Keep state for the body that follows.
    guard let state = requestContext.pointee else {
        requestContext.pointee = Unmanaged.passRetained(PendingRequest()).toOpaque()
        return MHD_Result.YES
    }
    let pending = Unmanaged<PendingRequest>.fromOpaque(state).takeUnretainedValue()
    if uploadDataSize.pointee > 0 {
        let count = uploadDataSize.pointee
        if pending.body.count + count > server.maxBodyBytes {
            pending.tooLarge = true
            pending.body = []
        } else if let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
            }
        }
        uploadDataSize.pointee = 0
        return MHD_Result.YES
    }

    // Last call: the whole body is here.
    let response: HTTPResponse
    if pending.tooLarge {
        response = .error(413, "body too large", detail: "the limit is \(server.maxBodyBytes) bytes")
    } else {
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET",
            path: url.map { String(cString: $0) } ?? "/",
            query: connectionValues(connection, MHD_ValueKind.GET_ARGUMENT_KIND, lowercaseKeys: false),
            headers: connectionValues(connection, MHD_ValueKind.HEADER_KIND, lowercaseKeys: true),
            body: pending.body)
        response = server.handler(request)
    }
    return queue(response, on: connection)
}

private let requestCompleted: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
    guard let requestContext, let state = requestContext.pointee else { return }
    Unmanaged<PendingRequest>.fromOpaque(state).release()
    requestContext.pointee = nil
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer?) -> MHD_Result {
    let mhdResponse: OpaquePointer?
    if let stream = response.stream {
        // The response holds the stream until libmicrohttpd frees it (the free callback).
        mhdResponse = MHD_create_response_from_callback(tessera_mhd_size_unknown(), 4096, { cls, _, buffer, max in
            guard let cls, let buffer else { return tessera_mhd_end_of_stream() }
            let stream = Unmanaged<HTTPEventStream>.fromOpaque(cls).takeUnretainedValue()
            guard let chunk = stream.read(max: max) else { return tessera_mhd_end_of_stream() }
            return chunk.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress else { return 0 }
                UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: bytes.count)
                return bytes.count
            }
        }, Unmanaged.passRetained(stream).toOpaque(), { cls in
            guard let cls else { return }
            Unmanaged<HTTPEventStream>.fromOpaque(cls).release()
        })
    } else if let file = response.file {
        mhdResponse = MHD_create_response_from_fd_at_offset64(file.length, file.descriptor, file.offset)
        if mhdResponse == nil { close(file.descriptor) }
    } else {
        mhdResponse = response.body.withUnsafeBytes { tessera_mhd_response_copying($0.count, $0.baseAddress) }
    }
    guard let mhdResponse else { return MHD_Result.NO }
    defer { MHD_destroy_response(mhdResponse) }
    for header in response.headers {
        _ = MHD_add_response_header(mhdResponse, header.name, header.value)
    }
    return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
}

/// The version of libmicrohttpd found at run time.
public enum ServerLibraries {
    public static var versions: [(name: String, version: String)] {
        [("libmicrohttpd", MHD_get_version().map { String(cString: $0) } ?? "unknown")]
    }
}
