import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// `GET /v1/rooms` and `GET /v1/rooms/{room}`.
extension HostAPI {
    func listRooms() -> HTTPResponse {
        struct Room: Encodable { let name: String; let participants: Int }
        let rooms = self.rooms
        let list = (try? media.runOnLoop { rooms.value.rooms.map { Room(name: $0.key, participants: $0.value.participants.count) } }) ?? []
        return .json(200, ["rooms": list.sorted { $0.name < $1.name }])
    }

    func showRoom(_ name: String) -> HTTPResponse {
        struct Room: Encodable { let name: String; let participants: [ParticipantSummary]; let viewers: Int }
        let rooms = self.rooms
        let members = (try? media.runOnLoop { rooms.value.rooms[name]?.participants.map { ($0.summary, $0.isViewer) } }) ?? nil
        guard let members else { return .error(404, "not found", detail: "no room \(name)") }
        return .json(200, Room(name: name, participants: members.filter { !$0.1 }.map(\.0).sorted { $0.identity < $1.identity },
                               viewers: members.filter(\.1).count))
    }
}
