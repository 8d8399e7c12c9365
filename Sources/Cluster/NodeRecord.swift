import Foundation
import Wire

/// What a host says of itself in Redis (`tessera:node:<name>`, JSON, refreshed every second with
/// a 5 s expiry): how clients reach it, its rooms, and how much more it can take.
public struct NodeRecord: Sendable, Equatable {
    public struct Room: Sendable, Equatable {
        public var name: String
        public var participants: Int
        public var viewers: Int
        public init(name: String, participants: Int, viewers: Int = 0) {
            self.name = name
            self.participants = participants
            self.viewers = viewers
        }
    }

    public var name: String
    /// How clients reach the host: `http://HOST:PORT` or `https://…`, no path.
    public var url: String
    /// A draining host takes no new rooms; its open rooms go on.
    public var draining: Bool
    /// The machine's cores, and the cores the host's process used over the last second.
    public var cores: Int
    public var cpu: Double
    /// The estimate of cores it can still give (`CapacityModel.spare`); negative when over.
    public var spare: Double
    /// `limits.maxRooms`: a host with that many rooms takes no more, whatever its CPU.
    public var maxRooms: Int
    public var rooms: [Room]
    /// Viewers this host serves as an edge, of rooms other hosts own (their rooms are in the
    /// owners' records, not here).
    public var edgeViewers: Int

    public init(name: String, url: String, draining: Bool = false, cores: Int = 1, cpu: Double = 0, spare: Double = 0, maxRooms: Int = 100,
                rooms: [Room] = [], edgeViewers: Int = 0) {
        self.name = name
        self.url = url
        self.draining = draining
        self.cores = cores
        self.cpu = cpu
        self.spare = spare
        self.maxRooms = maxRooms
        self.rooms = rooms
        self.edgeViewers = edgeViewers
    }

    public var participants: Int { rooms.reduce(0) { $0 + $1.participants } }
    /// Every viewer the host serves: of its own rooms, and as an edge.
    public var viewers: Int { rooms.reduce(0) { $0 + $1.viewers } + edgeViewers }

    /// Bounds on what a record read back may hold: it comes from another process, so it is
    /// checked like any input.
    static let maximumRooms = 100_000
    static let maximumBytes = 4 << 20

    public enum ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        case syntax(String)
        case field(String, String)
        public var description: String {
            switch self {
            case .syntax(let reason): "node record: not JSON: \(reason)"
            case .field(let field, let reason): "node record: `\(field)` \(reason)"
            }
        }
    }

    /// The record as stored: compact JSON with sorted keys.
    public var json: [UInt8] {
        func escaped(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        func number(_ value: Double) -> String { value.isFinite ? String(format: "%.4f", value) : "0" }
        let rooms = rooms.map { #"{"name":\#(escaped($0.name)),"participants":\#($0.participants),"viewers":\#($0.viewers)}"# }
        let text = #"{"cores":\#(cores),"cpu":\#(number(cpu)),"draining":\#(draining),"edgeViewers":\#(edgeViewers),"#
            + #""maxRooms":\#(maxRooms),"name":\#(escaped(name)),"#
            + #""participants":\#(participants),"rooms":[\#(rooms.joined(separator: ","))],"spare":\#(number(spare)),"url":\#(escaped(url)),"#
            + #""version":1,"viewers":\#(viewers)}"#
        return Array(text.utf8)
    }

    /// Reads a stored record. Keys it does not know are ignored (a newer host may add some);
    /// every known one is checked.
    public init(json bytes: [UInt8]) throws(ParseError) {
        guard bytes.count <= Self.maximumBytes else { throw .syntax("over \(Self.maximumBytes) bytes") }
        let value: JSONValue
        do { value = try JSONValue(parsing: bytes) } catch { throw .syntax(error.description) }
        guard case .object = value else { throw .syntax("not an object") }
        func string(_ key: String, in object: JSONValue, _ path: String) throws(ParseError) -> String {
            guard case .string(let text)? = object[key] else { throw .field(path, "must be a string") }
            return text
        }
        func integer(_ key: String, in object: JSONValue, _ path: String, _ range: ClosedRange<Int>) throws(ParseError) -> Int {
            guard case .number(let number)? = object[key], number.rounded() == number, number >= Double(range.lowerBound),
                  number <= Double(range.upperBound) else { throw .field(path, "must be a whole number \(range.lowerBound)…\(range.upperBound)") }
            return Int(number)
        }
        func real(_ key: String, _ range: ClosedRange<Double>) throws(ParseError) -> Double {
            guard case .number(let number)? = value[key], number.isFinite, range.contains(number) else {
                throw .field(key, "must be a number \(range.lowerBound)…\(range.upperBound)")
            }
            return number
        }
        let name = try string("name", in: value, "name")
        guard ClusterNames.isValid(name) else { throw .field("name", "must be 1 to 64 of A-Z a-z 0-9 - _ .") }
        let url = try string("url", in: value, "url")
        guard ClusterNames.isValidURL(url) else { throw .field("url", "must be http://HOST:PORT or https://HOST:PORT") }
        guard case .bool(let draining)? = value["draining"] else { throw .field("draining", "must be true or false") }
        let cores = try integer("cores", in: value, "cores", 1...65_536)
        let cpu = try real("cpu", 0...65_536)
        let spare = try real("spare", -65_536...65_536)
        let maxRooms = try integer("maxRooms", in: value, "maxRooms", 0...1_000_000)
        guard case .array(let list)? = value["rooms"] else { throw .field("rooms", "must be an array") }
        guard list.count <= Self.maximumRooms else { throw .field("rooms", "holds over \(Self.maximumRooms) rooms") }
        var rooms: [Room] = []
        rooms.reserveCapacity(list.count)
        for (index, entry) in list.enumerated() {
            let path = "rooms[\(index)]"
            guard case .object = entry else { throw .field(path, "must be an object") }
            let roomName = try string("name", in: entry, path + ".name")
            guard ClusterNames.isValid(roomName) else { throw .field(path + ".name", "must be 1 to 64 of A-Z a-z 0-9 - _ .") }
            rooms.append(Room(name: roomName, participants: try integer("participants", in: entry, path + ".participants", 0...1_000_000),
                              viewers: try integer("viewers", in: entry, path + ".viewers", 0...1_000_000)))
        }
        // Absent in a record of a host from before edge hosts.
        let edgeViewers = value["edgeViewers"] == nil ? 0 : try integer("edgeViewers", in: value, "edgeViewers", 0...1_000_000)
        self.init(name: name, url: url, draining: draining, cores: cores, cpu: cpu, spare: spare, maxRooms: maxRooms, rooms: rooms,
                  edgeViewers: edgeViewers)
    }
}

/// The names Redis keys are made of, checked as the API checks room names and identities, so
/// that no key can be made to name another kind of key.
public enum ClusterNames {
    /// 1 to 64 of letters, digits, `-`, `_` and `.`.
    public static func isValid(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
        }
    }

    /// `http://HOST:PORT` or `https://…` with no path, query or user part, at most 512 bytes:
    /// what a redirect's `Location` is built on.
    public static func isValidURL(_ url: String) -> Bool {
        guard url.utf8.count <= 512 else { return false }
        let rest: Substring
        if url.hasPrefix("http://") { rest = url.dropFirst(7) } else if url.hasPrefix("https://") { rest = url.dropFirst(8) } else { return false }
        guard !rest.isEmpty else { return false }
        return rest.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._:[]".contains($0)) }
    }
}
