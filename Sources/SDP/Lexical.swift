// Small lexical helpers shared by the parser: RFC 8866 §9 `token`, numbers, space-separated
// fields. They work on UTF-8 code units so that parsing stays fast in debug builds too.

enum Lexical {
    /// RFC 8866 §9 token-char: %x21 / %x23-27 / %x2A-2B / %x2D-2E / %x30-39 / %x41-5A / %x5E-7E.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7E: true
        default: false
        }
    }

    /// A non-empty RFC 8866 token.
    static func isToken(_ text: Substring) -> Bool {
        if text.isEmpty { return false }
        for byte in text.utf8 where !isTokenByte(byte) { return false }
        return true
    }

    /// A non-empty RFC 8866 token.
    static func isToken(_ text: String) -> Bool { isToken(text[...]) }

    /// Non-empty and without control characters or spaces: addresses (an IPv6 address has
    /// colons, which are not token-chars), user names, and ids that peers write outside the
    /// token grammar (GStreamer's msid has an `@`).
    static func isVisible(_ text: Substring) -> Bool {
        if text.isEmpty { return false }
        for byte in text.utf8 where byte <= 0x20 || byte == 0x7F { return false }
        return true
    }

    /// RFC 8839 §5.4 ice-char: ALPHA / DIGIT / "+" / "/".
    static func isICEChars(_ text: Substring) -> Bool {
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2B, 0x2F: continue
            default: return false
            }
        }
        return true
    }

    /// A decimal number of at most `max`, digits only (no sign, no spaces), else nil.
    static func number(_ text: Substring, max: UInt64) -> UInt64? {
        if text.isEmpty || text.utf8.count > 20 { return nil }
        var value: UInt64 = 0
        for byte in text.utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value <= max ? value : nil
    }

    /// Only decimal digits, at least one.
    static func isDigits(_ text: Substring) -> Bool {
        if text.isEmpty { return false }
        for byte in text.utf8 where byte < 0x30 || byte > 0x39 { return false }
        return true
    }

    /// Fields separated by one or more spaces (leading and trailing spaces ignored).
    static func fields(_ text: Substring) -> [Substring] {
        text.split(separator: " ", omittingEmptySubsequences: true)
    }

    /// The text before the first space and the rest after it (the rest may be empty or hold
    /// more spaces); nil when there is no space.
    static func splitAtFirstSpace(_ text: Substring) -> (Substring, Substring)? {
        guard let space = text.utf8.firstIndex(of: 0x20) else { return nil }
        let after = text.utf8.index(after: space)
        return (text[..<space], text[after...])
    }

    /// An RTP payload type (RFC 3551 §6: 7 bits).
    static func payloadType(_ text: Substring) -> UInt8? {
        number(text, max: 127).map { UInt8($0) }
    }
}
