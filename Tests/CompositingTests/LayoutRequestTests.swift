import Compositing
import Testing

/// The layout body `PUT /v1/rooms/{room}/layout` and `tessera compose --template` both read.
@Suite struct LayoutRequestTests {
    private func read(_ json: String) throws(JSONDocumentError) -> LayoutRequest { try LayoutRequest(json: Array(json.utf8)) }

    private func error(_ json: String) -> String? {
        do { _ = try read(json); return nil } catch { return error.description }
    }

    @Test func aPresetByNameIsRead() throws {
        #expect(try read(#"{"preset": "grid"}"#) == .preset(.grid))
        #expect(try read(#"{"preset": "sideBySide"}"#) == .preset(.sideBySide))
    }

    @Test func aTemplateIsReadAndValidated() throws {
        let request = try read(#"{"canvas": {"width": 640, "height": 360}, "positions": [{"participant": "alice", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}, "contentMode": "fit"}]}"#)
        guard case .custom(let description) = request else { Issue.record("not a template"); return }
        #expect(description.canvas.fps == 30 && description.positions.map(\.participant) == ["alice"])
    }

    @Test(arguments: [
        (#"{"preset": "gird"}"#, "`preset`: unknown preset \"gird\" (one of grid, speaker, sideBySide, pip)"),
        (#"{"preset": 3}"#, "`preset`: must be a string"),
        (#"{"preset": "grid", "canvas": {}}"#, "`canvas`: unknown key; a preset takes no other field"),
        (#"{"canvas": {"width": 640, "height": 360}, "positions": [{"participant": "a", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}, "contentmode": "fit"}]}"#,
         "`positions[0].contentmode`: unknown key; did you mean `contentMode`?"),
        (#"{"positions": []}"#, "`canvas`: is missing"),
        (#"{"canvas": {"width": "640", "height": 360}, "positions": []}"#, "`canvas.width`: must be a whole number, not a string"),
        (#"{"canvas": {"width": 640, "height": 360}, "positions": [{"participant": "a", "rect": {"x": 2, "y": 0, "width": 1, "height": 1}}]}"#,
         "`positions[0].rect.x`: must be within 0…1, not 2.0"),
        (#"{"canvas": {"width": 640, "height": 360, "fps": 30}, "positions": [{"participant": "a", "rect": {"x": 0, "y": 0, "width": 1}}]}"#,
         "`positions[0].rect.height`: is missing"),
        (#"{"canvas": {"width": 640, "height": 360}"#, "not valid JSON: line 1, column 41"),
        (#"["grid"]"#, "must be a JSON object"),
    ])
    func aBadBodyNamesItsField(json: String, message: String) {
        let said = error(json)
        #expect(said?.contains(message) == true, "said: \(said ?? "nothing")")
    }

    @Test func aPresetBecomesATemplateForTheParticipantsInOrder() throws {
        let canvas = TemplateDescription.Canvas(width: 1280, height: 720)
        let template = try read(#"{"preset": "sideBySide"}"#).template(participants: ["alice", "bob", "carol"], canvas: canvas)
        #expect(template.canvas == canvas)
        #expect(template.positions.map(\.participant) == ["alice", "bob"])
        #expect(template.positions.map(\.rect.x) == [0, 0.5])
    }
}
