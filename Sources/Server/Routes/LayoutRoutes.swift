import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// `GET` and `PUT …/layout`.
extension HostAPI {
    /// `GET /v1/rooms/{room}/layout`: the template in use, in the contract's format (for a
    /// preset, the positions it produces now).
    func showLayout(room: String) -> HTTPResponse {
        let rooms = self.rooms
        let description = (try? media.runOnLoop { rooms.value.rooms[room]?.room.currentDescription }) ?? nil
        guard let description else { return .error(404, "not found", detail: "no room \(room)") }
        return .json(200, description)
    }

    /// `PUT /v1/rooms/{room}/layout`: `{"preset": "grid|speaker|sideBySide|pip"}` or a template
    /// (docs/api.md, "Templates") whose every position names a participant in the room. Answers the
    /// template now in use, and publishes `layoutChanged`.
    func setLayout(room: String, _ request: HTTPRequest) -> HTTPResponse {
        guard request.contentType == "application/json" else {
            return .error(415, "wrong content type", detail: "send the layout as application/json")
        }
        let layout: LayoutRequest
        do { layout = try LayoutRequest(json: request.body) } catch { return .error(400, "bad layout", detail: error.description) }
        let rooms = self.rooms
        return onLoop { () -> Result<TemplateDescription, HTTPResponseError> in
            guard let hosted = rooms.value.rooms[room] else {
                return .failure(HTTPResponseError(404, "not found", "no room \(room)"))
            }
            do throws(JSONDocumentError) { return .success(try hosted.setLayout(layout)) } catch {
                return .failure(HTTPResponseError(400, "bad layout", error.description))
            }
        }
        .response { description in .json(200, description) }
    }
}
