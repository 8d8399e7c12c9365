import Foundation
import Media
import Observation
import Wire

/// Draws one canvas per `tick(now:)` from a `CompositeTemplate`: the room's composite picture.
///
/// The seed's semantics hold exactly:
/// - `outputTrack` is nil until `start()`; every `start()` makes a new output track and ends the
///   old one, which sends nothing more.
/// - `stop()` clears the template (`currentTemplate` becomes nil) and ends the output track.
/// - `setTemplate(_:)` while running takes effect on the next picture.
///
/// Each tick fills the canvas with `background`, then draws each position in drawing order: the
/// track's latest frame turned by its `rotation`, then scaled straight into the position's
/// rectangle (`.fill` crops the centred excess, `.fit` leaves letterbox bars in the background
/// colour), mirrored if asked. A position whose track is muted, ended, freed or stalled (no frame
/// for 2 s) shows its placeholder, never a frozen frame. Tracks are held weakly, through the
/// template. Sans-IO: the host's loop (or a manual clock) calls `tick(now:)` every 1/`fps`.
/// Confined to its room's loop.
public final class VideoCompositor: Observable {
    /// Names the compositor's output tracks ("<id>/composite/1", … one per `start()`).
    public let id: String
    /// Pictures per second the host should tick at (1…60); the compositor itself keeps no time.
    public var fps: Int {
        didSet { fps = min(max(fps, 1), 60) }
    }
    /// The canvas size in pixels; a change takes effect on the next picture.
    public var canvasSize: VideoSize {
        didSet {
            canvasSize = VideoSize(width: min(max(canvasSize.width, 2), 16384), height: min(max(canvasSize.height, 2), 16384))
        }
    }
    /// The canvas size as the seed names it (seed 004): `canvasSize` in points of one pixel,
    /// rounded to whole pixels when set.
    public var resolutionSize: CGSize {
        get { CGSize(width: canvasSize.width, height: canvasSize.height) }
        set { canvasSize = VideoSize(width: Int(newValue.width.rounded()), height: Int(newValue.height.rounded())) }
    }
    /// Shown where no tile is, in letterbox bars, and as the default placeholder.
    public var background: YUVColor
    /// Draws participant names (and the debug overlay's text) on tiles; nil draws no text.
    public var labelRenderer: (any TileLabelRenderer)?
    /// Draws on each position its track's id, resolution and frames drawn in the last second
    /// (through `labelRenderer`; without one, a small marker and a bar as long as that rate).
    public var showsDebugOverlay = false
    /// Between `start()` and `stop()`. Observable: its changes notify (Observation).
    public private(set) var isRunning: Bool {
        get {
            observation.access(self, keyPath: \.isRunning)
            return running
        }
        set { observation.withMutation(of: self, keyPath: \.isRunning) { running = newValue } }
    }
    private var running = false
    /// Where the pictures go: nil until `start()`, a new track on each `start()`.
    public private(set) var outputTrack: VideoTrack?
    /// The layout drawn on the next tick; nil after `stop()`. Observable: its changes notify.
    public private(set) var currentTemplate: CompositeTemplate? {
        get {
            observation.access(self, keyPath: \.currentTemplate)
            return template
        }
        set { observation.withMutation(of: self, keyPath: \.currentTemplate) { template = newValue } }
    }
    private var template: CompositeTemplate? { didSet { coverage = nil } }
    private let observation = ObservationRegistrar()
    /// Whether the template's tiles cover a canvas of `size` exactly, each on even pixels.
    private var coverage: (size: VideoSize, covers: Bool)?

    /// Two canvases drawn alternately: the output track holds the latest picture while the next
    /// is drawn into the other, so neither is copied or reallocated in steady state.
    private var canvases: [I420Frame?] = [nil, nil]
    private var nextCanvas = 0
    private var starts = 0
    /// Per position of the current template: what was drawn, for the debug overlay.
    private var tileStatistics: [TileStatistics] = []

    /// A stopped compositor of `canvasSize` pictures at `fps` on `background`.
    public init(id: String = "video", canvasSize: VideoSize = VideoSize(width: 1280, height: 720), fps: Int = 30,
                background: YUVColor = YUVColor(hex: TemplateDescription.Canvas.defaultBackground) ?? .black) {
        self.id = id
        self.canvasSize = VideoSize(width: min(max(canvasSize.width, 2), 16384), height: min(max(canvasSize.height, 2), 16384))
        self.fps = min(max(fps, 1), 60)
        self.background = background
    }

    /// The seed's compositor: `resolutionSize` as a `CGSize`.
    public convenience init(resolutionSize: CGSize, fps: Int = 30) {
        self.init(canvasSize: VideoSize(width: Int(resolutionSize.width.rounded()), height: Int(resolutionSize.height.rounded())), fps: fps)
    }

    /// The time between ticks at `fps`.
    public var tickInterval: Duration { .seconds(1) / fps }

    /// Starts drawing into a new `outputTrack`; the previous output track (if any) ends. Calling
    /// it while running keeps the template and only replaces the output track.
    public func start() {
        outputTrack?.end()
        starts += 1
        outputTrack = VideoTrack(id: "\(id)/composite/\(starts)")
        isRunning = true
    }

    /// Stops: clears the template and ends the output track (`outputTrack` stays readable as an
    /// ended track until the next `start()`).
    public func stop() {
        currentTemplate = nil
        tileStatistics = []
        outputTrack?.end()
        isRunning = false
        canvases = [nil, nil]
    }

    /// Uses `template` from the next picture on.
    public func setTemplate(_ template: CompositeTemplate) {
        currentTemplate = template
        tileStatistics = Array(repeating: TileStatistics(), count: template.positions.count)
    }

    /// Draws one picture at `now` and pushes it to `outputTrack`. Does nothing while stopped.
    public func tick(now: Instant) {
        guard isRunning, let outputTrack else { return }
        let size = canvasSize
        var canvas: I420Frame
        if let kept = canvases[nextCanvas], kept.width == size.width, kept.height == size.height {
            canvas = kept
        } else {
            canvas = I420Frame(width: size.width, height: size.height)
        }
        // Let go of the array's reference so that the buffer is unique and drawn in place.
        canvases[nextCanvas] = nil
        // Every pixel of a canvas the tiles cover is drawn by its tile (a picture, a placeholder,
        // letterbox bars in the background): filling it first would be drawn over.
        if !tilesCover(size) { canvas.fill(canvas.bounds, with: background) }
        if let template = currentTemplate {
            for (index, position) in template.positions.enumerated() {
                drawTile(position, index: index, on: &canvas, now: now)
            }
        }
        canvas.timestamp = now
        outputTrack.push(canvas, now: now)
        canvases[nextCanvas] = canvas
        nextCanvas = 1 - nextCanvas
    }

    /// Whether the template's tiles cover a canvas of `size`: on even pixels (as pictures are
    /// drawn), inside it, not overlapping, their areas adding up to its own. Kept until the
    /// template or the size changes.
    private func tilesCover(_ size: VideoSize) -> Bool {
        if let coverage, coverage.size == size { return coverage.covers }
        let bounds = PixelRect(x: 0, y: 0, width: size.width, height: size.height)
        let tiles = (template?.positions ?? []).map { $0.normalizedRect.pixels(in: size) }
        var covers = tiles.allSatisfy { !$0.isEmpty && $0.evenAligned(within: bounds) == $0 && $0.clipped(to: bounds) == $0 }
            && tiles.reduce(0) { $0 + $1.width * $1.height } == size.width * size.height
        for (index, tile) in tiles.enumerated() where covers {
            covers = tiles[(index + 1)...].allSatisfy { $0.clipped(to: tile).isEmpty }
        }
        coverage = (size, covers)
        return covers
    }

    private func drawTile(_ position: VideoTrackPositionInfo, index: Int, on canvas: inout I420Frame, now: Instant) {
        let tile = position.normalizedRect.pixels(in: VideoSize(width: canvas.width, height: canvas.height))
        guard !tile.isEmpty else { return }
        let track = position.track
        if let track, drawPicture(of: track, for: position, in: tile, on: &canvas, now: now) {
            if index < tileStatistics.count { tileStatistics[index].drew(frameNumber: track.framesReceived, now: now) }
        } else {
            switch position.placeholder {
            case .color(let color)?: canvas.fill(tile, with: color)
            case .picture(let still)?: place(still, in: tile, contentMode: position.contentMode, on: &canvas)
            case nil: canvas.fill(tile, with: background)
            }
        }
        if let label = position.label, let labelRenderer {
            labelRenderer.drawLabel(label, kind: .participantName, in: tile, on: &canvas)
        }
        if showsDebugOverlay || position.debugOverlay {
            let drawn = index < tileStatistics.count ? tileStatistics[index].framesDrawn(now: now) : 0
            drawDebugOverlay(track: track, framesDrawn: drawn, in: tile, on: &canvas, now: now)
        }
    }

    /// Draws `track`'s picture at `now` into `tile`, turned and mirrored as `position` asks;
    /// false when it has none to show. An upright picture is drawn from where it is (a lent one
    /// from its decoder's buffer), a turned one from a turned copy.
    private func drawPicture(of track: VideoTrack, for position: VideoTrackPositionInfo, in tile: PixelRect,
                             on canvas: inout I420Frame, now: Instant) -> Bool {
        let rotation = position.rotation ?? track.rotation
        guard rotation == .none && !position.mirror else {
            guard var frame = track.latestFrame(now: now) else { return false }
            frame = frame.rotated(rotation)
            if position.mirror { frame = frame.mirrored() }
            place(frame, in: tile, contentMode: position.contentMode, on: &canvas)
            return true
        }
        return track.withLatestPicture(now: now) { place($0, in: tile, contentMode: position.contentMode, on: &canvas) } != nil
    }

    /// The debug overlay's border: green while the tile's track renders, red while it does not.
    public static let renderingBorder = YUVColor(red: 0, green: 200, blue: 0)
    public static let notRenderingBorder = YUVColor(red: 220, green: 0, blue: 0)

    /// The overlay's 2-pixel frame just inside `tile`.
    public static func drawDebugBorder(rendering: Bool, around tile: PixelRect, on canvas: inout I420Frame) {
        let width = max(1, min(2, tile.width / 4, tile.height / 4))
        for edge in [PixelRect(x: tile.x, y: tile.y, width: tile.width, height: width),
                     PixelRect(x: tile.x, y: tile.y + tile.height - width, width: tile.width, height: width),
                     PixelRect(x: tile.x, y: tile.y, width: width, height: tile.height),
                     PixelRect(x: tile.x + tile.width - width, y: tile.y, width: width, height: tile.height)] {
            canvas.fill(edge.clipped(to: tile), with: rendering ? renderingBorder : notRenderingBorder)
        }
    }

    /// Scales `frame` straight into `tile` (no intermediate picture).
    private func place(_ frame: I420Frame, in tile: PixelRect, contentMode: ContentMode, on canvas: inout I420Frame) {
        frame.withView { place($0, in: tile, contentMode: contentMode, on: &canvas) }
    }

    private func place(_ frame: I420PictureView, in tile: PixelRect, contentMode: ContentMode, on canvas: inout I420Frame) {
        let source = VideoSize(width: frame.width, height: frame.height)
        switch contentMode {
        case .fill:
            canvas.draw(frame, from: TileGeometry.fillCrop(of: source, into: tile), at: tile)
        case .fit:
            let target = TileGeometry.fitRect(of: source, into: tile)
            if target != tile { canvas.fill(tile, with: background) }  // the letterbox bars
            canvas.draw(frame, at: target)
        }
    }

    /// What the seed's overlay tells of a tile: its track's id (or none), resolution (or -),
    /// whether a first frame came, whether it renders, how many positions of this template use
    /// it, and the frames drawn in the last second; framed green while rendering, red when not.
    private func drawDebugOverlay(track: VideoTrack?, framesDrawn: Int, in tile: PixelRect, on canvas: inout I420Frame, now: Instant) {
        let rendering = track.map { !$0.isMuted && $0.isRendering(now: now) } ?? false
        Self.drawDebugBorder(rendering: rendering, around: tile, on: &canvas)
        if let labelRenderer {
            let outputs = track.map { track in currentTemplate?.positions.filter { $0.track === track }.count ?? 0 } ?? 0
            let text = "\(track?.id ?? "no track") \(track?.frameSize.map { "\($0)" } ?? "-") first frame \(track.map { $0.framesReceived > 0 } == true ? "yes" : "no") "
                + "rendering \(rendering ? "yes" : "no") outputs \(outputs) \(framesDrawn) fps"
            labelRenderer.drawLabel(text, kind: .debugInfo, in: tile, on: &canvas)
            return
        }
        // No text renderer: a white marker in the corner, and a bar 4 pixels per frame drawn.
        let white = YUVColor(y: 235, u: 128, v: 128)
        canvas.fill(PixelRect(x: tile.x + 4, y: tile.y + 4, width: 8, height: 8).clipped(to: tile), with: white)
        if framesDrawn > 0 {
            canvas.fill(PixelRect(x: tile.x + 16, y: tile.y + 6, width: 4 * framesDrawn, height: 4).clipped(to: tile), with: white)
        }
    }
}

/// Where a picture goes in a tile, for each content mode.
enum TileGeometry {
    /// `.fill`: the centred part of a `source`-sized picture that has `tile`'s aspect ratio (the
    /// rest is cropped), to be scaled over the whole tile.
    static func fillCrop(of source: VideoSize, into tile: PixelRect) -> PixelRect {
        let scale = max(Double(tile.width) / Double(source.width), Double(tile.height) / Double(source.height))
        let width = min(source.width, Int((Double(tile.width) / scale).rounded()))
        let height = min(source.height, Int((Double(tile.height) / scale).rounded()))
        return PixelRect(x: (source.width - width) / 2, y: (source.height - height) / 2, width: width, height: height)
    }

    /// `.fit`: the largest rectangle with the `source`'s aspect ratio inside `tile`, centred.
    static func fitRect(of source: VideoSize, into tile: PixelRect) -> PixelRect {
        let scale = min(Double(tile.width) / Double(source.width), Double(tile.height) / Double(source.height))
        let width = min(tile.width, Int((Double(source.width) * scale).rounded()))
        let height = min(tile.height, Int((Double(source.height) * scale).rounded()))
        return PixelRect(x: tile.x + (tile.width - width) / 2, y: tile.y + (tile.height - height) / 2, width: width, height: height)
    }
}

/// What one position drew lately, for the debug overlay.
struct TileStatistics {
    private var lastFrameNumber: UInt64?
    private var drawTimes: [Instant] = []

    /// Records that the frame numbered `frameNumber` was drawn at `now` (a frame drawn again is
    /// not counted twice).
    mutating func drew(frameNumber: UInt64, now: Instant) {
        guard frameNumber != lastFrameNumber else { return }
        lastFrameNumber = frameNumber
        drawTimes.removeAll { now - $0 >= .seconds(1) }
        drawTimes.append(now)
    }

    /// Distinct frames drawn in the second before `now`.
    func framesDrawn(now: Instant) -> Int {
        drawTimes.count { now - $0 < .seconds(1) }
    }
}
