import Cluster
import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// `POST` and `DELETE …/recordings`.
extension HostAPI {
    /// `POST /v1/rooms/{room}/recordings` with an optional `{"file": "name.webm"}`: records the
    /// room's composite and whole mix into the configured folder.
    func startRecording(room: String, _ request: HTTPRequest) -> HTTPResponse {
        var file: String?
        if !request.body.isEmpty {
            do { file = try RecordingRequest(json: request.body).file } catch {
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
        let rooms = self.rooms, events = self.events, cluster = self.cluster
        return onLoop { () -> Result<Date, HTTPResponseError> in
            guard let hosted = rooms.value.rooms[room] else { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
            let start: Date
            do { start = try hosted.startRecording(id: id, file: name, path: path) } catch {
                return .failure(HTTPResponseError(500, "recording", "\(error)"))
            }
            events.publish(RoomEvent(.recordingStarted, room: room, reason: name))
            // In a cluster, a GET of the file at another host is sent here (a lock, no Redis).
            cluster?.holdRecordings([name])
            return .success(start)
        }
        .response { start in .json(201, ["id": id, "file": name, "start": Self.timestamp(start)]) }
    }

    /// An instant as the API writes it: ISO 8601 in UTC, to the millisecond.
    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `DELETE /v1/rooms/{room}/recordings/{id}`: answered once the file is complete.
    func stopRecording(room: String, id: String) -> HTTPResponse {
        let rooms = self.rooms, events = self.events
        return onLoop { () -> Result<String, HTTPResponseError> in
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
        }
        .response { file in .json(200, ["id": id, "file": file]) }
    }

    /// `GET /v1/rooms/{room}/recordings`: the room's recordings this host made (running,
    /// finished, failed), also after the room closed.
    func listRecordings(room: String) -> HTTPResponse {
        let rooms = self.rooms
        let listed = (try? media.runOnLoop { rooms.value.recordings.list(room: room, now: Date()) }) ?? []
        return .json(200, ["recordings": listed])
    }

    /// `GET /v1/recordings/{file}`: a finished recording from the recordings folder, whole (200)
    /// or the byte range asked (206, RFC 9110 §14), for a player that seeks.
    func serveRecording(file: String, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.isValidName(file), file.hasSuffix(".webm"), !file.hasPrefix(".") else {
            return .error(404, "not found", detail: "no recording \(file.prefix(64))")
        }
        let rooms = self.rooms
        if (try? media.runOnLoop { rooms.value.recordings.isRecording(file: file) }) == true {
            return .error(409, "still recording", detail: "\(file) is being recorded: stop it first")
        }
        let path = URL(fileURLWithPath: recordingsFolder).appendingPathComponent(file).path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            if descriptor >= 0 { close(descriptor) }
            if let cluster, let elsewhere = recordingElsewhere(cluster, file: file, request) { return elsewhere }
            return .error(404, "not found", detail: "no recording \(file)")
        }
        let size = UInt64(status.st_size)
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "video/webm"), ("Accept-Ranges", "bytes")])
        switch Self.byteRange(request.headers["range"], size: size) {
        case .whole:
            response.file = (descriptor, 0, size)
        case .part(let first, let last):
            response.status = 206
            response.headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
            response.file = (descriptor, first, last - first + 1)
        case .unsatisfiable:
            close(descriptor)
            return HTTPResponse(status: 416, headers: [("Content-Range", "bytes */\(size)"), ("Content-Type", "application/json")],
                                body: Array(#"{"detail":"the range is outside the file","error":"range not satisfiable"}"#.utf8))
        }
        return response
    }

    /// A recording this host does not have, in a cluster: 307 to the live host that holds it
    /// (same path and query), 503 when Redis cannot be asked; nil when no live host has it.
    func recordingElsewhere(_ cluster: ClusterCoordinator, file: String, _ request: HTTPRequest) -> HTTPResponse? {
        switch cluster.locateRecording(file) {
        case .elsewhere(let node, let url):
            return HTTPResponse.json(307, ["error": "elsewhere", "detail": "recording \(file) is on host \(node): repeat the request at Location", "node": node])
                .adding(header: "Location", url + request.path + Self.queryString(request.query))
        case .unavailable(let detail):
            return HTTPResponse.error(503, "cluster unavailable", detail: "cannot tell which host has recording \(file): \(detail)")
                .adding(header: "Retry-After", "2")
        case .here, .unowned, .noPlacement:
            return nil
        }
    }

    /// What a `Range` header asks of a file of `size` bytes (RFC 9110 §14.1.2): one range of
    /// bytes (`first-last`, `first-`, or `-suffix`), clamped to the file; anything else (several
    /// ranges, another unit, garbage) is answered whole, as the RFC allows.
    enum ByteRange: Equatable {
        case whole
        case part(first: UInt64, last: UInt64)
        case unsatisfiable
    }

    static func byteRange(_ header: String?, size: UInt64) -> ByteRange {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
        let start = spec[..<dash], end = spec[spec.index(after: dash)...]
        if start.isEmpty {
            guard let suffix = UInt64(end), suffix > 0 else { return end.isEmpty ? .whole : .unsatisfiable }
            return size == 0 ? .unsatisfiable : .part(first: size - min(suffix, size), last: size - 1)
        }
        guard let first = UInt64(start) else { return .whole }
        guard first < size else { return .unsatisfiable }
        if end.isEmpty { return .part(first: first, last: size - 1) }
        guard let last = UInt64(end), last >= first else { return .whole }
        return .part(first: first, last: min(last, size - 1))
    }

    /// Finishes every recording (the host is stopping: SIGTERM must leave playable files).
    func finishRecordings() {
        let rooms = self.rooms
        _ = try? media.runOnLoop { for hosted in rooms.value.rooms.values { hosted.stopAllRecordings(reason: "host stopping") } }
    }
}

/// The optional body of `POST …/recordings`: `{"file": "name.webm"}`.
struct RecordingRequest: Decodable {
    var file: String?

    init(json body: [UInt8]) throws(JSONDocumentError) {
        self = try StrictJSON.decode(Self.self, from: body, shape: .object(["file": .string]))
    }
}
