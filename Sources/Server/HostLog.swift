import Foundation
import Synchronization

/// The host's log: one line per thing that happened (a room opened, a participant joined or
/// left, a recording stopped), in the format and from the level the config's `log` asks
/// (docs/config.md). Lines go to a sink whole, one call per line; the default sink writes them
/// to standard error, where systemd's journal or a supervisor picks them up. Thread-safe: the
/// media loop, the HTTP threads and the encoder threads all log.
public final class HostLog: Sendable {
    /// How much a line matters. The config chooses `info` (the default) or `debug`; `warning`
    /// and `error` lines are always written.
    public enum Level: String, Sendable, Codable, CaseIterable, Comparable {
        case debug, info, warning, error

        private var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// `text` for people reading a terminal or `journalctl`; `json` for a log shipper (one
    /// object per line).
    public enum Format: String, Sendable, Codable, CaseIterable {
        case text, json
    }

    /// Takes one whole line, its newline included.
    public typealias Sink = @Sendable (String) -> Void

    public let format: Format
    /// The least level written.
    public let level: Level
    private let sink: Sink
    private let now: @Sendable () -> Date

    public init(format: Format = .text, level: Level = .info, now: @escaping @Sendable () -> Date = { Date() },
                sink: @escaping Sink = HostLog.standardError) {
        self.format = format
        self.level = level
        self.now = now
        self.sink = sink
    }

    /// Whether a line of `level` would be written (for a caller whose fields cost something).
    public func isEnabled(_ level: Level) -> Bool { level >= self.level }

    /// Writes one line: `event` is its name (`joined`, `roomClosed`); `room` and `participant`
    /// (an identity) come first where they apply, then `fields` in their order. A nil value
    /// leaves its field out.
    public func log(_ level: Level, _ event: String, room: String? = nil, participant: String? = nil,
                    _ fields: KeyValuePairs<String, String?> = [:]) {
        guard isEnabled(level) else { return }
        var all: [(key: String, value: String)] = []
        if let room { all.append(("room", room)) }
        if let participant { all.append(("participant", participant)) }
        for (key, value) in fields { if let value { all.append((key, value)) } }
        sink(line(level, event, all, at: now()))
    }

    /// `log` with fields made at run time (the cluster's worker names its own), sorted by key.
    public func log(_ level: Level, _ event: String, fields: [String: String]) {
        guard isEnabled(level) else { return }
        sink(line(level, event, fields.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }, at: now()))
    }

    public func debug(_ event: String, room: String? = nil, participant: String? = nil, _ fields: KeyValuePairs<String, String?> = [:]) {
        log(.debug, event, room: room, participant: participant, fields)
    }

    public func info(_ event: String, room: String? = nil, participant: String? = nil, _ fields: KeyValuePairs<String, String?> = [:]) {
        log(.info, event, room: room, participant: participant, fields)
    }

    public func warning(_ event: String, room: String? = nil, participant: String? = nil, _ fields: KeyValuePairs<String, String?> = [:]) {
        log(.warning, event, room: room, participant: participant, fields)
    }

    public func error(_ event: String, room: String? = nil, participant: String? = nil, _ fields: KeyValuePairs<String, String?> = [:]) {
        log(.error, event, room: room, participant: participant, fields)
    }

    /// One line in this log's format, with its newline.
    /// Text: `2026-12-03T10:15:02.123Z info joined room=lobby participant=alice reason="consent lost"`.
    /// JSON: `{"time":"…","level":"info","event":"joined","room":"lobby","participant":"alice"}`.
    func line(_ level: Level, _ event: String, _ fields: [(key: String, value: String)], at date: Date) -> String {
        let time = Self.timestamp(date)
        switch format {
        case .text:
            var text = "\(time) \(level.rawValue) \(Self.textValue(event))"
            for (key, value) in fields { text += " \(key)=\(Self.textValue(value))" }
            return text + "\n"
        case .json:
            // Written by hand rather than by JSONSerialization so that time, level and event come
            // first and the fields keep the order they were given in (a dictionary has none).
            var text = #"{"time":"\#(time)","level":"\#(level.rawValue)","event":"\#(Self.jsonEscaped(event))""#
            for (key, value) in fields { text += #","\#(Self.jsonEscaped(key))":"\#(Self.jsonEscaped(value))""# }
            return text + "}\n"
        }
    }

    /// ISO 8601 in UTC to the millisecond, as the API's timestamps are. Made by hand from
    /// `gmtime_r`: a shared `ISO8601DateFormatter` is not Sendable, and one per line costs more.
    /// Rounded to the nearest millisecond: a `Date` holds its instant as a binary fraction, so
    /// cutting off would show .122 for an instant made as .123.
    static func timestamp(_ date: Date) -> String {
        let total = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(total >= 0 ? total / 1000 : (total - 999) / 1000)
        let milliseconds = Int(total - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))T"
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2)).\(padded(Int32(milliseconds), 3))Z"
    }

    /// A text line's value: bare when it is one plain word, else quoted with JSON's escapes, so
    /// that a value holding spaces, quotes or a newline (an error's description) stays on its
    /// line and cannot pass for another field.
    static func textValue(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { scalar in
            scalar.value > 0x20 && scalar != "\"" && scalar != "=" && scalar != "\\" && !needsEscape(scalar)
        }
        return plain ? value : "\"\(jsonEscaped(value))\""
    }

    /// `value` as the inside of a JSON string (RFC 8259 §7): quote and backslash escaped, and
    /// every control character (C0, DEL, C1) and the two line separators as `\n`, `\r`, `\t` or
    /// `\uXXXX`, so neither format's line can be broken or a terminal driven by what a peer sent.
    static func jsonEscaped(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where needsEscape(scalar):
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// Serializes writers, so that a line cut short by the kernel (a signal, a full pipe) is
    /// finished before another thread's line starts.
    private static let standardErrorLock = Mutex(())

    /// Writes each line to standard error with one `write` call (more only when the kernel takes
    /// part of it), so lines from different threads never interleave.
    public static let standardError: Sink = { line in
        let bytes = Array(line.utf8)
        standardErrorLock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let written = write(2, base + offset, buffer.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0, errno == EINTR {
                        continue
                    } else {
                        return  // standard error is closed or broken: the log is lost, the host goes on
                    }
                }
            }
        }
    }

    /// A log that writes nothing.
    public static let discard: Sink = { _ in }
}
