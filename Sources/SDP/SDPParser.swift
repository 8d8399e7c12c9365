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
        let result = bytes.withUnsafeBufferPointer { buffer in SDPParser.parse(ByteSpan(buffer)) }
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

    static func parse(_ buffer: ByteSpan) -> Result<SessionDescription, SDPError> {
        var parser = SDPParser()
        do throws(SDPError) {
            return .success(try parser.run(buffer))
        } catch {
            return .failure(error)
        }
    }

    private mutating func run(_ input: ByteSpan) throws(SDPError) -> SessionDescription {
        let buffer = input.base
        let count = input.count
        let lineLimit = SDPLimits.maxLineBytes
        var start = 0
        var lineNumber = 0
        while start < count {
            lineNumber += 1
            var end = start
            var nonASCII = false
            // Find the LF; refuse NUL and a CR that does not end the line (RFC 8866 §5).
            let stop = min(count, start + lineLimit + 2)
            while end < stop {
                let byte = buffer[end]
                if byte == 0x0A { break }
                if byte < 0x0E {
                    if byte == 0x00 { throw SDPError(.invalidCharacter, line: lineNumber, "NUL byte") }
                    if byte == 0x0D, end + 1 < count, buffer[end + 1] != 0x0A {
                        throw SDPError(.invalidCharacter, line: lineNumber, "CR not followed by LF")
                    }
                } else if byte >= 0x80 {
                    nonASCII = true
                }
                end += 1
            }
            if end == stop, stop < count, end - start > lineLimit + 1 {
                throw SDPError(.lineTooLong, line: lineNumber, "line is over \(lineLimit) bytes")
            }
            let next = end + 1
            // Drop the CR of CRLF and trailing blanks.
            while end > start, buffer[end - 1] == 0x0D || buffer[end - 1] == 0x20 || buffer[end - 1] == 0x09 { end -= 1 }
            if end - start > lineLimit {
                throw SDPError(.lineTooLong, line: lineNumber, "line is over \(lineLimit) bytes")
            }
            if end > start {
                let bytes = ByteSpan(base: buffer, start: start, end: end)
                // One UTF-8 check per line, only when it has non-ASCII bytes.
                if nonASCII, !bytes.isValidUTF8 { throw SDPError(.invalidUTF8, line: lineNumber, "the line is not UTF-8") }
                do throws(SDPError) {
                    try line(bytes, number: lineNumber)
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

    private mutating func line(_ bytes: ByteSpan, number: Int) throws(SDPError) {
        guard bytes.count >= 2, bytes[1] == 0x3D /* = */, bytes[0] >= 0x61, bytes[0] <= 0x7A else {
            throw SDPError(.malformedLine, "a line must be '<letter>=<value>'")
        }
        let span = bytes.dropFirst(2)
        let type = bytes[0]
        guard sawVersion else {
            guard type == UInt8(ascii: "v") else { throw SDPError(.missingVersion, "the first line must be v=0") }
            guard span.equals("0") else { throw SDPError(.unsupportedVersion, "v= is not v=0") }
            sawVersion = true
            linesInSection = 1
            return
        }
        linesInSection += 1
        if linesInSection > SDPLimits.maxLinesPerSection {
            throw SDPError(.tooManyAttributes, "more than \(SDPLimits.maxLinesPerSection) lines in one section")
        }
        if type == UInt8(ascii: "a") {
            // RFC 8866 §5.13: a=<attribute> or a=<attribute>:<value>. One UTF-8 check per line.
            let attribute: Attribute
            if let (name, value) = span.split(atFirst: 0x3A) {
                attribute = try Attribute.parse(name: name, value: value, valueText: value.string)
            } else {
                attribute = try Attribute.parse(name: span, value: nil, valueText: nil)
            }
            if media.isEmpty { attributes.append(attribute) } else { media[media.count - 1].attributes.append(attribute) }
            return
        }
        let value = span.string
        let inMedia = !media.isEmpty
        switch type {
        case UInt8(ascii: "v"):
            throw SDPError(.duplicateField, "a second v= line")
        case UInt8(ascii: "o"), UInt8(ascii: "s"), UInt8(ascii: "u"), UInt8(ascii: "e"), UInt8(ascii: "p"),
            UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "z"):
            guard !inMedia else { throw SDPError(.duplicateField, "\(Character(Unicode.Scalar(type)))= is a session line inside a media section") }
            try sessionLine(type, value, span)
        case UInt8(ascii: "i"):
            if inMedia {
                guard media[media.count - 1].information == nil else { throw SDPError(.duplicateField, "a second i= line") }
                media[media.count - 1].information = value
            } else {
                guard sessionInformation == nil else { throw SDPError(.duplicateField, "a second i= line") }
                sessionInformation = value
            }
        case UInt8(ascii: "c"):
            let parsed = try Self.connection(span)
            if inMedia {
                media[media.count - 1].connections.append(parsed)
            } else {
                guard connection == nil else { throw SDPError(.duplicateField, "a second session c= line") }
                connection = parsed
            }
        case UInt8(ascii: "b"):
            let parsed = try Self.bandwidth(span)
            if inMedia { media[media.count - 1].bandwidths.append(parsed) } else { bandwidths.append(parsed) }
        case UInt8(ascii: "k"):
            if inMedia {
                guard media[media.count - 1].encryptionKey == nil else { throw SDPError(.duplicateField, "a second k= line") }
                media[media.count - 1].encryptionKey = value
            } else {
                guard encryptionKey == nil else { throw SDPError(.duplicateField, "a second k= line") }
                encryptionKey = value
            }
        case UInt8(ascii: "m"):
            guard media.count < SDPLimits.maxMediaSections else {
                throw SDPError(.tooManyMediaSections, "more than \(SDPLimits.maxMediaSections) m= sections")
            }
            media.append(try Self.mediaLine(span))
            linesInSection = 1
        default:
            // RFC 8866 §5: a parser must refuse a description with a type letter it does not know.
            throw SDPError(.unknownLineType, "unknown line type '\(Character(Unicode.Scalar(type)))='")
        }
    }

    private mutating func sessionLine(_ type: UInt8, _ value: String, _ span: ByteSpan) throws(SDPError) {
        switch type {
        case UInt8(ascii: "o"):
            guard origin == nil else { throw SDPError(.duplicateField, "a second o= line") }
            origin = try Self.origin(span)
        case UInt8(ascii: "s"):
            guard sessionName == nil else { throw SDPError(.duplicateField, "a second s= line") }
            sessionName = value
        case UInt8(ascii: "u"):
            guard uri == nil else { throw SDPError(.duplicateField, "a second u= line") }
            uri = value
        case UInt8(ascii: "e"): emails.append(value)
        case UInt8(ascii: "p"): phones.append(value)
        case UInt8(ascii: "t"): timings.append(try Self.timing(span))
        case UInt8(ascii: "r"):
            guard !timings.isEmpty else { throw SDPError(.malformedLine, "r= before any t=") }
            timings[timings.count - 1].repeats.append(value)
        default:  // z
            guard timeZones == nil else { throw SDPError(.duplicateField, "a second z= line") }
            timeZones = value
        }
    }

    // RFC 8866 §5.2: o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>
    private static func origin(_ span: ByteSpan) throws(SDPError) -> Origin {
        let fields = span.fields()
        guard fields.count == 6, fields[0].isVisible, fields[1].isDigits, fields[2].isDigits, fields[3].isToken,
            fields[4].isToken, fields[5].isVisible
        else { throw SDPError(.badOrigin, "o= needs <username> <sess-id> <sess-version> <nettype> <addrtype> <address>") }
        return Origin(username: fields[0].string, sessionID: fields[1].string, sessionVersion: fields[2].string,
                      networkType: fields[3].string, addressType: fields[4].string, address: fields[5].string)
    }

    // RFC 8866 §5.7: c=<nettype> <addrtype> <connection-address>
    private static func connection(_ span: ByteSpan) throws(SDPError) -> Connection {
        let fields = span.fields()
        guard fields.count == 3, fields[0].isToken, fields[1].isToken, fields[2].isVisible else {
            throw SDPError(.badConnection, "c= needs <nettype> <addrtype> <address>")
        }
        return Connection(networkType: fields[0].string, addressType: fields[1].string, address: fields[2].string)
    }

    // RFC 8866 §5.8: b=<bwtype>:<bandwidth>
    private static func bandwidth(_ span: ByteSpan) throws(SDPError) -> Bandwidth {
        guard let (type, value) = span.split(atFirst: 0x3A), type.isToken, let number = value.number(max: UInt64(UInt32.max)) else {
            throw SDPError(.badBandwidth, "b= needs <type>:<number>")
        }
        return Bandwidth(type: type.string, value: number)
    }

    // RFC 8866 §5.9: t=<start-time> <stop-time>
    private static func timing(_ span: ByteSpan) throws(SDPError) -> Timing {
        let fields = span.fields()
        guard fields.count == 2, let start = fields[0].number(max: UInt64.max), let stop = fields[1].number(max: UInt64.max) else {
            throw SDPError(.badTiming, "t= needs two numbers")
        }
        return Timing(start: start, stop: stop)
    }

    // RFC 8866 §5.14: m=<media> <port>[/<number of ports>] <proto> <fmt> ...
    private static func mediaLine(_ span: ByteSpan) throws(SDPError) -> MediaDescription {
        var cursor = span.fieldCursor
        guard let media = cursor.next(), media.isToken, let portField = cursor.next(), let protoField = cursor.next() else {
            throw SDPError(.badMediaLine, "m= needs <media> <port> <proto> <fmt>...")
        }
        var portText = portField
        var portCount: UInt16?
        if let (number, countText) = portText.split(atFirst: 0x2F) {
            guard let count = countText.number(max: 65535) else { throw SDPError(.badPort, "m= port count is not a number") }
            portCount = UInt16(count)
            portText = number
        }
        guard let port = portText.number(max: 65535) else {
            throw SDPError(.badPort, "m= port '\(portField.string.prefix(20))' is not in 0...65535")
        }
        guard protoField.isSlashSeparatedTokens else {
            throw SDPError(.badProtocol, "m= proto '\(protoField.string.prefix(40))' is not tokens separated by '/'")
        }
        let carriesRTP = protoField.hasRTPComponent
        var formats: [String] = []
        while let format = cursor.next() {
            guard formats.count < SDPLimits.maxFormatsPerMedia else {
                throw SDPError(.badMediaLine, "more than \(SDPLimits.maxFormatsPerMedia) formats")
            }
            if carriesRTP {
                guard format.payloadType != nil else {
                    throw SDPError(.badPayloadType, "m= payload type '\(format.string.prefix(20))' is not in 0...127")
                }
            } else {
                guard format.isToken else { throw SDPError(.badMediaLine, "m= format is not a token") }
            }
            formats.append(format.string)
        }
        guard !formats.isEmpty else { throw SDPError(.badMediaLine, "m= needs at least one format") }
        return MediaDescription(kind: MediaKind(media.string), port: UInt16(port), portCount: portCount,
                                transportProtocol: protoField.string, formats: formats)
    }
}
