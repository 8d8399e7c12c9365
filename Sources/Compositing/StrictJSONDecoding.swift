import Foundation
import Wire

/// A JSON document written by a person (a config file, a template, an API body) that cannot
/// be used, with a message that says where: a syntax error by line and column, an unknown key
/// by its path and the key it most likely meant, a wrong value by its path.
public struct JSONDocumentError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The dotted path of the field at fault ("auth.secret", "positions[0].rect"); empty for a
    /// syntax error or the whole document.
    public var field: String
    /// What is wrong, in a sentence a user can act on.
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { field.isEmpty ? reason : "`\(field)`: \(reason)" }
}

public enum StrictJSON {
    /// Parses `bytes` strictly (`JSONValue`), refuses what `shape` does not allow (unknown keys,
    /// values of the wrong kind), then decodes `T`, turning what `DecodingError`s remain into a
    /// path and a plain reason.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], shape: JSONShape) throws(JSONDocumentError) -> T {
        let value: JSONValue
        do { value = try JSONValue(parsing: bytes) } catch { throw JSONDocumentError(field: "", reason: "not valid JSON: \(error)") }
        if let problem = shape.firstProblem(in: value) { throw JSONDocumentError(field: problem.path, reason: problem.reason) }
        do { return try JSONDecoder().decode(T.self, from: Data(bytes)) } catch { throw describe(error) }
    }

    /// A `DecodingError` as the field it is about and what is wrong with it.
    public static func describe(_ error: any Error) -> JSONDocumentError {
        func path(_ context: DecodingError.Context, appending key: CodingKey? = nil) -> String {
            var text = ""
            for component in context.codingPath + (key.map { [$0] } ?? []) {
                if let index = component.intValue { text += "[\(index)]" } else { text += text.isEmpty ? component.stringValue : ".\(component.stringValue)" }
            }
            return text
        }
        func kind(_ type: Any.Type) -> String {
            switch type {
            case is String.Type: "a string"
            case is Bool.Type: "true or false"
            case is Int.Type, is Int64.Type, is UInt16.Type: "a whole number"
            case is Double.Type: "a number"
            default: "a value of another kind (see the docs)"
            }
        }
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            return JSONDocumentError(field: path(context), reason: "must be \(kind(type))")
        case DecodingError.valueNotFound(let type, let context):
            return JSONDocumentError(field: path(context), reason: "must be \(kind(type)), not null")
        case DecodingError.keyNotFound(let key, let context):
            return JSONDocumentError(field: path(context, appending: key), reason: "is missing")
        case DecodingError.dataCorrupted(let context):
            // Foundation says "Cannot initialize X from invalid String value y" for an unknown
            // enum case; the caller's own checks give better words where they matter.
            return JSONDocumentError(field: path(context), reason: context.debugDescription)
        default:
            return JSONDocumentError(field: "", reason: "\(error)")
        }
    }
}

