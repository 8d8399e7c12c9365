// Simulcast offers (RFC 8853) and their layers' rids (RFC 8851): what Chrome offers for a
// camera sent in three layers,
//
//     a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id
//     a=rid:q send
//     a=rid:h send
//     a=rid:f send
//     a=simulcast:send q;h;f
//
// and the answer that takes them: `a=rid:<id> recv` for each, and `a=simulcast:recv q;h;f`.
// Both attributes stay `.other` in `Attribute` (kept as written); these read their text.

/// `a=rid:<rid-id> <send|recv> [<params>]` (RFC 8851 §10).
public struct RIDAttribute: Sendable, Equatable {
    public enum Direction: String, Sendable, Equatable {
        case send, recv
    }

    /// The rid: letters, digits, `-` and `_` (RFC 8851 §10, rid-syntax), at most 255 bytes.
    public var id: String
    public var direction: Direction
    /// The restrictions and payload types as written (`pt=96;max-width=320`), if any.
    public var parameters: String?

    public init(id: String, direction: Direction, parameters: String? = nil) {
        self.id = id
        self.direction = direction
        self.parameters = parameters
    }

    /// Reads the text after `a=rid:`; nil when it breaks the syntax.
    public init?(attributeValue text: String) {
        let fields = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard fields.count >= 2, Self.isRID(fields[0]), let direction = Direction(rawValue: String(fields[1])) else { return nil }
        id = String(fields[0])
        self.direction = direction
        parameters = fields.count > 2 ? String(fields[2]) : nil
    }

    /// The text after `a=rid:`.
    public var attributeValue: String { [id, direction.rawValue, parameters].compactMap { $0 }.joined(separator: " ") }

    /// RFC 8851 §10: rid-id = 1*(alpha-numeric / "-" / "_"); RFC 8852 bounds it to 255 bytes.
    static func isRID(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 255
            && text.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }
}

/// `a=simulcast:` (RFC 8853 §5.1): the layers sent and received, each a list of alternatives
/// (`,`), the layers separated by `;`, a rid prefixed with `~` paused.
public struct SimulcastAttribute: Sendable, Equatable {
    public struct Layer: Sendable, Equatable {
        public var rid: String
        public var paused: Bool
        public init(rid: String, paused: Bool = false) {
            self.rid = rid
            self.paused = paused
        }
        var text: String { (paused ? "~" : "") + rid }
    }

    /// The layers the writer sends, each with its alternatives (the first is preferred).
    public var send: [[Layer]]
    /// The layers the writer receives.
    public var receive: [[Layer]]

    public init(send: [[Layer]] = [], receive: [[Layer]] = []) {
        self.send = send
        self.receive = receive
    }

    /// Reads the text after `a=simulcast:`; nil when it breaks the syntax (RFC 8853 §5.1:
    /// `send <list>`, `recv <list>`, or both, each direction at most once).
    public init?(attributeValue text: String) {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 2 || fields.count == 4 else { return nil }
        var send: [[Layer]]?
        var receive: [[Layer]]?
        for pair in stride(from: 0, to: fields.count, by: 2) {
            guard let layers = Self.layers(fields[pair + 1]) else { return nil }
            switch fields[pair] {
            case "send" where send == nil: send = layers
            case "recv" where receive == nil: receive = layers
            default: return nil
            }
        }
        self.send = send ?? []
        self.receive = receive ?? []
    }

    private static func layers(_ text: Substring) -> [[Layer]]? {
        var result: [[Layer]] = []
        for stream in text.split(separator: ";", omittingEmptySubsequences: false) {
            var alternatives: [Layer] = []
            for id in stream.split(separator: ",", omittingEmptySubsequences: false) {
                let paused = id.hasPrefix("~")
                let rid = paused ? id.dropFirst() : id
                guard RIDAttribute.isRID(rid) else { return nil }
                alternatives.append(Layer(rid: String(rid), paused: paused))
            }
            result.append(alternatives)
        }
        // A few layers make sense; hundreds are an attack on whoever walks them.
        return result.isEmpty || result.count > Self.maximumLayers ? nil : result
    }

    /// The most layers (`;`-separated streams) a direction may list.
    public static let maximumLayers = 8

    /// The text after `a=simulcast:`.
    public var attributeValue: String {
        func list(_ layers: [[Layer]]) -> String { layers.map { $0.map(\.text).joined(separator: ",") }.joined(separator: ";") }
        var parts: [String] = []
        if !send.isEmpty { parts += ["send", list(send)] }
        if !receive.isEmpty { parts += ["recv", list(receive)] }
        return parts.joined(separator: " ")
    }
}
