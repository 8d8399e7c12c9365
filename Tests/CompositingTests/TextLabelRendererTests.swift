import Compositing
import Media
import Testing
import Wire

@Suite struct TextLabelRendererTests {
    let clock = ManualClock()
    let canvasSize = VideoSize(width: 640, height: 360)
    /// Text is drawn at luma 235; no colour in the palette or the background comes near.
    static let bright: UInt8 = 200

    func compositor(_ positions: [VideoTrackPositionInfo], labels: (any TileLabelRenderer)?,
                    debugOverlay: Bool = false) -> VideoCompositor {
        let compositor = VideoCompositor(canvasSize: canvasSize, fps: 30, background: Palette.background)
        compositor.labelRenderer = labels
        compositor.showsDebugOverlay = debugOverlay
        compositor.start()
        compositor.setTemplate(CompositeTemplate(positions: positions))
        return compositor
    }

    func picture(_ compositor: VideoCompositor) throws -> I420Frame {
        compositor.tick(now: clock.now())
        return try #require(compositor.outputTrack?.latestFrame(now: clock.now()))
    }

    /// The pixels with text-bright luma.
    func brightPixels(_ frame: I420Frame) -> [(x: Int, y: Int)] {
        var found: [(x: Int, y: Int)] = []
        for y in 0..<frame.height {
            for x in 0..<frame.width where frame.data[y * frame.width + x] >= Self.bright { found.append((x, y)) }
        }
        return found
    }

    func contains(_ rect: PixelRect, _ point: (x: Int, y: Int)) -> Bool {
        rect.x <= point.x && point.x < rect.x + rect.width && rect.y <= point.y && point.y < rect.y + rect.height
    }

    @Test func aMutedParticipantsNameShowsInsideItsPlaceholderTileAndNowhereElse() throws {
        let track = VideoTrack(id: "alice/camera")
        track.push(solidFrame(Palette.red), now: clock.now())
        track.isMuted = true
        let rect = NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 0.5)
        let tile = rect.pixels(in: canvasSize)
        let compositor = compositor([
            VideoTrackPositionInfo(track: track, normalizedRect: rect, placeholder: .color(Palette.blue), label: "Alice"),
        ], labels: try TextLabelRenderer())
        let canvas = try picture(compositor)
        let ink = brightPixels(canvas)
        #expect(ink.count > 40, "\(ink.count) bright pixels")
        #expect(ink.allSatisfy { contains(tile, $0) })
        // At the bottom left, on a placeholder that still shows around it (not a red frozen frame).
        #expect(ink.allSatisfy { $0.y >= tile.y + tile.height / 2 && $0.x < tile.x + tile.width / 2 })
        #expect(canvas.pixel(x: tile.x + tile.width / 2, y: tile.y + tile.height / 3).isClose(to: Palette.blue, tolerance: 2))
        #expect(canvas.pixel(x: 100, y: 100) == Palette.background)
    }

    @Test func aLongNameOnASmallTileIsShortenedAndStaysInside() throws {
        let track = VideoTrack(id: "b")
        track.isMuted = true
        let rect = NormalizedRect(x: 0.25, y: 0.25, width: 0.125, height: 0.125)  // 80x45
        let tile = rect.pixels(in: canvasSize)
        let compositor = compositor([
            VideoTrackPositionInfo(track: track, normalizedRect: rect, placeholder: .color(Palette.green),
                                   label: "Bartholomew Featherstonehaugh-Cholmondeley"),
        ], labels: try TextLabelRenderer())
        let ink = brightPixels(try picture(compositor))
        #expect(ink.count > 10)
        #expect(ink.allSatisfy { contains(tile, $0) })
    }

    @Test func theDebugOverlayWritesTheTracksIdResolutionAndRate() throws {
        let track = VideoTrack(id: "cam")
        track.push(solidFrame(Palette.magenta, width: 320, height: 240), now: clock.now())
        let rect = NormalizedRect(x: 0, y: 0, width: 0.5, height: 0.5)
        let tile = rect.pixels(in: canvasSize)
        let renderer = try TextLabelRenderer()
        let position = VideoTrackPositionInfo(track: track, normalizedRect: rect)
        let plain = try picture(compositor([position], labels: nil))
        let overlaid = try picture(compositor([position], labels: renderer, debugOverlay: true))

        let ink = brightPixels(overlaid)
        #expect(ink.count > 40)
        #expect(ink.allSatisfy { contains(tile, $0) && $0.y < tile.y + tile.height / 2 })  // at the top
        // The overlay is exactly the green frame of a rendering track and the seed's fields
        // (one frame drawn in the last second) drawn on the plain picture; the same text with
        // another resolution differs.
        func drawn(_ text: String) -> I420Frame {
            var canvas = plain
            VideoCompositor.drawDebugBorder(rendering: true, around: tile, on: &canvas)
            renderer.drawLabel(text, kind: .debugInfo, in: tile, on: &canvas)
            return canvas
        }
        #expect(overlaid.data == drawn("cam 320x240 first frame yes rendering yes outputs 1 1 fps").data)
        #expect(overlaid.data != drawn("cam 640x480 first frame yes rendering yes outputs 1 1 fps").data)
    }
}
