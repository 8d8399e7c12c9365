import Compositing
import Foundation
import Media
import Testing

@Suite struct TemplateDescriptionTests {
    let apiExample = """
        {"canvas": {"width": 1280, "height": 720, "fps": 30, "background": "#101010"},
         "positions": [
           {"participant": "alice", "source": "camera", "rect": {"x": 0, "y": 0, "width": 0.5, "height": 1}, "contentMode": "fill"},
           {"participant": "bob",   "source": "camera", "rect": {"x": 0.5, "y": 0, "width": 0.5, "height": 1}, "contentMode": "fit"}
         ]}
        """

    func decode(_ json: String) throws -> TemplateDescription {
        try JSONDecoder().decode(TemplateDescription.self, from: Data(json.utf8))
    }

    /// The field `validate()` names for `description`, or nil when it is valid.
    func badField(_ change: (inout TemplateDescription) -> Void) throws -> String? {
        var description = try decode(apiExample)
        change(&description)
        do {
            try description.validate()
            return nil
        } catch {
            return error.field
        }
    }

    @Test func theAPIExampleDecodesAndIsValid() throws {
        let description = try decode(apiExample)
        try description.validate()
        #expect(description.canvas.size == VideoSize(width: 1280, height: 720))
        #expect(description.canvas.backgroundColor == YUVColor(hex: "#101010"))
        #expect(description.positions.map(\.participant) == ["alice", "bob"])
        #expect(description.positions.map(\.contentMode) == [.fill, .fit])
        #expect(description.positions[1].rect == NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 1))
        let again = try JSONDecoder().decode(TemplateDescription.self, from: JSONEncoder().encode(description))
        #expect(again == description)
    }

    /// `rotation` (0, 90, 180, 270) and `mirror` per position, through the layout body as the
    /// API reads it; absent, the sender's own turn and no mirror.
    @Test func aPositionMayTurnAndMirror() throws {
        let body = """
            {"canvas": {"width": 640, "height": 360},
             "positions": [{"participant": "a", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}, "rotation": 270, "mirror": true}]}
            """
        guard case .custom(let description) = try LayoutRequest(json: Array(body.utf8)) else {
            Issue.record("not a template")
            return
        }
        #expect(description.positions[0].videoRotation == .clockwise270 && description.positions[0].mirror == true)
        #expect(try decode(apiExample).positions[0].rotation == nil)
        #expect(try badField { $0.positions[0].rotation = 45 } == "positions[0].rotation")
        let again = try JSONDecoder().decode(TemplateDescription.self, from: JSONEncoder().encode(description))
        #expect(again == description)
    }

    /// `debugOverlay` for the whole template, and per position (which wins).
    @Test func theDebugOverlayIsAskedForTheTemplateOrOnePosition() throws {
        let body = """
            {"canvas": {"width": 640, "height": 360}, "debugOverlay": true,
             "positions": [{"participant": "a", "rect": {"x": 0, "y": 0, "width": 0.5, "height": 1}},
                           {"participant": "b", "rect": {"x": 0.5, "y": 0, "width": 0.5, "height": 1}, "debugOverlay": false}]}
            """
        guard case .custom(let description) = try LayoutRequest(json: Array(body.utf8)) else {
            Issue.record("not a template")
            return
        }
        #expect(description.positions.map(description.showsDebugOverlay) == [true, false])
        #expect(try decode(apiExample).positions.map { try decode(apiExample).showsDebugOverlay($0) } == [false, false])
    }

    @Test func absentBackgroundSourceAndContentModeTakeDefaults() throws {
        let description = try decode("""
            {"canvas": {"width": 640, "height": 360, "fps": 15},
             "positions": [{"participant": "a", "rect": {"x": 0, "y": 0, "width": 1, "height": 1}}]}
            """)
        try description.validate()
        #expect(description.canvas.background == "#101010")
        #expect(description.positions[0].source == .camera && description.positions[0].contentMode == .fill)
    }

    @Test func eachBrokenRuleNamesItsField() throws {
        #expect(try badField { _ in } == nil)
        #expect(try badField { $0.canvas.width = 3841 } == "canvas.width")
        #expect(try badField { $0.canvas.height = 0 } == "canvas.height")
        #expect(try badField { $0.canvas.fps = 0 } == "canvas.fps")
        #expect(try badField { $0.canvas.fps = 61 } == "canvas.fps")
        #expect(try badField { $0.canvas.fps = 60 } == nil)
        #expect(try badField { $0.canvas.width = 3840; $0.canvas.height = 2160 } == nil)
        #expect(try badField { $0.canvas.background = "red" } == "canvas.background")
        #expect(try badField { $0.canvas.background = "#10101g" } == "canvas.background")
        #expect(try badField { $0.canvas.background = "101010" } == "canvas.background")
        #expect(try badField { $0.positions[1].rect.x = 1.2 } == "positions[1].rect.x")
        #expect(try badField { $0.positions[0].rect.y = -0.1 } == "positions[0].rect.y")
        #expect(try badField { $0.positions[0].rect.width = 0 } == "positions[0].rect.width")
        #expect(try badField { $0.positions[0].rect.height = .nan } == "positions[0].rect.height")
        #expect(try badField { $0.positions[1].rect.x = 0.6 } == "positions[1].rect.width")  // 0.6 + 0.5 > 1
        #expect(try badField { $0.positions[0].participant = "" } == "positions[0].participant")
        #expect(try badField { $0.positions[0].rect = NormalizedRect(x: 1.0 / 3, y: 0, width: 2.0 / 3, height: 1) } == nil)
    }

    @Test func theErrorSaysWhatIsWrong() throws {
        var description = try decode(apiExample)
        description.canvas.fps = 120
        #expect(throws: TemplateValidationError(field: "canvas.fps", reason: "must be 1…60, not 120")) {
            try description.validate()
        }
    }

    @Test func anUnknownContentModeIsRefusedWhenDecoding() {
        #expect(throws: DecodingError.self) {
            try decode(apiExample.replacingOccurrences(of: "\"fit\"", with: "\"stretch\""))
        }
    }

    @Test func normalizedRectsBecomeTouchingPixelRects() {
        let canvas = VideoSize(width: 1280, height: 720)
        let thirds = (0..<3).map { NormalizedRect(x: Double($0) / 3, y: 0, width: 1.0 / 3, height: 1).pixels(in: canvas) }
        #expect(thirds[0].x == 0 && thirds[2].x + thirds[2].width == 1280)
        #expect(thirds[0].x + thirds[0].width == thirds[1].x && thirds[1].x + thirds[1].width == thirds[2].x)
    }
}
