/// What a JSON document may hold, at every depth: which keys, and what kind of value each. Checked
/// before decoding, so a misspelt key is an error that names it ("`auth.secrte`: unknown key;
/// did you mean `secret`?") instead of a field silently left at its default, and a value of the
/// wrong kind is named by its path.
public indirect enum JSONShape: Sendable {
    /// Any value; its insides are not checked here.
    case any
    case string
    /// A number without a fraction, within Int's range.
    case integer
    case number
    case boolean
    /// `null`, or a value of this shape.
    case nullable(JSONShape)
    /// An object whose keys are all among these (each with the shape of its value).
    case object([String: JSONShape])
    /// An object with any keys, each value of this shape.
    case dictionary(JSONShape)
    /// An array whose every element has this shape.
    case array(JSONShape)
    /// One of several shapes, chosen by the key present: `{"preset": …}` or a template.
    case either(key: String, then: JSONShape, otherwise: JSONShape)

    /// The first thing in `value` that this shape does not allow, in document order: a key it
    /// does not know, or a value of the wrong kind.
    public func firstProblem(in value: JSONValue) -> JSONShapeProblem? {
        check(value, path: "")
    }

    private func check(_ value: JSONValue, path: String) -> JSONShapeProblem? {
        func wrongKind(_ expected: String) -> JSONShapeProblem {
            JSONShapeProblem(path: path, reason: "must be \(expected), not \(value.kindName)")
        }
        switch (self, value) {
        case (.any, _), (.string, .string), (.number, .number), (.boolean, .bool), (.nullable, .null):
            return nil
        case (.integer, .number(let number)):
            return number.rounded() == number && abs(number) < 9.0e15 ? nil : JSONShapeProblem(path: path, reason: "must be a whole number, not \(number)")
        case (.nullable(let shape), _):
            return shape.check(value, path: path)
        case (.object(let allowed), .object(let members)):
            for (key, member) in members {
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                guard let shape = allowed[key] else {
                    let suggestion = Self.nearest(to: key, among: allowed.keys)
                    return JSONShapeProblem(path: memberPath, reason: "unknown key" + (suggestion.map { "; did you mean `\($0)`?" } ?? ""),
                                            unknownKey: key, suggestion: suggestion)
                }
                if let found = shape.check(member, path: memberPath) { return found }
            }
            return nil
        case (.dictionary(let shape), .object(let members)):
            for (key, member) in members {
                if let found = shape.check(member, path: path.isEmpty ? key : "\(path).\(key)") { return found }
            }
            return nil
        case (.array(let element), .array(let elements)):
            for (index, item) in elements.enumerated() {
                if let found = element.check(item, path: "\(path)[\(index)]") { return found }
            }
            return nil
        case (.either(let key, let then, let otherwise), _):
            return (value[key] != nil ? then : otherwise).check(value, path: path)
        case (.string, _): return wrongKind("a string")
        case (.integer, _): return wrongKind("a whole number")
        case (.number, _): return wrongKind("a number")
        case (.boolean, _): return wrongKind("true or false")
        case (.object, _), (.dictionary, _): return wrongKind("an object")
        case (.array, _): return wrongKind("an array")
        }
    }

    /// The allowed key closest to `key` by edit distance (ignoring case), when it is close
    /// enough to be a likely typo.
    static func nearest(to key: String, among candidates: some Sequence<String>) -> String? {
        let typed = Array(key.lowercased().unicodeScalars)
        var best: (name: String, distance: Int)?
        for candidate in candidates.sorted() {
            let distance = editDistance(typed, Array(candidate.lowercased().unicodeScalars))
            if distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        guard let best, best.distance <= max(2, typed.count / 3) else { return nil }
        return best.name
    }

    /// Levenshtein distance with adjacent transpositions counted as one edit ("secrte").
    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            row[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { row[j] = min(row[j], previous2[j - 2] + 1) }
            }
            (previous2, previous, row) = (previous, row, previous2)
        }
        return previous[b.count]
    }
}

/// Where a document breaks its shape, and how.
public struct JSONShapeProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The dotted path of the value ("auth.secrte", "positions[0].contentmode"); empty for the
    /// whole document.
    public var path: String
    /// "unknown key; did you mean `secret`?", "must be a string, not a number".
    public var reason: String
    /// The key as written, when the problem is an unknown key.
    public var unknownKey: String?
    /// The allowed key it most likely meant.
    public var suggestion: String?

    public init(path: String, reason: String, unknownKey: String? = nil, suggestion: String? = nil) {
        self.path = path
        self.reason = reason
        self.unknownKey = unknownKey
        self.suggestion = suggestion
    }

    /// "`auth.secrte`: unknown key; did you mean `secret`?"
    public var description: String { path.isEmpty ? reason : "`\(path)`: \(reason)" }
}
