import Media

/// Draws tile labels with FreeType (``TextRenderer``, DejaVu fonts): the `VideoCompositor`'s
/// `labelRenderer` for participant names and the debug overlay.
///
/// A participant's name goes at the bottom left of its tile in bold, the debug overlay's text at
/// the top left in a monospaced font, each on a dark plate so that it reads on any picture. The
/// text size follows the tile's height (a tenth of it for names, an eighteenth for the overlay,
/// within `nameHeights` and `debugHeights`); text too long for the tile is shortened with an
/// ellipsis, and cut at the tile's edge if even that is too wide. Nothing is drawn outside the tile.
///
/// Not `Sendable` and not thread-safe, like the `TextRenderer`s it owns: one per compositor.
public final class TextLabelRenderer: TileLabelRenderer {
    /// The text's colour.
    public var textColor: YUVColor
    /// The plate behind the text; nil draws the text straight on the picture.
    public var plateColor: YUVColor?
    /// The range of font sizes (pixels per em) for participant names.
    public var nameHeights: ClosedRange<Int> = 12...40
    /// The range of font sizes (pixels per em) for the debug overlay.
    public var debugHeights: ClosedRange<Int> = 10...20

    private let nameRenderer: TextRenderer
    private let debugRenderer: TextRenderer

    /// A renderer drawing names in `nameFont` and the debug overlay in `debugFont`, in
    /// `textColor` on `plateColor`. Throws when a font cannot be found or loaded.
    public init(nameFont: TextRenderer.Font = .sansBold, debugFont: TextRenderer.Font = .mono,
                textColor: YUVColor = YUVColor(y: 235, u: 128, v: 128),
                plateColor: YUVColor? = YUVColor(y: 32, u: 128, v: 128)) throws(TextRendererError) {
        nameRenderer = try TextRenderer(font: nameFont)
        debugRenderer = try TextRenderer(font: debugFont)
        self.textColor = textColor
        self.plateColor = plateColor
    }

    /// Draws `text` within `tile` on `canvas`: a name at the bottom left, debug text at the top
    /// left.
    public func drawLabel(_ text: String, kind: TileLabelKind, in tile: PixelRect, on canvas: inout I420Frame) {
        let tile = tile.clipped(to: canvas.bounds)
        guard !tile.isEmpty, !text.isEmpty else { return }
        let renderer: TextRenderer
        let pixelHeight: Int
        switch kind {
        case .participantName:
            renderer = nameRenderer
            pixelHeight = Self.clamp(tile.height / 10, to: nameHeights)
        case .debugInfo:
            renderer = debugRenderer
            pixelHeight = Self.clamp(tile.height / 18, to: debugHeights)
        }
        let margin = max(2, pixelHeight / 3), padding = max(2, pixelHeight / 4)
        let (text, size) = Self.fitted(text, renderer: renderer, pixelHeight: pixelHeight,
                                       width: tile.width - 2 * margin - 2 * padding)
        let width = min(size.width + 2 * padding, tile.width - 2 * margin)
        let height = min(size.height + 2 * padding, tile.height - 2 * margin)
        guard width > 0, height > 0 else { return }
        let y = kind == .participantName ? tile.y + tile.height - margin - height : tile.y + margin
        // `fill` works on whole 2×2 chroma blocks: even edges keep the plate inside the tile and
        // the text inside the plate.
        let plate = Self.evenInside(PixelRect(x: tile.x + margin, y: y, width: width, height: height))
        guard !plate.isEmpty else { return }
        if let plateColor { canvas.fill(plate, with: plateColor) }
        renderer.draw(text, into: &canvas, centeredIn: plate, pixelHeight: pixelHeight, color: textColor)
    }

    /// `text`, shortened with an ellipsis until it is at most `width` wide (if it can be), and
    /// its size.
    private static func fitted(_ text: String, renderer: TextRenderer, pixelHeight: Int, width: Int)
        -> (String, TextSize)
    {
        var size = renderer.measure(text, pixelHeight: pixelHeight)
        guard size.width > width else { return (text, size) }
        var kept = Array(text.prefix(256))  // a name, not a novel: bound the measuring
        var shortened = text
        while size.width > width, !kept.isEmpty {
            kept.removeLast()
            shortened = String(kept).trimmingSuffixSpaces() + "…"
            size = renderer.measure(shortened, pixelHeight: pixelHeight)
        }
        return (shortened, size)
    }

    private static func clamp(_ value: Int, to range: ClosedRange<Int>) -> Int {
        min(max(value, range.lowerBound), range.upperBound)
    }

    /// The largest rectangle with even edges inside `rect`.
    private static func evenInside(_ rect: PixelRect) -> PixelRect {
        let left = (rect.x + 1) & ~1, top = (rect.y + 1) & ~1
        let right = (rect.x + rect.width) & ~1, bottom = (rect.y + rect.height) & ~1
        return PixelRect(x: left, y: top, width: max(0, right - left), height: max(0, bottom - top))
    }
}

extension String {
    /// Without trailing spaces ("Alice B" shortened to "Alice " reads "Alice…", not "Alice …").
    fileprivate func trimmingSuffixSpaces() -> String {
        var result = Substring(self)
        while result.last == " " { result = result.dropLast() }
        return String(result)
    }
}
