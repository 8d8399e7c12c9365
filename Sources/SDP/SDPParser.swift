// Parsing SDP text (RFC 8866 §5, §9). Lines end in CRLF or LF; every line is `<type>=<value>`
// with a lower-case type letter. The parser is lenient about the order of lines within a part
// (it keeps them in their typed slots), strict about their grammar, and bounded by `SDPLimits`.

extension SessionDescription {
    /// Parses SDP from its UTF-8 bytes. Invalid UTF-8, NUL bytes, unknown line types and
    /// malformed known lines throw; nothing traps, and input over `SDPLimits` is refused early.
    public init(parsing bytes: [UInt8]) throws(SDPError) {
        guard bytes.count <= SDPLimits.maxInputBytes else {
            throw SDPError(.inputTooLarge, "\(bytes.count) bytes is over the \(SDPLimits.maxInputBytes)-byte limit")
        }
        let result = bytes.withUnsafeBufferPointer { buffer in SDPParser.parse(buffer) }
        switch result {
        case .success(let description): self = description
        case .failure(let error): throw error
        }
    }

    /// Parses SDP text; see `init(parsing:)` for bytes.
    public init(parsing text: String) throws(SDPError) {
        guard text.utf8.count <= SDPLimits.maxInputBytes else {
            throw SDPError(.inputTooLarge, "\(text.utf8.count) bytes is over the \(SDPLimits.maxInputBytes)-byte limit")
        }
        try self.init(parsing: Array(text.utf8))
    }
}

/// The line-by-line state of one parse.
struct SDPParser {
    private var sawVersion = false
    private var origin: Origin?
    private var sessionName: String?
    private var sessionInformation: String?
    private var uri: String?
    private var emails: [String] = []
    private var phones: [String] = []
    private var connection: Connection?
    private var bandwidths: [Bandwidth] = []
    private var timings: [Timing] = []
    private var timeZones: String?
    private var encryptionKey: String?
    private var attributes: [Attribute] = []
    private var media: [MediaDescription] = []
    private var linesInSection = 0

    static func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<SessionDescription, SDPError> {
        var parser = SDPParser()
        do throws(SDPError) {
            return .success(try parser.run(buffer))
        } catch {
            return .failure(error)
        }
    }

    private mutating func run(_ buffer: UnsafeBufferPointer<UInt8>) throws(SDPError) -> SessionDescription {
        let count = buffer.count
        var start = 0
        var lineNumber = 0
        while start < count {
            lineNumber += 1
            var end = start
            // Find the LF; refuse NUL and a CR that does not end the line (RFC 8866 §5).
            while end < count {
                let byte = buffer[end]
                if byte == 0x0A { break }
                if byte == 0x00 { throw SDPError(.invalidCharacter, line: lineNumber, "NUL byte") }
                if byte == 0x0D, end + 1 < count, buffer[end + 1] != 0x0A {
                    throw SDPError(.invalidCharacter, line: lineNumber, "CR not followed by LF")
                }
                end += 1
                if end - start > SDPLimits.maxLineBytes + 1 {
                    throw SDPError(.lineTooLong, line: lineNumber, "line is over \(SDPLimits.maxLineBytes) bytes")
                }
            }
            let next = end + 1
            // Drop the CR of CRLF and trailing blanks.
            while end > start, buffer[end - 1] == 0x0D || buffer[end - 1] == 0x20 || buffer[end - 1] == 0x09 { end -= 1 }
            if end - start > SDPLimits.maxLineBytes {
                throw SDPError(.lineTooLong, line: lineNumber, "line is over \(SDPLimits.maxLineBytes) bytes")
            }
            if end > start {
                do throws(SDPError) {
                    try line(UnsafeBufferPointer(rebasing: buffer[start..<end]), number: lineNumber)
                } catch {
                    var located = error
                    if located.line == nil { located.line = lineNumber }
                    throw located
                }
            }
            start = next
        }
        guard sawVersion else { throw SDPError(.missingVersion, "the description is empty") }
        guard let origin else { throw SDPError(.missingField, "no o= line") }
        guard let sessionName else { throw SDPError(.missingField, "no s= line") }
        guard !timings.isEmpty else { throw SDPError(.missingField, "no t= line") }
        return SessionDescription(
            origin: origin, sessionName: sessionName, sessionInformation: sessionInformation, uri: uri, emails: emails,
            phones: phones, connection: connection, bandwidths: bandwidths, timings: timings, timeZones: timeZones,
            encryptionKey: encryptionKey, attributes: attributes, media: media)
    }

    private mutating func line(_ bytes: UnsafeBufferPointer<UInt8>, number: Int) throws(SDPError) {
        guard bytes.count >= 2, bytes[1] == 0x3D /* = */, bytes[0] >= 0x61, bytes[0] <= 0x7A else {
            throw SDPError(.malformedLine, "a line must be '<letter>=<value>'")
        }
        guard let value = String(validating: UnsafeBufferPointer(rebasing: bytes[2...]), as: UTF8.self) else {
            throw SDPError(.invalidUTF8, "the line is not UTF-8")
        }
        let type = bytes[0]
        guard sawVersion else {
            guard type == UInt8(ascii: "v") else { throw SDPError(.missingVersion, "the first line must be v=0") }
            guard value == "0" else { throw SDPError(.unsupportedVersion, "v=\(value.prefix(20)) is not v=0") }
            sawVersion = true
            linesInSection = 1
            return
        }
        linesInSection += 1
        if linesInSection > SDPLimits.maxLinesPerSection {
            throw SDPError(.tooManyAttributes, "more than \(SDPLimits.maxLinesPerSection) lines in one section")
        }
        let inMedia = !media.isEmpty
        switch type {
        case UInt8(ascii: "v"):
            throw SDPError(.duplicateField, "a second v= line")
        case UInt8(ascii: "o"), UInt8(ascii: "s"), UInt8(ascii: "u"), UInt8(ascii: "e"), UInt8(ascii: "p"),
            UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "z"):
            guard !inMedia else { throw SDPError(.duplicateField, "\(Character(Unicode.Scalar(type)))= is a session line inside a media section") }
            try sessionLine(type, value)
        case UInt8(ascii: "i"):
            if inMedia {
                guard media[media.count - 1].information == nil else { throw SDPError(.duplicateField, "a second i= line") }
                media[media.count - 1].information = value
            } else {
                guard sessionInformation == nil else { throw SDPError(.duplicateField, "a second i= line") }
                sessionInformation = value
            }
        case UInt8(ascii: "c"):
            let parsed = try Self.connection(value)
            if inMedia {
                media[media.count - 1].connections.append(parsed)
            } else {
                guard connection == nil else { throw SDPError(.duplicateField, "a second session c= line") }
                connection = parsed
            }
        case UInt8(ascii: "b"):
            let parsed = try Self.bandwidth(value)
            if inMedia { media[media.count - 1].bandwidths.append(parsed) } else { bandwidths.append(parsed) }
        case UInt8(ascii: "k"):
            if inMedia {
                guard media[media.count - 1].encryptionKey == nil else { throw SDPError(.duplicateField, "a second k= line") }
                media[media.count - 1].encryptionKey = value
            } else {
                guard encryptionKey == nil else { throw SDPError(.duplicateField, "a second k= line") }
                encryptionKey = value
            }
        case UInt8(ascii: "a"):
            let attribute = try Self.attribute(value)
            if inMedia { media[media.count - 1].attributes.append(attribute) } else { attributes.append(attribute) }
        case UInt8(ascii: "m"):
            guard media.count < SDPLimits.maxMediaSections else {
                throw SDPError(.tooManyMediaSections, "more than \(SDPLimits.maxMediaSections) m= sections")
            }
            media.append(try Self.mediaLine(value))
            linesInSection = 1
        default:
            // RFC 8866 §5: a parser must refuse a description with a type letter it does not know.
            throw SDPError(.unknownLineType, "unknown line type '\(Character(Unicode.Scalar(type)))='")
        }
    }

    private mutating func sessionLine(_ type: UInt8, _ value: String) throws(SDPError) {
        switch type {
        case UInt8(ascii: "o"):
            guard origin == nil else { throw SDPError(.duplicateField, "a second o= line") }
            origin = try Self.origin(value)
        case UInt8(ascii: "s"):
            guard sessionName == nil else { throw SDPError(.duplicateField, "a second s= line") }
            sessionName = value
        case UInt8(ascii: "u"):
            guard uri == nil else { throw SDPError(.duplicateField, "a second u= line") }
            uri = value
        case UInt8(ascii: "e"): emails.append(value)
        case UInt8(ascii: "p"): phones.append(value)
        case UInt8(ascii: "t"): timings.append(try Self.timing(value))
        case UInt8(ascii: "r"):
            guard !timings.isEmpty else { throw SDPError(.malformedLine, "r= before any t=") }
            timings[timings.count - 1].repeats.append(value)
        default:  // z
            guard timeZones == nil else { throw SDPError(.duplicateField, "a second z= line") }
            timeZones = value
        }
    }

    // RFC 8866 §5.2: o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>
    private static func origin(_ value: String) throws(SDPError) -> Origin {
        let fields = Lexical.fields(value[...])
        guard fields.count == 6, Lexical.isDigits(fields[1]), Lexical.isDigits(fields[2]),
            Lexical.isToken(fields[3]), Lexical.isToken(fields[4]), Lexical.isVisible(fields[5])
        else { throw SDPError(.badOrigin, "o= needs <username> <sess-id> <sess-version> <nettype> <addrtype> <address>") }
        return Origin(username: String(fields[0]), sessionID: String(fields[1]), sessionVersion: String(fields[2]),
                      networkType: String(fields[3]), addressType: String(fields[4]), address: String(fields[5]))
    }

    // RFC 8866 §5.7: c=<nettype> <addrtype> <connection-address>
    private static func connection(_ value: String) throws(SDPError) -> Connection {
        let fields = Lexical.fields(value[...])
        guard fields.count == 3, Lexical.isToken(fields[0]), Lexical.isToken(fields[1]), Lexical.isVisible(fields[2]) else {
            throw SDPError(.badConnection, "c= needs <nettype> <addrtype> <address>")
        }
        return Connection(networkType: String(fields[0]), addressType: String(fields[1]), address: String(fields[2]))
    }

    // RFC 8866 §5.8: b=<bwtype>:<bandwidth>
    private static func bandwidth(_ value: String) throws(SDPError) -> Bandwidth {
        guard let colon = value.firstIndex(of: ":"), Lexical.isToken(value[..<colon]),
            let number = Lexical.number(value[value.index(after: colon)...], max: UInt64(UInt32.max))
        else { throw SDPError(.badBandwidth, "b= needs <type>:<number>") }
        return Bandwidth(type: String(value[..<colon]), value: number)
    }

    // RFC 8866 §5.9: t=<start-time> <stop-time>
    private static func timing(_ value: String) throws(SDPError) -> Timing {
        let fields = Lexical.fields(value[...])
        guard fields.count == 2, let start = Lexical.number(fields[0], max: UInt64.max),
            let stop = Lexical.number(fields[1], max: UInt64.max)
        else { throw SDPError(.badTiming, "t= needs two numbers") }
        return Timing(start: start, stop: stop)
    }

    // RFC 8866 §5.14: m=<media> <port>[/<number of ports>] <proto> <fmt> ...
    private static func mediaLine(_ value: String) throws(SDPError) -> MediaDescription {
        let fields = Lexical.fields(value[...])
        guard fields.count >= 4, Lexical.isToken(fields[0]) else {
            throw SDPError(.badMediaLine, "m= needs <media> <port> <proto> <fmt>...")
        }
        guard fields.count - 3 <= SDPLimits.maxFormatsPerMedia else {
            throw SDPError(.badMediaLine, "more than \(SDPLimits.maxFormatsPerMedia) formats")
        }
        var portText = fields[1]
        var portCount: UInt16?
        if let slash = portText.firstIndex(of: "/") {
            guard let count = Lexical.number(portText[portText.index(after: slash)...], max: 65535) else {
                throw SDPError(.badPort, "m= port count is not a number")
            }
            portCount = UInt16(count)
            portText = portText[..<slash]
        }
        guard let port = Lexical.number(portText, max: 65535) else {
            throw SDPError(.badPort, "m= port '\(fields[1].prefix(20))' is not in 0...65535")
        }
        guard fields[2].split(separator: "/", omittingEmptySubsequences: false).allSatisfy(Lexical.isToken) else {
            throw SDPError(.badProtocol, "m= proto '\(fields[2].prefix(40))' is not tokens separated by '/'")
        }
        let proto = String(fields[2])
        let formats = fields.dropFirst(3)
        if MediaDescription.protocolCarriesRTP(proto) {
            for format in formats where Lexical.payloadType(format) == nil {
                throw SDPError(.badPayloadType, "m= payload type '\(format.prefix(20))' is not in 0...127")
            }
        } else {
            guard formats.allSatisfy(Lexical.isToken) else { throw SDPError(.badMediaLine, "m= format is not a token") }
        }
        return MediaDescription(kind: MediaKind(String(fields[0])), port: UInt16(port), portCount: portCount,
                                transportProtocol: proto, formats: formats.map(String.init))
    }

    // RFC 8866 §5.13: a=<attribute> or a=<attribute>:<value>
    private static func attribute(_ value: String) throws(SDPError) -> Attribute {
        if let colon = value.utf8.firstIndex(of: 0x3A) {
            return try Attribute(name: String(value[..<colon]), value: String(value[value.utf8.index(after: colon)...]))
        }
        return try Attribute(name: value, value: nil)
    }
}
