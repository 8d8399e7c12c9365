import Wire

/// What a user asks a composite to look like, as `PUT /v1/rooms/{room}/layout` and
/// `tessera compose --template` both read it: a preset by name (`{"preset": "grid"}`), or a
/// template (`TemplateDescription`).
public enum LayoutRequest: Sendable, Hashable {
    /// A preset, recomputed as participants come and go and the speaker changes.
    case preset(LayoutPreset)
    /// A template, kept as given.
    case custom(TemplateDescription)

    /// The keys a layout body may hold: `preset` alone, or a template's.
    public static let shape: JSONShape = .either(
        key: "preset",
        then: .object(["preset": .string]),
        otherwise: .object([
            "canvas": .object(["width": .integer, "height": .integer, "fps": .integer, "background": .string]),
            "debugOverlay": .boolean,
            "positions": .array(.object([
                "participant": .string, "source": .string, "contentMode": .string, "rotation": .integer, "mirror": .boolean,
                "debugOverlay": .boolean,
                "rect": .object(["x": .number, "y": .number, "width": .number, "height": .number]),
            ])),
        ]))

    private struct PresetBody: Decodable { let preset: String }

    /// Reads a layout body: strict JSON, no unknown key, a known preset or a template that keeps
    /// every rule of `TemplateDescription.validate()`. The error names the field.
    public init(json bytes: [UInt8]) throws(JSONDocumentError) {
        let value: JSONValue
        do { value = try JSONValue(parsing: bytes) } catch { throw JSONDocumentError(field: "", reason: "not valid JSON: \(error)") }
        guard case .object = value else { throw JSONDocumentError(field: "", reason: "must be a JSON object: a template or {\"preset\": \"grid\"}") }
        if let preset = value["preset"] {
            if let problem = Self.shape.firstProblem(in: value) {
                throw JSONDocumentError(field: problem.path, reason: problem.unknownKey != nil ? "unknown key; a preset takes no other field" : problem.reason)
            }
            let names = LayoutPreset.allCases.map(\.rawValue).joined(separator: ", ")
            guard case .string(let name) = preset else { throw JSONDocumentError(field: "preset", reason: "must be a string, one of \(names)") }
            guard let known = LayoutPreset(rawValue: name) else {
                throw JSONDocumentError(field: "preset", reason: "unknown preset \"\(name.prefix(64))\" (one of \(names))")
            }
            self = .preset(known)
            return
        }
        let description = try StrictJSON.decode(TemplateDescription.self, from: bytes, shape: Self.shape)
        try description.validate()
        self = .custom(description)
    }

    /// The template this request gives for `participants` (in joining order) on `canvas`, with
    /// `activeSpeaker` in a preset's main tile.
    public func template(participants: [String], activeSpeaker: String? = nil, screenSharer: String? = nil,
                         canvas: TemplateDescription.Canvas) -> TemplateDescription {
        switch self {
        case .custom(let description):
            return description
        case .preset(let preset):
            return TemplateDescription(canvas: canvas, positions: preset.positions(participants: participants, activeSpeaker: activeSpeaker,
                                                                                   screenSharer: screenSharer))
        }
    }
}
