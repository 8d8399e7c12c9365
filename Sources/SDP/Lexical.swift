// Byte-level lexical helpers shared by the parser: RFC 8866 §9 `token`, numbers, space-separated
// fields. They work on spans of UTF-8 bytes with plain loops, so that parsing stays fast in
// debug builds too (the robustness tests parse hundreds of thousands of mutated offers).

/// A range of bytes in a buffer that outlives the span (the input being parsed). Internal and
/// never stored: it only lives during one parse. Loops index a raw pointer, within
/// `start..<end`, which the initializers keep inside the buffer.
struct ByteSpan {
    let base: UnsafePointer<UInt8>
    var start: Int
    var end: Int

    /// The whole of `buffer` (an empty buffer gives an empty span over a static byte).
    init(_ buffer: UnsafeBufferPointer<UInt8>) {
        base = buffer.baseAddress ?? ByteSpan.emptyBase
        start = 0
        end = buffer.baseAddress == nil ? 0 : buffer.count
    }

    init(base: UnsafePointer<UInt8>, start: Int, end: Int) {
        self.base = base
        self.start = start
        self.end = max(start, end)
    }

    // Never written after initialization: a read-only byte for spans over empty buffers.
    nonisolated(unsafe) private static let emptyBase: UnsafePointer<UInt8> = {
        let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
        pointer.initialize(to: 0)
        return UnsafePointer(pointer)
    }()

    var count: Int { end - start }
    var isEmpty: Bool { end <= start }
    subscript(offset: Int) -> UInt8 { base[start + offset] }

    /// The bytes from `offset` on.
    func dropFirst(_ offset: Int) -> ByteSpan { ByteSpan(base: base, start: min(start + offset, end), end: end) }

    private var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base + start, count: count) }

    /// The bytes as a String. The parser has checked the line is UTF-8 already; this
    /// initializer is not generic, so it stays cheap in debug builds.
    var string: String {
        let length = count
        if length == 0 { return "" }
        let source = UnsafeRawPointer(base + start)
        return String(unsafeUninitializedCapacity: length) { target in
            guard let destination = target.baseAddress else { return 0 }
            UnsafeMutableRawPointer(destination).copyMemory(from: source, byteCount: length)
            return length
        }
    }

    /// Whether the bytes are valid UTF-8.
    var isValidUTF8: Bool { String(validating: buffer, as: UTF8.self) != nil }

    /// Whether the bytes are exactly `literal` (ASCII).
    func equals(_ literal: StaticString) -> Bool {
        let length = end - start
        guard length == literal.utf8CodeUnitCount else { return false }
        let pointer = literal.utf8Start
        var index = 0
        while index < length {
            if base[start + index] != pointer[index] { return false }
            index += 1
        }
        return true
    }

    /// The offset (from `start`) of the first `byte`, if any.
    func firstIndex(of byte: UInt8) -> Int? {
        var index = start
        while index < end {
            if base[index] == byte { return index - start }
            index += 1
        }
        return nil
    }

    /// The bytes before the first `byte` and those after it; nil when absent.
    func split(atFirst byte: UInt8) -> (ByteSpan, ByteSpan)? {
        guard let offset = firstIndex(of: byte) else { return nil }
        return (ByteSpan(base: base, start: start, end: start + offset), ByteSpan(base: base, start: start + offset + 1, end: end))
    }

    /// Fields separated by runs of spaces; leading and trailing spaces ignored.
    func fields() -> [ByteSpan] {
        var result: [ByteSpan] = []
        var index = start
        var fieldStart = start
        while index < end {
            if base[index] == 0x20 {
                if index > fieldStart { result.append(ByteSpan(base: base, start: fieldStart, end: index)) }
                fieldStart = index + 1
            }
            index += 1
        }
        if end > fieldStart { result.append(ByteSpan(base: base, start: fieldStart, end: end)) }
        return result
    }

    /// A cursor over the space-separated fields, which allocates nothing.
    var fieldCursor: FieldCursor { FieldCursor(remaining: self) }

    /// Whether every `/`-separated part is a non-empty token (an m= proto, RFC 8866 §5.14).
    var isSlashSeparatedTokens: Bool {
        if isEmpty { return false }
        var previousWasSlash = true
        var index = start
        while index < end {
            let byte = base[index]
            if byte == 0x2F {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else {
                if !Lexical.isTokenByte(byte) { return false }
                previousWasSlash = false
            }
            index += 1
        }
        return !previousWasSlash
    }

    /// A decimal number of at most `max`, digits only (no sign, no spaces), else nil.
    func number(max: UInt64) -> UInt64? {
        guard !isEmpty, count <= 20 else { return nil }
        var value: UInt64 = 0
        var index = start
        while index < end {
            let byte = base[index]
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte &- 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
            index += 1
        }
        return value <= max ? value : nil
    }

    /// An RTP payload type (RFC 3551 §6: 7 bits).
    var payloadType: UInt8? {
        guard let value = number(max: 127) else { return nil }
        return UInt8(truncatingIfNeeded: value)
    }

    /// Only decimal digits, at least one.
    var isDigits: Bool {
        if isEmpty { return false }
        var index = start
        while index < end {
            let byte = base[index]
            if byte < 0x30 || byte > 0x39 { return false }
            index += 1
        }
        return true
    }

    /// A non-empty RFC 8866 token.
    var isToken: Bool {
        if isEmpty { return false }
        var index = start
        while index < end {
            if !Lexical.isTokenByte(base[index]) { return false }
            index += 1
        }
        return true
    }

    /// Non-empty, without spaces or control characters.
    var isVisible: Bool {
        if isEmpty { return false }
        var index = start
        while index < end {
            let byte = base[index]
            if byte <= 0x20 || byte == 0x7F { return false }
            index += 1
        }
        return true
    }

    /// Whether a `/`-separated proto (RFC 8866 §5.14) has an `RTP` part, ignoring case.
    var hasRTPComponent: Bool {
        var partStart = start
        var index = start
        while index <= end {
            if index == end || base[index] == 0x2F {
                if index - partStart == 3, base[partStart] | 0x20 == 0x72, base[partStart + 1] | 0x20 == 0x74,
                    base[partStart + 2] | 0x20 == 0x70 {
                    return true
                }
                partStart = index + 1
            }
            index += 1
        }
        return false
    }

    /// RFC 8839 §5.4 ice-chars only.
    var isICEChars: Bool {
        var index = start
        while index < end {
            if !Lexical.isICEByte(base[index]) { return false }
            index += 1
        }
        return true
    }
}

/// Walks the space-separated fields of a span, one at a time.
struct FieldCursor {
    var remaining: ByteSpan

    /// The next field, skipping runs of spaces; nil at the end.
    mutating func next() -> ByteSpan? {
        var index = remaining.start
        let end = remaining.end
        let base = remaining.base
        while index < end, base[index] == 0x20 { index += 1 }
        if index == end {
            remaining.start = end
            return nil
        }
        let fieldStart = index
        while index < end, base[index] != 0x20 { index += 1 }
        remaining.start = index
        return ByteSpan(base: base, start: fieldStart, end: index)
    }
}

enum Lexical {
    /// RFC 8866 §9 token-char: %x21 / %x23-27 / %x2A-2B / %x2D-2E / %x30-39 / %x41-5A / %x5E-7E.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        // Plain comparisons rather than range patterns: they stay cheap in debug builds.
        if byte <= 0x20 || byte >= 0x7F { return false }
        if byte == 0x22 || byte == 0x28 || byte == 0x29 || byte == 0x2C || byte == 0x2F { return false }
        if byte >= 0x3A && byte <= 0x40 { return false }
        if byte >= 0x5B && byte <= 0x5D { return false }
        return true
    }

    /// RFC 8839 §5.4 ice-char: ALPHA / DIGIT / "+" / "/".
    static func isICEByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x2B || byte == 0x2F
    }

    /// Runs `body` on the UTF-8 bytes of `text`.
    static func withSpan<Value>(_ text: Substring, _ body: (ByteSpan) throws(SDPError) -> Value) throws(SDPError) -> Value {
        var copy = String(text)
        let result: Result<Value, SDPError> = copy.withUTF8 { buffer in
            do throws(SDPError) {
                return .success(try body(ByteSpan(buffer)))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw error
        }
    }

    /// Runs `body` on the UTF-8 bytes of `text`, for checks that cannot fail.
    static func check(_ text: String, _ body: (ByteSpan) -> Bool) -> Bool {
        var copy = text
        return copy.withUTF8 { body(ByteSpan($0)) }
    }

    /// A non-empty RFC 8866 token.
    static func isToken(_ text: String) -> Bool { check(text) { $0.isToken } }

    /// RFC 8839 §5.4 ice-chars only.
    static func isICEChars(_ text: String) -> Bool { check(text) { $0.isICEChars } }

    /// An RTP payload type written as decimal text.
    static func payloadType(_ text: String) -> UInt8? {
        var copy = text
        return copy.withUTF8 { ByteSpan($0).payloadType }
    }
}
