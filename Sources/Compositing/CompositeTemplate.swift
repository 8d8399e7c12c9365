import Foundation
import Media

/// A rectangle as fractions of the canvas: (0, 0) is the top left, (1, 1) the bottom right.
public struct NormalizedRect: Sendable, Hashable, Codable {
    /// Left edge, from 0 (the canvas's left) to 1.
    public var x: Double
    /// Top edge, from 0 (the canvas's top) to 1.
    public var y: Double
    /// Width as a fraction of the canvas width.
    public var width: Double
    /// Height as a fraction of the canvas height.
    public var height: Double

    /// A rectangle at (`x`, `y`), `width` × `height`, all fractions of the canvas.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The seed's normalized rect (seed 004: a `CGRect` of fractions of the canvas).
    public init(_ rect: CGRect) {
        self.init(x: Double(rect.origin.x), y: Double(rect.origin.y), width: Double(rect.size.width), height: Double(rect.size.height))
    }

    /// As a `CGRect`.
    public var cgRect: CGRect { CGRect(x: x, y: y, width: width, height: height) }

    /// The whole canvas.
    public static let full = NormalizedRect(x: 0, y: 0, width: 1, height: 1)

    /// This rectangle in pixels on a `canvas`-sized picture. Edges are rounded, not sizes, so
    /// tiles that touch in fractions touch in pixels.
    public func pixels(in canvas: VideoSize) -> PixelRect {
        let left = Int((x * Double(canvas.width)).rounded()), top = Int((y * Double(canvas.height)).rounded())
        let right = Int(((x + width) * Double(canvas.width)).rounded())
        let bottom = Int(((y + height) * Double(canvas.height)).rounded())
        return PixelRect(x: left, y: top, width: right - left, height: bottom - top)
    }
}

/// How a picture is placed in its rectangle when the aspect ratios differ.
public enum ContentMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Scaled to cover the whole rectangle; the excess is cropped, centred.
    case fill
    /// Scaled to fit inside the rectangle; the rest is letterbox bars in the background colour.
    case fit
}

/// What a position shows while its track has no picture to show (muted, ended, stalled for 2 s,
/// or freed).
public enum TilePlaceholder {
    /// A solid colour over the position's rectangle.
    case color(YUVColor)
    /// A still picture (an avatar, "camera off"), placed with the position's content mode.
    case picture(I420Frame)
}

/// One tile of a `CompositeTemplate`: which track goes where, how it is fitted, and what shows
/// when it has no picture. The track is held weakly: a template never keeps a track alive.
public struct VideoTrackPositionInfo {
    /// The track drawn here; nil once it has been freed (the placeholder shows).
    public weak var track: VideoTrack?
    /// Where on the canvas, as fractions of its size.
    public var normalizedRect: NormalizedRect
    /// `.fill` (cover and crop) or `.fit` (letterbox).
    public var contentMode: ContentMode
    /// Flips the picture left to right (a self-view), after turning it.
    public var mirror: Bool
    /// Turns the picture this much instead of the track's own `rotation`; nil: the track's.
    public var rotation: VideoRotation?
    /// Draws the debug overlay on this tile (as `VideoCompositor.showsDebugOverlay` does on all).
    public var debugOverlay: Bool
    /// Shown while the track has no picture; nil shows the canvas background.
    public var placeholder: TilePlaceholder?
    /// The participant's name, drawn by the compositor's `TileLabelRenderer` if it has one.
    public var label: String?

    /// A position showing `track` in `normalizedRect`.
    public init(track: VideoTrack, normalizedRect: NormalizedRect, contentMode: ContentMode = .fill,
                mirror: Bool = false, rotation: VideoRotation? = nil, placeholder: TilePlaceholder? = nil, label: String? = nil,
                debugOverlay: Bool = false) {
        self.track = track
        self.normalizedRect = normalizedRect
        self.contentMode = contentMode
        self.mirror = mirror
        self.rotation = rotation
        self.debugOverlay = debugOverlay
        self.placeholder = placeholder
        self.label = label
    }

    /// The seed's position (seed 004): `normalizedRect` a `CGRect` of fractions of the canvas.
    public init(track: VideoTrack, normalizedRect: CGRect, contentMode: ContentMode = .fill) {
        self.init(track: track, normalizedRect: NormalizedRect(normalizedRect), contentMode: contentMode)
    }
}

/// A layout: positions in drawing order (later ones are drawn over earlier ones).
public struct CompositeTemplate {
    /// The tiles, first drawn first.
    public var positions: [VideoTrackPositionInfo]

    /// A template of `positions` in drawing order.
    public init(positions: [VideoTrackPositionInfo]) {
        self.positions = positions
    }

    /// The seed's name for a template's positions (seed 004).
    public init(trackPositions: [VideoTrackPositionInfo]) {
        self.init(positions: trackPositions)
    }

    /// The positions, by the seed's name.
    public var trackPositions: [VideoTrackPositionInfo] {
        get { positions }
        set { positions = newValue }
    }
}

/// What a label on a tile says.
public enum TileLabelKind: Sendable, Hashable {
    /// The participant's name (the position's `label`).
    case participantName
    /// The debug overlay: track id, resolution, frames drawn in the last second.
    case debugInfo
}

/// Draws text on a tile (FreeType, written elsewhere). The `VideoCompositor` calls it, if it has
/// one, after drawing each tile; without one it draws no text.
public protocol TileLabelRenderer {
    /// Draws `text` of kind `kind` within `tile` (pixels, already on the canvas) on `canvas`.
    func drawLabel(_ text: String, kind: TileLabelKind, in tile: PixelRect, on canvas: inout I420Frame)
}
