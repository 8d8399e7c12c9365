import Media

/// A layout as the HTTP API and `tessera compose` carry it (JSON, docs/api.md "Templates"): a canvas
/// and positions that name participants rather than tracks. The host resolves it to a
/// `CompositeTemplate` (it knows the participants); this type only decodes and validates.
///
/// ```json
/// {"canvas": {"width": 1280, "height": 720, "fps": 30, "background": "#101010"},
///  "positions": [{"participant": "alice", "source": "camera",
///                 "rect": {"x": 0, "y": 0, "width": 0.5, "height": 1}, "contentMode": "fill"}]}
/// ```
public struct TemplateDescription: Sendable, Hashable, Codable {
    /// The output picture: size, frame rate, background.
    public struct Canvas: Sendable, Hashable, Codable {
        /// Pixels across, 2…3840.
        public var width: Int
        /// Pixels down, 2…2160.
        public var height: Int
        /// Pictures per second, 1…60.
        public var fps: Int
        /// `#rrggbb`, shown where no tile is and in letterbox bars. "#101010" when absent.
        public var background: String

        /// A canvas of `width` × `height` at `fps`, on `background`.
        public init(width: Int, height: Int, fps: Int = 30, background: String = Canvas.defaultBackground) {
            self.width = width
            self.height = height
            self.fps = fps
            self.background = background
        }

        /// The background when the JSON gives none.
        public static let defaultBackground = "#101010"

        /// Decodes a canvas; `fps` defaults to 30 and `background` to "#101010".
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            width = try container.decode(Int.self, forKey: .width)
            height = try container.decode(Int.self, forKey: .height)
            fps = try container.decodeIfPresent(Int.self, forKey: .fps) ?? 30
            background = try container.decodeIfPresent(String.self, forKey: .background) ?? Self.defaultBackground
        }

        /// The background as a colour; nil when it is not `#rrggbb`.
        public var backgroundColor: YUVColor? {
            TemplateDescription.isHexColor(background) ? YUVColor(hex: background) : nil
        }

        /// The size in pixels.
        public var size: VideoSize { VideoSize(width: width, height: height) }
    }

    /// Which of a participant's video tracks a position shows.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable {
        /// The first sending video m-line.
        case camera
        /// The second sending video m-line.
        case screen
    }

    /// One tile: whose track, where, and how it is fitted.
    public struct Position: Sendable, Hashable, Codable {
        /// The participant's identity (in `tessera compose`, an input's file name without extension).
        public var participant: String
        /// Camera or screen; "camera" when absent.
        public var source: Source
        /// Where on the canvas, as fractions of its size.
        public var rect: NormalizedRect
        /// "fill" or "fit"; "fill" when absent.
        public var contentMode: ContentMode
        /// Degrees clockwise (0, 90, 180, 270) to turn the picture, in place of the turn its
        /// sender asks for (the CVO header extension); absent: the sender's.
        public var rotation: Int?
        /// Flip the picture left to right (after turning it); absent: false.
        public var mirror: Bool?
        /// Draw the debug overlay on this tile; absent: as the template's `debugOverlay`.
        public var debugOverlay: Bool?

        /// A position showing `participant`'s `source` in `rect`.
        public init(participant: String, source: Source = .camera, rect: NormalizedRect, contentMode: ContentMode = .fill,
                    rotation: Int? = nil, mirror: Bool? = nil) {
            self.participant = participant
            self.source = source
            self.rect = rect
            self.contentMode = contentMode
            self.rotation = rotation
            self.mirror = mirror
        }

        /// `rotation` as the compositor takes it; nil: the track's own.
        public var videoRotation: VideoRotation? { rotation.flatMap(VideoRotation.init(rawValue:)) }

        /// Decodes a position; `source` defaults to camera and `contentMode` to fill.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            participant = try container.decode(String.self, forKey: .participant)
            source = try container.decodeIfPresent(Source.self, forKey: .source) ?? .camera
            rect = try container.decode(NormalizedRect.self, forKey: .rect)
            contentMode = try container.decodeIfPresent(ContentMode.self, forKey: .contentMode) ?? .fill
            rotation = try container.decodeIfPresent(Int.self, forKey: .rotation)
            mirror = try container.decodeIfPresent(Bool.self, forKey: .mirror)
            debugOverlay = try container.decodeIfPresent(Bool.self, forKey: .debugOverlay)
        }
    }

    /// The output picture.
    public var canvas: Canvas
    /// The tiles in drawing order.
    public var positions: [Position]
    /// Draw the debug overlay on every tile (what each track is, its size, whether it renders);
    /// absent: none, unless a position asks.
    public var debugOverlay: Bool?

    /// A description of `positions` (drawing order) on `canvas`.
    public init(canvas: Canvas, positions: [Position], debugOverlay: Bool? = nil) {
        self.canvas = canvas
        self.positions = positions
        self.debugOverlay = debugOverlay
    }

    /// Whether the tile of `position` shows the debug overlay.
    public func showsDebugOverlay(_ position: Position) -> Bool { position.debugOverlay ?? debugOverlay ?? false }

    /// The largest canvas accepted (4K UHD).
    public static let maximumCanvas = VideoSize(width: 3840, height: 2160)
    /// The frame rates accepted.
    public static let frameRates = 1...60

    /// Throws the first problem found, naming its field ("canvas.fps",
    /// "positions[1].rect.width"): canvas within 2…3840 × 2…2160, fps 1…60, background `#rrggbb`,
    /// a participant named in each position, rect edges within [0, 1] with width and height > 0.
    public func validate() throws(TemplateValidationError) {
        func fail(_ field: String, _ reason: String) -> TemplateValidationError {
            TemplateValidationError(field: field, reason: reason)
        }
        guard (2...Self.maximumCanvas.width).contains(canvas.width) else {
            throw fail("canvas.width", "must be 2…\(Self.maximumCanvas.width), not \(canvas.width)")
        }
        guard (2...Self.maximumCanvas.height).contains(canvas.height) else {
            throw fail("canvas.height", "must be 2…\(Self.maximumCanvas.height), not \(canvas.height)")
        }
        guard Self.frameRates.contains(canvas.fps) else {
            throw fail("canvas.fps", "must be \(Self.frameRates.lowerBound)…\(Self.frameRates.upperBound), not \(canvas.fps)")
        }
        guard Self.isHexColor(canvas.background) else {
            throw fail("canvas.background", "must be a colour #rrggbb, not \"\(canvas.background)\"")
        }
        let unit = 0.0...1.0
        for (index, position) in positions.enumerated() {
            let field = "positions[\(index)]"
            guard !position.participant.isEmpty else { throw fail("\(field).participant", "must name a participant") }
            if let rotation = position.rotation, position.videoRotation == nil {
                throw fail("\(field).rotation", "must be 0, 90, 180 or 270, not \(rotation)")
            }
            let rect = position.rect
            for (name, value) in [("x", rect.x), ("y", rect.y), ("width", rect.width), ("height", rect.height)] {
                guard unit.contains(value) else { throw fail("\(field).rect.\(name)", "must be within 0…1, not \(value)") }
            }
            guard rect.width > 0 else { throw fail("\(field).rect.width", "must be more than 0") }
            guard rect.height > 0 else { throw fail("\(field).rect.height", "must be more than 0") }
            // A little slack: 1/3 + 2/3 need not add up to exactly 1 in binary.
            guard rect.x + rect.width <= 1 + 1e-9 else {
                throw fail("\(field).rect.width", "x + width must be at most 1, not \(rect.x + rect.width)")
            }
            guard rect.y + rect.height <= 1 + 1e-9 else {
                throw fail("\(field).rect.height", "y + height must be at most 1, not \(rect.y + rect.height)")
            }
        }
    }

    /// Whether `text` is `#` and six hex digits.
    static func isHexColor(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        return utf8.count == 7 && utf8[0] == UInt8(ascii: "#")
            && utf8.dropFirst().allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
    }
}

/// A template description that breaks a rule: which field ("canvas.fps", "positions[2].rect.x")
/// and why, in a sentence a user can act on (a 400 answer's detail).
public typealias TemplateValidationError = JSONDocumentError
