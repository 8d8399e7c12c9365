import Compositing
import Conference
@testable import Server

/// The API's JSON bodies, each read as its route reads it; the first byte picks the body:
/// a layout (`PUT …/layout`: a preset or a template, then laid out for three guests), a
/// participant's PATCH, a recording's POST, or a subscription's POST.
enum BodiesFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        switch first % 4 {
        case 0:
            guard let request = try? LayoutRequest(json: body) else { return }
            let canvas = TemplateDescription.Canvas(width: 640, height: 360, fps: 30)
            let description = request.template(participants: ["alice", "bob", "carol"], activeSpeaker: "bob", canvas: canvas)
            for position in description.positions {
                precondition(position.rect.width >= 0 && position.rect.height >= 0, "a layout kept a negative rect")
            }
        case 1:
            guard let patch = try? ParticipantPatch(json: body) else { return }
            _ = (patch.hear?.keys.map(HostAPI.isValidName), patch.muted?.audio, patch.muted?.video)
        case 2:
            guard let request = try? RecordingRequest(json: body) else { return }
            _ = request.file.map(HostAPI.isValidName)
        default:
            guard let request = try? SubscriptionRequest(json: body) else { return }
            _ = (VideoSource(rawValue: request.source), HostAPI.isValidName(request.participant))
        }
    }
}
