import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// `GET …/events`: the room's server-sent events.
extension HostAPI {
    /// Server-sent events of one room, from now on (the room need not exist yet).
    func subscribe(room: String) -> HTTPResponse {
        guard Self.isValidName(room) else { return .error(400, "bad room name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard let stream = events.subscribe(room: room) else {
            return .error(503, "too many listeners", detail: "at most \(RoomEventHub.maxSubscribersPerRoom) event streams per room")
        }
        stream.send(event: "hello", data: #"{"room":"\#(room)"}"#)
        var response = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        response.stream = stream
        return response
    }
}
