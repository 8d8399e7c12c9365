import Compositing
import Media
import Testing
import Wire

@Suite struct VideoCompositorTests {
    let clock = ManualClock()
    let canvasSize = VideoSize(width: 640, height: 360)

    func runningCompositor() -> VideoCompositor {
        let compositor = VideoCompositor(canvasSize: canvasSize, fps: 30, background: Palette.background)
        compositor.start()
        return compositor
    }

    /// Ticks once and returns the picture the output track now shows.
    func picture(_ compositor: VideoCompositor) throws -> I420Frame {
        compositor.tick(now: clock.now())
        return try #require(compositor.outputTrack?.latestFrame(now: clock.now()))
    }

    func track(_ id: String, _ color: YUVColor, width: Int = 320, height: Int = 240) -> VideoTrack {
        let track = VideoTrack(id: id)
        track.push(solidFrame(color, width: width, height: height), now: clock.now())
        return track
    }

    /// Four tracks in a 2x2 grid, in reading order.
    func quarters(_ tracks: [VideoTrack]) -> CompositeTemplate {
        let corners = [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.5, 0.5)]
        return CompositeTemplate(positions: zip(tracks, corners).map { track, corner in
            VideoTrackPositionInfo(track: track, normalizedRect: NormalizedRect(x: corner.0, y: corner.1, width: 0.5, height: 0.5))
        })
    }

    @Test func eachSlotsCentreShowsItsTracksColour() throws {
        let tracks = [track("a", Palette.red), track("b", Palette.green), track("c", Palette.blue), track("d", Palette.yellow)]
        let compositor = runningCompositor()
        compositor.setTemplate(quarters(tracks))
        let canvas = try picture(compositor)
        #expect(canvas.width == 640 && canvas.height == 360)
        #expect(canvas.pixel(x: 160, y: 90).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 480, y: 90).isClose(to: Palette.green, tolerance: 2))
        #expect(canvas.pixel(x: 160, y: 270).isClose(to: Palette.blue, tolerance: 2))
        #expect(canvas.pixel(x: 480, y: 270).isClose(to: Palette.yellow, tolerance: 2))
    }

    @Test func fitLeavesLetterboxBarsAndFillCoversTheWholeRect() throws {
        // 16:9 pictures into 320x360 halves (taller than 16:9).
        let fitted = track("fit", Palette.red, width: 640, height: 360)
        let filled = track("fill", Palette.green, width: 640, height: 360)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: fitted, normalizedRect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 1), contentMode: .fit),
            VideoTrackPositionInfo(track: filled, normalizedRect: NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 1), contentMode: .fill),
        ]))
        let canvas = try picture(compositor)
        // Fit: 320x180 in the middle, bars above and below.
        #expect(canvas.pixel(x: 160, y: 180).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 160, y: 40) == Palette.background)
        #expect(canvas.pixel(x: 160, y: 330) == Palette.background)
        // Fill: the track's colour right up to the rect's edges.
        for (x, y) in [(322, 1), (638, 1), (322, 358), (638, 358), (480, 180)] {
            #expect(canvas.pixel(x: x, y: y).isClose(to: Palette.green, tolerance: 2), "at (\(x), \(y))")
        }
    }

    @Test func fillCropsTheCentreOfTheSource() throws {
        // A 640x360 picture, red in columns 100..<540 and blue beside them, filled into a square:
        // only the middle 360 columns show, so the tile is red to its edges (fit would show blue).
        let source = VideoTrack(id: "s")
        var frame = solidFrame(Palette.blue, width: 640, height: 360)
        frame.fill(PixelRect(x: 100, y: 0, width: 440, height: 360), with: Palette.red)
        source.push(frame, now: clock.now())
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: source, normalizedRect: NormalizedRect(x: 0, y: 0, width: 0.5625, height: 1)),
        ]))
        let canvas = try picture(compositor)  // tile 360x360: the source's middle 360 columns
        #expect(canvas.pixel(x: 2, y: 180).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 356, y: 180).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 362, y: 180) == Palette.background)
    }

    @Test func laterPositionsAreDrawnOverEarlierOnes() throws {
        let under = track("under", Palette.red), over = track("over", Palette.green)
        let compositor = runningCompositor()
        let whole = NormalizedRect.full, corner = NormalizedRect(x: 0.5, y: 0.5, width: 0.5, height: 0.5)
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: under, normalizedRect: whole),
            VideoTrackPositionInfo(track: over, normalizedRect: corner),
        ]))
        var canvas = try picture(compositor)
        #expect(canvas.pixel(x: 500, y: 300).isClose(to: Palette.green, tolerance: 2))
        #expect(canvas.pixel(x: 100, y: 100).isClose(to: Palette.red, tolerance: 2))
        // The same rects, the other order: the full-canvas tile now covers the corner.
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: over, normalizedRect: corner),
            VideoTrackPositionInfo(track: under, normalizedRect: whole),
        ]))
        clock.advance(by: .milliseconds(33))
        canvas = try picture(compositor)
        #expect(canvas.pixel(x: 500, y: 300).isClose(to: Palette.red, tolerance: 2))
    }

    @Test func aMutedTrackShowsItsPlaceholder() throws {
        let camera = track("camera", Palette.red)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: camera, normalizedRect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 1),
                                   placeholder: .color(Palette.magenta)),
        ]))
        #expect(try picture(compositor).pixel(x: 160, y: 180).isClose(to: Palette.red, tolerance: 2))
        camera.isMuted = true
        camera.push(solidFrame(Palette.red), now: clock.now())
        let muted = try picture(compositor)
        #expect(muted.pixel(x: 160, y: 180) == Palette.magenta)
        #expect(muted.pixel(x: 480, y: 180) == Palette.background)
        camera.isMuted = false
        #expect(try picture(compositor).pixel(x: 160, y: 180).isClose(to: Palette.red, tolerance: 2))
    }

    @Test func aStillPicturePlaceholderIsPlacedLikeTheTrack() throws {
        let camera = VideoTrack(id: "never-sent")
        var avatar = solidFrame(Palette.yellow, width: 200, height: 200)
        avatar.fill(PixelRect(x: 100, y: 0, width: 100, height: 200), with: Palette.blue)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: camera, normalizedRect: .full, contentMode: .fit, placeholder: .picture(avatar)),
        ]))
        let canvas = try picture(compositor)  // a 360x360 square in the middle of 640x360
        #expect(canvas.pixel(x: 240, y: 180).isClose(to: Palette.yellow, tolerance: 2))
        #expect(canvas.pixel(x: 400, y: 180).isClose(to: Palette.blue, tolerance: 2))
        #expect(canvas.pixel(x: 40, y: 180) == Palette.background)
    }

    @Test func aTrackSilentForMoreThanTwoSecondsShowsItsPlaceholderNotAFrozenFrame() throws {
        let camera = track("camera", Palette.red)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: camera, normalizedRect: .full, placeholder: .color(Palette.magenta)),
        ]))
        clock.advance(by: .milliseconds(1_900))
        #expect(try picture(compositor).pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2))
        #expect(camera.isRendering(now: clock.now()))
        clock.advance(by: .milliseconds(200))
        #expect(!camera.isRendering(now: clock.now()))
        #expect(try picture(compositor).pixel(x: 320, y: 180) == Palette.magenta)
        // A new frame brings the picture back on the next tick.
        camera.push(solidFrame(Palette.green), now: clock.now())
        #expect(try picture(compositor).pixel(x: 320, y: 180).isClose(to: Palette.green, tolerance: 2))
    }

    @Test func anEndedTrackShowsItsPlaceholderAndNeverComesBack() throws {
        let camera = track("camera", Palette.red)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: camera, normalizedRect: .full, placeholder: .color(Palette.magenta)),
        ]))
        camera.end()
        #expect(try picture(compositor).pixel(x: 320, y: 180) == Palette.magenta)
        camera.push(solidFrame(Palette.red), now: clock.now())
        #expect(camera.readyState == .ended)
        #expect(try picture(compositor).pixel(x: 320, y: 180) == Palette.magenta)
    }

    @Test func rotationNinetyTurnsLandscapeIntoPortraitBeforePlacing() throws {
        // Left half red, right half green; turned clockwise, the left half becomes the top.
        var frame = solidFrame(Palette.red, width: 1280, height: 720)
        frame.fill(PixelRect(x: 640, y: 0, width: 640, height: 720), with: Palette.green)
        let camera = VideoTrack(id: "phone")
        camera.rotation = .clockwise90
        camera.push(frame, now: clock.now())
        let compositor = VideoCompositor(canvasSize: VideoSize(width: 1280, height: 720), background: Palette.background)
        compositor.start()
        // A tall rect, 256x720: the 720x1280 picture fits as 256x455, bars above and below.
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: camera, normalizedRect: NormalizedRect(x: 0.4, y: 0, width: 0.2, height: 1), contentMode: .fit),
        ]))
        let canvas = try picture(compositor)
        let centreX = 640
        #expect(canvas.pixel(x: centreX, y: 60) == Palette.background)
        #expect(canvas.pixel(x: centreX, y: 250).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: centreX, y: 470).isClose(to: Palette.green, tolerance: 2))
        #expect(canvas.pixel(x: centreX, y: 660) == Palette.background)
        // Across the tile the picture is one colour (unturned it would be red | green side by side).
        #expect(canvas.pixel(x: 520, y: 250).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 760, y: 250).isClose(to: Palette.red, tolerance: 2))
    }

    @Test func mirrorFlipsTheTileLeftToRight() throws {
        var frame = solidFrame(Palette.red)
        frame.fill(PixelRect(x: 160, y: 0, width: 160, height: 240), with: Palette.green)
        let selfView = VideoTrack(id: "self")
        selfView.push(frame, now: clock.now())
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: selfView, normalizedRect: .full, contentMode: .fill, mirror: true),
        ]))
        let canvas = try picture(compositor)
        #expect(canvas.pixel(x: 100, y: 180).isClose(to: Palette.green, tolerance: 2))
        #expect(canvas.pixel(x: 540, y: 180).isClose(to: Palette.red, tolerance: 2))
    }

    /// A track lent its pictures by a decoder (tessera compose's, no copy) shows what a track
    /// pushed the decoded copies shows, upright or mirrored; when the decoder has no picture to
    /// lend (libvpx refused a frame) the tile shows its placeholder.
    @Test func aLentPictureIsDrawnAsAPushedCopyOfItIs() throws {
        var source = solidFrame(Palette.red, width: 320, height: 180)
        source.fill(PixelRect(x: 0, y: 0, width: 80, height: 180), with: Palette.green)
        let encoder = try VP8Encoder(.init(width: 320, height: 180, bitrate: 500_000))
        let key = try #require(try encoder.encode(source).first).data
        let decoder = try VP8Decoder()
        #expect(try decoder.decodeLending(key, timestamp: clock.now()))
        let lent = VideoTrack(id: "lent"), pushed = VideoTrack(id: "pushed")
        lent.pushLent(by: decoder, now: clock.now())
        pushed.push(try #require(try VP8Decoder().decode(key, timestamp: clock.now())), now: clock.now())
        #expect(lent.frameSize == VideoSize(width: 320, height: 180))
        let compositor = runningCompositor()
        let halves = [NormalizedRect(x: 0, y: 0, width: 0.5, height: 0.5), NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 0.5),
                      NormalizedRect(x: 0, y: 0.5, width: 0.5, height: 0.5), NormalizedRect(x: 0.5, y: 0.5, width: 0.5, height: 0.5)]
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: lent, normalizedRect: halves[0], placeholder: .color(Palette.magenta)),
            VideoTrackPositionInfo(track: pushed, normalizedRect: halves[1]),
            VideoTrackPositionInfo(track: lent, normalizedRect: halves[2], mirror: true, placeholder: .color(Palette.magenta)),
            VideoTrackPositionInfo(track: pushed, normalizedRect: halves[3], mirror: true),
        ]))
        let canvas = try picture(compositor)
        func tile(_ x: Int, _ y: Int) -> I420Frame { canvas.cropped(to: PixelRect(x: x, y: y, width: 320, height: 180)) }
        #expect(tile(0, 0).data == tile(320, 0).data, "upright")
        #expect(tile(0, 180).data == tile(320, 180).data, "mirrored")
        #expect(canvas.pixel(x: 20, y: 90).isClose(to: Palette.green, tolerance: 8))
        #expect(canvas.pixel(x: 300, y: 270).isClose(to: Palette.green, tolerance: 8))

        #expect(throws: VP8CodecError.self) { try decoder.decodeLending(Array(key.prefix(12))) }
        let after = try picture(compositor)
        #expect(after.pixel(x: 160, y: 90) == Palette.magenta && after.pixel(x: 160, y: 270) == Palette.magenta)
        #expect(after.pixel(x: 480, y: 90).isClose(to: Palette.red, tolerance: 8))
    }

    @Test func aNewTemplateAppliesOnTheNextPicture() throws {
        let alice = track("alice", Palette.red), bob = track("bob", Palette.green)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: alice, normalizedRect: .full)]))
        let first = try picture(compositor)
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: bob, normalizedRect: .full)]))
        // Nothing changes until the next tick…
        #expect(compositor.outputTrack?.latestFrame(now: clock.now())?.pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2) == true)
        clock.advance(by: .milliseconds(33))
        let second = try picture(compositor)
        #expect(second.pixel(x: 320, y: 180).isClose(to: Palette.green, tolerance: 2))
        // …and a picture already sent is not drawn over by later ticks (canvases are reused).
        #expect(first.pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2))
        clock.advance(by: .milliseconds(33))
        _ = try picture(compositor)
        #expect(first.pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2))
    }

    /// A canvas its tiles cover is not filled with the background first (each tile draws every
    /// pixel of its own), but canvases are reused: after a template that covers less, or one on
    /// odd pixels, what the tiles leave is background, never an older picture's pixels.
    @Test func whatTheTilesDoNotCoverIsBackgroundEvenOnAReusedCanvas() throws {
        let tracks = [track("a", Palette.red), track("b", Palette.green), track("c", Palette.blue), track("d", Palette.yellow)]
        let compositor = runningCompositor()
        compositor.setTemplate(quarters(tracks))
        for _ in 0..<3 {
            _ = try picture(compositor)
            clock.advance(by: .milliseconds(33))
        }
        // The left half only; then three columns, whose edges fall on odd pixels of 640.
        let layouts: [[NormalizedRect]] = [
            [NormalizedRect(x: 0, y: 0, width: 0.5, height: 1)],
            (0..<3).map { NormalizedRect(x: Double($0) * 0.3, y: 0, width: 0.3, height: 1) },
        ]
        for rects in layouts {
            compositor.setTemplate(CompositeTemplate(positions: zip(tracks, rects).map { VideoTrackPositionInfo(track: $0, normalizedRect: $1) }))
            for _ in 0..<2 {
                let canvas = try picture(compositor)
                clock.advance(by: .milliseconds(33))
                #expect(canvas.pixel(x: 630, y: 300).isClose(to: Palette.background, tolerance: 2), "\(rects.count) tiles")
                #expect(canvas.pixel(x: 100, y: 100).isClose(to: Palette.red, tolerance: 2))
            }
        }
    }

    @Test func outputTrackIsNilUntilStartAndNewOnEachStart() throws {
        let compositor = VideoCompositor(canvasSize: canvasSize)
        #expect(compositor.outputTrack == nil)
        #expect(!compositor.isRunning)
        compositor.tick(now: clock.now())  // stopped: draws nothing, does not trap
        compositor.start()
        let first = try #require(compositor.outputTrack)
        compositor.tick(now: clock.now())
        #expect(first.framesReceived == 1)
        compositor.stop()
        #expect(!compositor.isRunning)
        compositor.start()
        let second = try #require(compositor.outputTrack)
        #expect(second !== first)
        clock.advance(by: .milliseconds(33))
        compositor.tick(now: clock.now())
        #expect(second.framesReceived == 1)
        #expect(first.framesReceived == 1)
        #expect(first.readyState == .ended)
        #expect(first.latestFrame(now: clock.now()) == nil)
        // start() while running also replaces the output track.
        compositor.start()
        #expect(compositor.outputTrack !== second && second.readyState == .ended)
    }

    @Test func stopClearsTheTemplate() {
        let alice = track("alice", Palette.red)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: alice, normalizedRect: .full)]))
        #expect(compositor.currentTemplate?.positions.count == 1)
        compositor.stop()
        #expect(compositor.currentTemplate == nil)
        compositor.start()
        compositor.tick(now: clock.now())
        #expect(compositor.outputTrack?.latestFrame(now: clock.now())?.pixel(x: 320, y: 180) == Palette.background)
    }

    @Test func theCompositorNeverKeepsATrackAlive() throws {
        let compositor = runningCompositor()
        weak var freed: VideoTrack?
        do {
            let camera = track("camera", Palette.red)
            freed = camera
            compositor.setTemplate(CompositeTemplate(positions: [
                VideoTrackPositionInfo(track: camera, normalizedRect: .full, placeholder: .color(Palette.magenta)),
            ]))
            #expect(try picture(compositor).pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2))
        }
        #expect(freed == nil)
        #expect(try picture(compositor).pixel(x: 320, y: 180) == Palette.magenta)
    }

    @Test func labelsAndTheDebugOverlayGoThroughTheLabelRenderer() throws {
        let alice = track("alice/camera", Palette.red)
        let compositor = runningCompositor()
        let renderer = RecordingLabelRenderer()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: alice, normalizedRect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 1), label: "Alice"),
        ]))
        // Without a renderer nothing is drawn: the tile is all the track's colour.
        #expect(try picture(compositor).pixel(x: 8, y: 8).isClose(to: Palette.red, tolerance: 2))
        compositor.labelRenderer = renderer
        compositor.showsDebugOverlay = true
        for _ in 0..<5 {
            clock.advance(by: .milliseconds(100))
            alice.push(solidFrame(Palette.red), now: clock.now())
            _ = try picture(compositor)
        }
        let names = renderer.labels.filter { $0.kind == .participantName }
        #expect(names.count == 5 && names.allSatisfy { $0.text == "Alice" && $0.tile == PixelRect(x: 0, y: 0, width: 320, height: 360) })
        let debug = try #require(renderer.labels.last { $0.kind == .debugInfo })
        // Six distinct frames drawn in the last second: the first one and the five new ones.
        #expect(debug.text == "alice/camera 320x240 first frame yes rendering yes outputs 1 6 fps")
    }

    @Test func theDebugOverlayWithoutARendererDrawsAMarker() throws {
        let alice = track("alice", Palette.red)
        let compositor = runningCompositor()
        compositor.showsDebugOverlay = true
        compositor.setTemplate(CompositeTemplate(positions: [VideoTrackPositionInfo(track: alice, normalizedRect: .full)]))
        let canvas = try picture(compositor)
        #expect(canvas.pixel(x: 8, y: 8) == YUVColor(y: 235, u: 128, v: 128))
        #expect(canvas.pixel(x: 320, y: 180).isClose(to: Palette.red, tolerance: 2))
    }

    /// One position's overlay (a template's `debugOverlay`): its tile framed green while its
    /// track renders, red once it is muted; the other tile untouched.
    @Test func aPositionsDebugOverlayFramesItsTileByRendering() throws {
        let alice = track("alice", Palette.red), bob = track("bob", Palette.blue)
        let compositor = runningCompositor()
        compositor.setTemplate(CompositeTemplate(positions: [
            VideoTrackPositionInfo(track: alice, normalizedRect: NormalizedRect(x: 0, y: 0, width: 0.5, height: 1), debugOverlay: true),
            VideoTrackPositionInfo(track: bob, normalizedRect: NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 1)),
        ]))
        var canvas = try picture(compositor)
        #expect(canvas.pixel(x: 0, y: 180).isClose(to: VideoCompositor.renderingBorder, tolerance: 3))
        #expect(canvas.pixel(x: 100, y: 180).isClose(to: Palette.red, tolerance: 2))
        #expect(canvas.pixel(x: 639, y: 180).isClose(to: Palette.blue, tolerance: 2), "no overlay on bob's tile")
        alice.isMuted = true
        canvas = try picture(compositor)
        #expect(canvas.pixel(x: 0, y: 180).isClose(to: VideoCompositor.notRenderingBorder, tolerance: 3))
    }

    @Test func aTrackReportsSizeFrameRateAndRendering() {
        let camera = VideoTrack(id: "camera")
        #expect(!camera.isRendering(now: clock.now()) && camera.frameSize == nil)
        for _ in 0..<30 {
            clock.advance(by: .milliseconds(40))
            camera.push(solidFrame(Palette.red, width: 640, height: 480), now: clock.now())
        }
        #expect(camera.isRendering(now: clock.now()))
        #expect(camera.frameSize == VideoSize(width: 640, height: 480))
        #expect(camera.frameRate(now: clock.now()) == 25)
    }
}
