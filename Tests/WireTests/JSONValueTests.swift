import Testing
import Wire
import WireTesting

@Suite struct JSONValueTests {
    @Test func readsEveryKindOfValueAndKeepsMemberOrder() throws {
        let value = try JSONValue(parsing: #" {"b": [1, -2.5e2, 0.25], "a": {"t": true, "f": false, "n": null}, "s": "x\"\\\/\n\u00e9\ud83d\ude00"} "#)
        guard case .object(let members) = value else { Issue.record("not an object"); return }
        #expect(members.map(\.key) == ["b", "a", "s"])
        #expect(value["b"] == .array([.number(1), .number(-250), .number(0.25)]))
        #expect(value["a"] == .object([("t", .bool(true)), ("f", .bool(false)), ("n", .null)]))
        #expect(value["s"] == .string("x\"\\/\né😀"))
    }

    @Test(arguments: [
        ("{\"a\": 1,}", 1, 9, "expected a key in quotes"),
        ("{\n  \"http\": {\n    \"listen\": \"127.0.0.1:8080\"\n    \"maxBodyBytes\": 1\n  }\n}", 4, 5, "expected ',' or '}'"),
        ("[1, 2", 1, 6, "expected ',' or ']'"),
        ("{\"a\": tru}", 1, 7, "expected a value"),
        ("{\"a\": 01}", 1, 7, "may not start with 0"),
        ("{\"a\": \"open", 1, 7, "no closing quote"),
        ("{\"a\": 1, \"a\": 2}", 1, 10, "appears twice"),
        ("\"é\" x", 1, 5, "unexpected text"),
        ("{\"a\": \"\\q\"}", 1, 8, "unknown escape"),
        ("", 1, 1, "expected a value"),
    ])
    func syntaxErrorsSayWhereByLineAndColumn(text: String, line: Int, column: Int, reason: String) {
        #expect {
            try JSONValue(parsing: text)
        } throws: { error in
            guard let error = error as? JSONSyntaxError else { return false }
            return error.line == line && error.column == column && error.reason.contains(reason)
        }
    }

    @Test func deepNestingIsRefusedNotRecursedInto() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsing: deep) }
    }

    static let shape: JSONShape = .object([
        "auth": .object(["secret": .nullable(.string)]),
        "http": .object(["listen": .string, "maxBodyBytes": .integer]),
        "hear": .dictionary(.boolean),
        "positions": .array(.object(["contentMode": .string, "rect": .object(["x": .number])])),
    ])

    @Test(arguments: [
        (#"{"auth": {"secrte": "x"}}"#, "`auth.secrte`: unknown key; did you mean `secret`?"),
        (#"{"htp": {}}"#, "`htp`: unknown key; did you mean `http`?"),
        (#"{"positions": [{"rect": {"x": 0}}, {"contentmode": "fit"}]}"#, "`positions[1].contentmode`: unknown key; did you mean `contentMode`?"),
        (#"{"zebra": 1}"#, "`zebra`: unknown key"),
        (#"{"http": {"listen": 8080}}"#, "`http.listen`: must be a string, not a number"),
        (#"{"http": {"maxBodyBytes": 1.5}}"#, "`http.maxBodyBytes`: must be a whole number, not 1.5"),
        (#"{"hear": {"bob": "no"}}"#, "`hear.bob`: must be true or false, not a string"),
        (#"{"positions": {}}"#, "`positions`: must be an array, not an object"),
        (#"[]"#, "must be an object, not an array"),
    ])
    func shapeProblemsNameThePathAndTheNearestKey(text: String, message: String) throws {
        let problem = try #require(Self.shape.firstProblem(in: try JSONValue(parsing: text)))
        #expect(problem.description == message)
    }

    @Test func aDocumentThatKeepsItsShapeHasNoProblem() throws {
        let text = #"{"auth": {"secret": null}, "http": {"listen": "127.0.0.1:1", "maxBodyBytes": 2048}, "hear": {"bob": false}, "positions": []}"#
        #expect(Self.shape.firstProblem(in: try JSONValue(parsing: text)) == nil)
    }

    /// Seeded mutations and truncations of a config: the reader answers a value or an error, and
    /// never traps.
    @Test func mutatedAndTruncatedInputNeverTraps() {
        let seed = Array(#"{"http": {"listen": "127.0.0.1:8080", "maxBodyBytes": 65536}, "media": {"announce": ["127.0.0.1", "::1"]}, "auth": {"secret": "s\u00e9cret\n"}, "n": [0, -1.5e-3, true, false, null]}"#.utf8)
        var mutator = Mutator(seed: 0x150_0A)
        var parsed = 0
        for count in 0..<seed.count where (try? JSONValue(parsing: Array(seed[..<count]))) != nil { parsed += 1 }
        #expect(parsed <= 1)  // only a lone number prefix could parse; no prefix of an object does
        for _ in 0..<50_000 {
            if let value = try? JSONValue(parsing: mutator.mutate(seed)) { _ = Self.shape.firstProblem(in: value) }
        }
    }
}
