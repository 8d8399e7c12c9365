import Foundation
import Media
import Testing

@Suite struct TextRendererTests {
    let white = YUVColor(red: 255, green: 255, blue: 255)
    let red = YUVColor(red: 255, green: 0, blue: 0)

    /// The pixels that differ between two pictures of one size.
    func changedPixels(_ a: I420Frame, _ b: I420Frame) -> [(x: Int, y: Int)] {
        var changed: [(x: Int, y: Int)] = []
        for y in 0..<a.height {
            for x in 0..<a.width where a.pixel(x: x, y: y) != b.pixel(x: x, y: y) { changed.append((x, y)) }
        }
        return changed
    }

    @Test func aNameDrawnInWhiteChangesPixelsInsideItsMeasuredBoxAndNoneOutside() throws {
        let renderer = try TextRenderer()
        let size = renderer.measure("Alice", pixelHeight: 24)
        #expect(size.width > 30 && size.width < 120, "\(size)")
        #expect(size.height >= 24 && size.height <= 36, "\(size)")
        let blank = I420Frame(width: 160, height: 64, color: .black)
        var frame = blank
        let box = renderer.draw("Alice", into: &frame, x: 10, y: 12, pixelHeight: 24, color: white)
        #expect(box == PixelRect(x: 10, y: 12, width: size.width, height: size.height))
        let changed = changedPixels(blank, frame)
        #expect(changed.count > 50)  // ink, not a speck
        #expect(changed.allSatisfy { box.x <= $0.x && $0.x < box.x + box.width && box.y <= $0.y && $0.y < box.y + box.height })
        // Glyph cores are fully covered: white there.
        #expect(changed.contains { frame.pixel(x: $0.x, y: $0.y) == white })
        // Some ink reaches near each end of the box: the measure is tight, not padded.
        #expect(changed.contains { $0.x < box.x + 4 } && changed.contains { $0.x >= box.x + box.width - 4 })
    }

    @Test func colouredTextSetsChromaToo() throws {
        let renderer = try TextRenderer(font: .sansBold)
        var frame = I420Frame(width: 128, height: 48, color: .black)
        renderer.draw("MM", into: &frame, x: 0, y: 0, pixelHeight: 40, color: red)
        let reds = (0..<frame.height).flatMap { y in (0..<frame.width).map { frame.pixel(x: $0, y: y) } }.filter { $0.isClose(to: red, tolerance: 4) }
        #expect(reds.count > 20)
    }

    @Test func aBackgroundFillsTheBoxBehindTheText() throws {
        let renderer = try TextRenderer()
        let grey = YUVColor(y: 128, u: 128, v: 128)
        var frame = I420Frame(width: 200, height: 60, color: .black)
        let box = renderer.draw("Bob", into: &frame, x: 20, y: 10, pixelHeight: 20, color: white, background: grey)
        #expect(frame.pixel(x: box.x, y: box.y + box.height - 1) == grey)  // a corner: no ink there
        #expect(frame.pixel(x: box.x - 1, y: box.y) == .black)
        #expect(frame.pixel(x: box.x + box.width, y: box.y + box.height) == .black)
    }

    @Test func textCentredInATileStaysInsideTheTile() throws {
        let renderer = try TextRenderer()
        let tile = PixelRect(x: 40, y: 20, width: 60, height: 30)
        let blank = I420Frame(width: 160, height: 90, color: .black)
        var frame = blank
        // Too long for the tile: cut at its edges.
        renderer.draw("A rather long participant name", into: &frame, centeredIn: tile, pixelHeight: 18, color: white)
        let changed = changedPixels(blank, frame)
        #expect(!changed.isEmpty)
        #expect(changed.allSatisfy { tile.x <= $0.x && $0.x < tile.x + tile.width && tile.y <= $0.y && $0.y < tile.y + tile.height })
    }

    @Test func measuringFollowsLengthSizeAndTheMonospacedFont() throws {
        let sans = try TextRenderer(font: .sans), mono = try TextRenderer(font: .mono)
        #expect(sans.measure("", pixelHeight: 20).width == 0)
        #expect(sans.measure("Alice Smith", pixelHeight: 20).width > sans.measure("Alice", pixelHeight: 20).width)
        #expect(sans.measure("Alice", pixelHeight: 40).height > sans.measure("Alice", pixelHeight: 20).height)
        #expect(sans.measure("iiii", pixelHeight: 20).width < sans.measure("WWWW", pixelHeight: 20).width)
        #expect(mono.measure("iiii", pixelHeight: 20).width == mono.measure("0000", pixelHeight: 20).width)
        // Out-of-range heights are clamped, not trapped; control characters are skipped.
        #expect(sans.measure("x", pixelHeight: 0) == sans.measure("x", pixelHeight: 4))
        #expect(sans.measure("a\u{0}\n\u{7F}b", pixelHeight: 20) == sans.measure("ab", pixelHeight: 20))
    }

    @Test func drawingOffThePictureIsClippedNotTrapped() throws {
        let renderer = try TextRenderer()
        var frame = I420Frame(width: 33, height: 17, color: .black)
        renderer.draw("Clipped", into: &frame, x: -20, y: -10, pixelHeight: 30, color: white, background: red)
        renderer.draw("Gone", into: &frame, x: 500, y: 500, pixelHeight: 30, color: white)
        renderer.draw("Ünïcødé ✓ 名前", into: &frame, x: 1, y: 1, pixelHeight: 12, color: white)
    }

    @Test func aMissingFontIsATypedError() {
        #expect(throws: TextRendererError.fontNotFound(name: "/nonexistent/Font.ttf", searched: ["/nonexistent/Font.ttf"])) {
            try TextRenderer(font: .file("/nonexistent/Font.ttf"))
        }
        let notAFont = MediaFixtures.temporaryDirectory().appendingPathComponent("not-a-font.ttf")
        try? Data("plain text".utf8).write(to: notAFont)
        #expect(throws: TextRendererError.fontUnreadable(path: notAFont.path, code: 2)) {
            try TextRenderer(font: .file(notAFont.path))  // FT_Err_Unknown_File_Format
        }
        #expect(throws: Never.self) { try TextRenderer.locate(.mono) }
    }
}
