#if canImport(Glibc)
import Glibc
#endif
private import CFreeType

/// Why a `TextRenderer` could not be made.
public enum TextRendererError: Error, Equatable, CustomStringConvertible {
    /// No readable font file: the DejaVu font is not installed (Debian: `fonts-dejavu-core`,
    /// installed by `scripts/setup.sh`), or an explicit path does not exist.
    case fontNotFound(name: String, searched: [String])
    /// FreeType could not load the font file (FreeType's error code).
    case fontUnreadable(path: String, code: Int32)
    /// FreeType itself failed: which call and its error code.
    case freeType(operation: String, code: Int32)

    public var description: String {
        switch self {
        case .fontNotFound(let name, let searched):
            "font \(name) not found (searched \(searched.joined(separator: ", "))); install fonts-dejavu-core"
        case .fontUnreadable(let path, let code): "FreeType cannot load the font \(path) (error \(code))"
        case .freeType(let operation, let code): "\(operation) failed (FreeType error \(code))"
        }
    }
}

/// The size of a piece of text as `TextRenderer` draws it.
public struct TextSize: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}

/// Draws text into I420 pictures with FreeType: participants' names on placeholder tiles and the
/// debug overlay.
///
/// Each glyph is rendered anti-aliased (`FT_Load_Char` with `FT_LOAD_RENDER`: an 8-bit grey
/// coverage bitmap) and alpha-blended into the Y plane; U and V are blended by the mean coverage
/// of the 2×2 pixels each chroma sample covers. Text is laid out on one line by the glyphs'
/// advances (no kerning, no shaping: names and numbers, not typesetting); control characters
/// are skipped and a character the font lacks is drawn as its missing-glyph box.
///
/// Not thread-safe: each renderer owns one `FT_Library` and a glyph cache, and is used by one
/// thread (a compositor's). Make one per thread that draws.
public final class TextRenderer {
    /// Which font to load.
    public enum Font: Sendable, Hashable {
        case sans  // DejaVuSans.ttf
        case sansBold  // DejaVuSans-Bold.ttf
        case mono  // DejaVuSansMono.ttf
        /// A font file by path.
        case file(String)

        var fileName: String? {
            switch self {
            case .sans: "DejaVuSans.ttf"
            case .sansBold: "DejaVuSans-Bold.ttf"
            case .mono: "DejaVuSansMono.ttf"
            case .file: nil
            }
        }
    }

    /// Where distributions install DejaVu: Debian/Ubuntu, Fedora, Arch, Alpine, local installs.
    /// `TESSERA_FONT_DIR`, when set, is searched first.
    public static let fontDirectories = [
        "/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu-sans-fonts",
        "/usr/share/fonts/dejavu-sans-mono-fonts", "/usr/share/fonts/TTF", "/usr/share/fonts/dejavu",
        "/usr/share/fonts/truetype", "/usr/local/share/fonts",
    ]

    /// Heights outside this range are clamped (FreeType refuses 0; huge sizes cost memory).
    public static let pixelHeights = 4...512

    /// The path of the font file in use.
    public let fontPath: String
    private var library: FT_Library?
    private var face: FT_Face?
    private var currentPixelHeight = 0
    private var glyphs: [GlyphKey: Glyph] = [:]
    private static let glyphCacheLimit = 1024

    private struct GlyphKey: Hashable {
        var scalar: UInt32
        var pixelHeight: Int
    }

    /// A rendered glyph: its coverage bitmap and where it sits relative to the pen on the baseline.
    private struct Glyph {
        var coverage: [UInt8]  // width × rows, no padding
        var width: Int
        var rows: Int
        var left: Int  // from the pen to the bitmap's left edge
        var top: Int  // from the baseline up to the bitmap's top edge
        var advance: Int
    }

    /// Text placed on one line: each glyph's bitmap origin within a box that holds all its ink.
    private struct Layout {
        var placements: [(glyph: Glyph, x: Int, y: Int)]
        var size: TextSize
    }

    public init(font: Font = .sans) throws(TextRendererError) {
        let path = try Self.locate(font)
        fontPath = path
        var library: FT_Library?
        var status = FT_Init_FreeType(&library)
        guard status == 0, let library else { throw .freeType(operation: "FT_Init_FreeType", code: status) }
        var face: FT_Face?
        status = FT_New_Face(library, path, 0, &face)
        guard status == 0, let face else {
            FT_Done_FreeType(library)
            throw .fontUnreadable(path: path, code: status)
        }
        self.library = library
        self.face = face
    }

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }

    /// The font file for `font`: an explicit path as given, a DejaVu font from the first
    /// directory that holds it.
    public static func locate(_ font: Font) throws(TextRendererError) -> String {
        if case .file(let path) = font {
            guard access(path, R_OK) == 0 else { throw .fontNotFound(name: path, searched: [path]) }
            return path
        }
        let name = font.fileName ?? ""
        var directories = fontDirectories
        if let custom = getenv("TESSERA_FONT_DIR") { directories.insert(String(cString: custom), at: 0) }
        let candidates = directories.map { $0 + "/" + name }
        guard let found = candidates.first(where: { access($0, R_OK) == 0 }) else {
            throw .fontNotFound(name: name, searched: candidates)
        }
        return found
    }

    /// The size of the box `draw` fills for `text`: wide enough for every glyph's ink and
    /// advance, as tall as the font's line (ascender to descender) or its ink if taller.
    /// `pixelHeight` is the font's em size in pixels (a line is about 1.2 times that).
    public func measure(_ text: String, pixelHeight: Int) -> TextSize {
        layout(text, pixelHeight: pixelHeight).size
    }

    /// Draws `text` with its box's top left corner at (`x`, `y`) and returns the box, which may
    /// lie partly outside the picture (what lies outside is not drawn). With a `background`,
    /// the box is filled first (its chroma to the 2×2 blocks the box touches).
    @discardableResult
    public func draw(_ text: String, into frame: inout I420Frame, x: Int, y: Int, pixelHeight: Int,
                     color: YUVColor, background: YUVColor? = nil) -> PixelRect {
        let layout = layout(text, pixelHeight: pixelHeight)
        let box = PixelRect(x: x, y: y, width: layout.size.width, height: layout.size.height)
        composite(layout, into: &frame, box: box, clip: frame.bounds, color: color, background: background)
        return box
    }

    /// Draws `text` centred in `rect`, cut to `rect` when it does not fit (a name on a tile).
    @discardableResult
    public func draw(_ text: String, into frame: inout I420Frame, centeredIn rect: PixelRect, pixelHeight: Int,
                     color: YUVColor, background: YUVColor? = nil) -> PixelRect {
        let layout = layout(text, pixelHeight: pixelHeight)
        let box = PixelRect(x: rect.x + (rect.width - layout.size.width) / 2, y: rect.y + (rect.height - layout.size.height) / 2,
                            width: layout.size.width, height: layout.size.height)
        composite(layout, into: &frame, box: box, clip: rect.clipped(to: frame.bounds), color: color, background: background)
        return box.clipped(to: rect)
    }

    // MARK: - Layout

    private func layout(_ text: String, pixelHeight requested: Int) -> Layout {
        let pixelHeight = min(max(requested, Self.pixelHeights.lowerBound), Self.pixelHeights.upperBound)
        let (ascender, descender) = lineMetrics(pixelHeight: pixelHeight)
        var pen = 0
        var placed: [(glyph: Glyph, x: Int, top: Int)] = []
        var minX = 0, maxX = 0, minTop = 0, maxBottom = ascender - descender
        for scalar in text.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7F {
            guard let glyph = glyph(scalar.value, pixelHeight: pixelHeight) else { continue }
            let x = pen + glyph.left, top = ascender - glyph.top
            placed.append((glyph, x, top))
            if glyph.width > 0 && glyph.rows > 0 {
                minX = min(minX, x)
                maxX = max(maxX, x + glyph.width)
                minTop = min(minTop, top)
                maxBottom = max(maxBottom, top + glyph.rows)
            }
            pen += glyph.advance
            maxX = max(maxX, pen)
        }
        // Ink left of the pen's start (a negative bearing) or above the ascender moves everything.
        let placements = placed.map { (glyph: $0.glyph, x: $0.x - minX, y: $0.top - minTop) }
        return Layout(placements: placements, size: TextSize(width: maxX - minX, height: maxBottom - minTop))
    }

    private func lineMetrics(pixelHeight: Int) -> (ascender: Int, descender: Int) {
        guard setPixelHeight(pixelHeight), let metrics = face?.pointee.size?.pointee.metrics else { return (pixelHeight, 0) }
        // 26.6 fixed point; the descender is negative.
        return ((Int(metrics.ascender) + 63) >> 6, Int(metrics.descender) >> 6)
    }

    private func setPixelHeight(_ pixelHeight: Int) -> Bool {
        guard let face else { return false }
        if pixelHeight == currentPixelHeight { return true }
        guard FT_Set_Pixel_Sizes(face, 0, FT_UInt(pixelHeight)) == 0 else { return false }
        currentPixelHeight = pixelHeight
        return true
    }

    private func glyph(_ scalar: UInt32, pixelHeight: Int) -> Glyph? {
        let key = GlyphKey(scalar: scalar, pixelHeight: pixelHeight)
        if let cached = glyphs[key] { return cached }
        guard setPixelHeight(pixelHeight), let face, FT_Load_Char(face, FT_ULong(scalar), tessera_FT_LOAD_RENDER()) == 0,
              let slot = face.pointee.glyph else { return nil }
        let bitmap = slot.pointee.bitmap
        let width = Int(bitmap.width), rows = Int(bitmap.rows), pitch = Int(bitmap.pitch)
        var coverage = [UInt8](repeating: 0, count: width * rows)
        // FT_PIXEL_MODE_GRAY is what FT_RENDER_MODE_NORMAL gives; anything else is left blank.
        if let buffer = bitmap.buffer, bitmap.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue), abs(pitch) >= width {
            for row in 0..<rows {
                // A negative pitch means the rows run bottom-up from `buffer`.
                let start = pitch >= 0 ? row * pitch : (rows - 1 - row) * -pitch
                for column in 0..<width { coverage[row * width + column] = buffer[start + column] }
            }
        }
        let glyph = Glyph(coverage: coverage, width: width, rows: rows, left: Int(slot.pointee.bitmap_left),
                          top: Int(slot.pointee.bitmap_top), advance: Int((slot.pointee.advance.x + 32) >> 6))
        if glyphs.count >= Self.glyphCacheLimit { glyphs.removeAll(keepingCapacity: true) }
        glyphs[key] = glyph
        return glyph
    }

    // MARK: - Compositing

    /// Blends the layout's coverage into `frame` within `box ∩ clip`.
    private func composite(_ layout: Layout, into frame: inout I420Frame, box: PixelRect, clip: PixelRect,
                           color: YUVColor, background: YUVColor?) {
        let area = box.clipped(to: clip)
        guard !area.isEmpty else { return }
        // One coverage mask for the visible part of the box: overlapping glyphs take the maximum.
        var mask = [UInt8](repeating: 0, count: area.width * area.height)
        for placement in layout.placements {
            let glyph = placement.glyph
            for row in 0..<glyph.rows {
                let y = box.y + placement.y + row - area.y
                guard y >= 0 && y < area.height else { continue }
                for column in 0..<glyph.width {
                    let x = box.x + placement.x + column - area.x
                    guard x >= 0 && x < area.width else { continue }
                    let value = glyph.coverage[row * glyph.width + column]
                    if value > mask[y * area.width + x] { mask[y * area.width + x] = value }
                }
            }
        }
        let width = frame.width, chromaWidth = frame.chromaWidth
        frame.withMutablePlanes { luma, u, v in
            for row in 0..<area.height {
                for column in 0..<area.width {
                    let offset = (area.y + row) * width + area.x + column
                    let base = background?.y ?? luma[offset]
                    luma[offset] = Self.blend(color.y, over: base, alpha: Int(mask[row * area.width + column]))
                }
            }
            // Chroma: each sample covers a 2×2 block; blend by the block's mean coverage (pixels of
            // the block outside the area count as uncovered).
            let firstX = area.x / 2, lastX = (area.x + area.width - 1) / 2
            let firstY = area.y / 2, lastY = (area.y + area.height - 1) / 2
            for cy in firstY...lastY {
                for cx in firstX...lastX {
                    var sum = 0
                    for dy in 0..<2 {
                        let row = cy * 2 + dy - area.y
                        guard row >= 0 && row < area.height else { continue }
                        for dx in 0..<2 {
                            let column = cx * 2 + dx - area.x
                            guard column >= 0 && column < area.width else { continue }
                            sum += Int(mask[row * area.width + column])
                        }
                    }
                    let offset = cy * chromaWidth + cx
                    let alpha = (sum + 2) / 4
                    u[offset] = Self.blend(color.u, over: background?.u ?? u[offset], alpha: alpha)
                    v[offset] = Self.blend(color.v, over: background?.v ?? v[offset], alpha: alpha)
                }
            }
        }
    }

    private static func blend(_ top: UInt8, over base: UInt8, alpha: Int) -> UInt8 {
        UInt8((Int(top) * alpha + Int(base) * (255 - alpha) + 127) / 255)
    }
}
