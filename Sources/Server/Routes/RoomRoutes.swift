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
        if let cluster { return listClusterRooms(cluster) }
        struct Room: Encodable { let name: String; let participants: Int }
        let rooms = self.rooms
        let list = (try? media.runOnLoop { rooms.value.rooms.map { Room(name: $0.key, participants: $0.value.participants.count) } }) ?? []
        return .json(200, ["rooms": list.sorted { $0.name < $1.name }])
    }

    /// The room as it is: its participants with their tracks (and who subscribes to each), how
    /// many viewers, the composite's encodings, the layout in use, and the recordings running.
    func showRoom(_ name: String) -> HTTPResponse {
        let rooms = self.rooms, loop = media.loop
        let shown = (try? media.runOnLoop { () -> RoomView? in
            guard let hosted = rooms.value.rooms[name] else { return nil }
            let room = hosted.room, now = loop.clock.now(), levels = room.mixer.levelsLastTick
            let members = room.participants.filter { !$0.isViewer }
                .map { ParticipantView(summary: $0.summary, tracks: room.tracks(of: $0.id, now: now),
                                       audioLevel: levels[$0].map { ($0 * 10).rounded() / 10 },
                                       speaking: room.activeSpeaker == $0.identity) }
            return RoomView(name: name, participants: members.sorted { $0.summary.identity < $1.summary.identity },
                            viewers: room.participants.count { $0.isViewer }, outputs: room.compositeOutputs, layout: room.currentDescription,
                            preset: { if case .preset(let preset) = room.layout { preset.rawValue } else { nil } }(),
                            recordings: hosted.recordingsInProgress.map { RoomView.Recording(id: $0.id, file: $0.file) })
        }) ?? nil
        guard let shown else { return .error(404, "not found", detail: "no room \(name)") }
        return .json(200, shown)
    }
}

/// `GET /v1/rooms/{room}`.
private struct RoomView: Encodable, Sendable {
    struct Recording: Encodable, Sendable { let id: String; let file: String }
    let name: String
    let participants: [ParticipantView]
    let viewers: Int
    let outputs: [OutputSummary]
    let layout: TemplateDescription
    /// The preset that made `layout`; absent for a template PUT as it is.
    let preset: String?
    let recordings: [Recording]
}

/// A participant as `PATCH` answers it, with its tracks, its microphone's level in the mixer's
/// last 20 ms (dBov, RFC 6464's scale; absent while it sends no audio) and whether it is the
/// active speaker.
private struct ParticipantView: Encodable, Sendable {
    let summary: ParticipantSummary
    let tracks: [TrackSummary]
    let audioLevel: Double?
    let speaking: Bool

    private enum CodingKeys: String, CodingKey { case tracks, audioLevel, speaking }
    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(tracks, forKey: .tracks)
        try container.encodeIfPresent(audioLevel, forKey: .audioLevel)
        try container.encode(speaking, forKey: .speaking)
    }
}
