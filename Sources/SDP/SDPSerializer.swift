// Writing SDP text (RFC 8866 §5): lines in the order of §5, each ending in CRLF.

extension SessionDescription {
    /// The description as SDP text with CRLF line ends. Attributes are written as parsed, so a
    /// parsed description serializes back to its own lines.
    public func serialized() -> String {
        var text = ""
        text.reserveCapacity(256 + media.count * 1024)
        func line(_ type: String, _ value: String) {
            text += type
            text += "="
            text += value
            text += "\r\n"
        }
        line("v", "0")
        line("o", "\(origin.username) \(origin.sessionID) \(origin.sessionVersion) \(origin.networkType) \(origin.addressType) \(origin.address)")
        line("s", sessionName)
        if let sessionInformation { line("i", sessionInformation) }
        if let uri { line("u", uri) }
        for email in emails { line("e", email) }
        for phone in phones { line("p", phone) }
        if let connection { line("c", connection.lineValue) }
        for bandwidth in bandwidths { line("b", bandwidth.lineValue) }
        for timing in timings {
            line("t", "\(timing.start) \(timing.stop)")
            for repeatLine in timing.repeats { line("r", repeatLine) }
        }
        if let timeZones { line("z", timeZones) }
        if let encryptionKey { line("k", encryptionKey) }
        for attribute in attributes { line("a", attribute.lineValue) }
        for section in media {
            var mLine = "\(section.kind.name) \(section.port)"
            if let portCount = section.portCount { mLine += "/\(portCount)" }
            mLine += " \(section.transportProtocol)"
            for format in section.formats { mLine += " \(format)" }
            line("m", mLine)
            if let information = section.information { line("i", information) }
            for connection in section.connections { line("c", connection.lineValue) }
            for bandwidth in section.bandwidths { line("b", bandwidth.lineValue) }
            if let key = section.encryptionKey { line("k", key) }
            for attribute in section.attributes { line("a", attribute.lineValue) }
        }
        return text
    }

    /// The serialized description as UTF-8 bytes.
    public func serializedBytes() -> [UInt8] { Array(serialized().utf8) }
}

extension Attribute {
    /// The text after `a=`: `name` or `name:value`.
    public var lineValue: String { value.map { "\(name):\($0)" } ?? name }
}

extension Connection {
    /// The text after `c=`.
    public var lineValue: String { "\(networkType) \(addressType) \(address)" }
}

extension Bandwidth {
    /// The text after `b=`.
    public var lineValue: String { "\(type):\(value)" }
}
