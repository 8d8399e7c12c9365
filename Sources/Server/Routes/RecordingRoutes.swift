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
        let rooms = self.rooms, events = self.events
        return onLoop { () -> Result<Date, HTTPResponseError> in
            guard let hosted = rooms.value.rooms[room] else { return .failure(HTTPResponseError(404, "not found", "no room \(room)")) }
            let start: Date
            do { start = try hosted.startRecording(id: id, file: name, path: path) } catch {
                return .failure(HTTPResponseError(500, "recording", "\(error)"))
            }
            events.publish(RoomEvent(.recordingStarted, room: room, reason: name))
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

    /// Finishes every recording (the host is stopping: SIGTERM must leave playable files).
    func finishRecordings() {
        let rooms = self.rooms
        _ = try? media.runOnLoop { for hosted in rooms.value.rooms.values { hosted.stopAllRecordings() } }
    }
}

/// The optional body of `POST …/recordings`: `{"file": "name.webm"}`.
struct RecordingRequest: Decodable {
    var file: String?

    init(json body: [UInt8]) throws(JSONDocumentError) {
        self = try StrictJSON.decode(Self.self, from: body, shape: .object(["file": .string]))
    }
}
