/// The contract's layout presets (docs/api.md): each places whoever is present, and is recomputed when
/// someone joins or leaves or the active speaker changes.
public enum LayoutPreset: String, Sendable, Hashable, Codable, CaseIterable {
    /// Everyone in an even grid, in joining order.
    case grid
    /// The active speaker large on top, the others in a strip along the bottom.
    case speaker
    /// The active speaker and the next person, each half the canvas (fit, not cropped).
    case sideBySide
    /// The active speaker on the whole canvas, the next person small in the bottom right corner.
    case pip

    /// Most tiles in the speaker layout's strip; more participants are not shown there.
    public static let maxStripTiles = 6

    /// The positions for `participants` (in joining order), with `activeSpeaker` first where the
    /// preset has a main tile (the first participant when nobody speaks). A participant sharing
    /// a screen shows the screen in the main tile instead of the camera.
    public func positions(participants: [String], activeSpeaker: String?, screenSharer: String? = nil)
        -> [TemplateDescription.Position]
    {
        guard !participants.isEmpty else { return [] }
        let main = screenSharer.flatMap { participants.contains($0) ? $0 : nil }
            ?? activeSpeaker.flatMap { participants.contains($0) ? $0 : nil } ?? participants[0]
        let mainSource: TemplateDescription.Source = main == screenSharer ? .screen : .camera
        let mainMode: ContentMode = mainSource == .screen ? .fit : .fill
        // A shared screen takes the main tile of the grid too; the strip then shows every camera,
        // the sharer's among them.
        let others = mainSource == .screen ? participants : participants.filter { $0 != main }
        switch mainSource == .screen && self == .grid ? .speaker : self {
        case .grid:
            return Self.grid(count: participants.count).enumerated().map { index, rect in
                TemplateDescription.Position(participant: participants[index], rect: rect, contentMode: .fill)
            }
        case .speaker:
            guard !others.isEmpty else {
                return [TemplateDescription.Position(participant: main, source: mainSource, rect: .full, contentMode: mainMode)]
            }
            let shown = Array(others.prefix(Self.maxStripTiles))
            // The strip is a quarter of the height; its tiles keep 16:9 and are centred.
            let stripHeight = 0.25, tileWidth = min(1.0 / Double(shown.count), stripHeight)
            let left = (1 - tileWidth * Double(shown.count)) / 2
            var positions = [TemplateDescription.Position(participant: main, source: mainSource,
                                                          rect: NormalizedRect(x: 0, y: 0, width: 1, height: 1 - stripHeight),
                                                          contentMode: mainMode)]
            for (index, person) in shown.enumerated() {
                positions.append(TemplateDescription.Position(
                    participant: person,
                    rect: NormalizedRect(x: left + tileWidth * Double(index), y: 1 - stripHeight, width: tileWidth, height: stripHeight),
                    contentMode: .fill))
            }
            return positions
        case .sideBySide:
            var positions = [TemplateDescription.Position(participant: main, source: mainSource,
                                                          rect: NormalizedRect(x: 0, y: 0, width: others.isEmpty ? 1 : 0.5, height: 1),
                                                          contentMode: .fit)]
            if let second = others.first {
                positions.append(TemplateDescription.Position(participant: second, rect: NormalizedRect(x: 0.5, y: 0, width: 0.5, height: 1),
                                                              contentMode: .fit))
            }
            return positions
        case .pip:
            var positions = [TemplateDescription.Position(participant: main, source: mainSource, rect: .full, contentMode: mainMode)]
            if let second = others.first {
                // A quarter of each side (a 1/4 scale of a same-size input: libyuv's fast path),
                // inset from the corner. Drawn last, so on top.
                positions.append(TemplateDescription.Position(participant: second, rect: NormalizedRect(x: 0.73, y: 0.73, width: 0.25, height: 0.25),
                                                              contentMode: .fill))
            }
            return positions
        }
    }

    /// `count` equal tiles, rows filled left to right, the last row centred. Columns are the
    /// smallest number that gives at most as many rows (so 16:9 tiles stay close to 16:9).
    static func grid(count: Int) -> [NormalizedRect] {
        guard count > 0 else { return [] }
        var columns = 1
        while columns * columns < count { columns += 1 }
        let rows = (count + columns - 1) / columns
        let width = 1 / Double(columns), height = 1 / Double(rows)
        return (0..<count).map { index in
            let row = index / columns, column = index % columns
            let inRow = row == rows - 1 ? count - row * columns : columns
            let left = (1 - width * Double(inRow)) / 2
            return NormalizedRect(x: left + width * Double(column), y: height * Double(row), width: width, height: height)
        }
    }
}
