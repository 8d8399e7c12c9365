// ICE candidates in SDP (RFC 8839 §5.1, with the TCP extension of RFC 6544 §4.5).
//
//   candidate-attribute = "candidate" ":" foundation SP component-id SP transport SP priority SP
//                         connection-address SP port SP "typ" SP cand-type
//                         [SP "raddr" SP connection-address] [SP "rport" SP port]
//                         *(SP extension-att-name SP extension-att-value)

/// One ICE candidate, as in `a=candidate:` or a trickled `candidate:` line.
public struct Candidate: Sendable, Equatable {
    /// One `name value` extension pair after the fixed fields (e.g. `network-cost 50`).
    public struct Extension: Sendable, Equatable {
        /// The extension's name.
        public var name: String
        /// The extension's value.
        public var value: String

        /// The pair `name value`.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// 1 to 32 ice-chars grouping candidates of the same type, base and server.
    public var foundation: String
    /// The component: 1 for RTP (and RTCP, with rtcp-mux), 2 for a separate RTCP.
    public var component: UInt16
    /// The transport as written (`udp`, `UDP`, `tcp`); compare case-insensitively.
    public var transport: String
    /// The candidate's priority (RFC 8445 §5.1.2).
    public var priority: UInt32
    /// The IP address or FQDN (such as an mDNS `.local` name).
    public var address: String
    /// The port (9 for TCP active candidates, RFC 6544 §4.5).
    public var port: UInt16
    /// The candidate type as written: `host`, `srflx`, `prflx`, `relay`.
    public var type: String
    /// `raddr`: the related address of a reflexive or relayed candidate.
    public var relatedAddress: String?
    /// `rport`: the related port.
    public var relatedPort: UInt16?
    /// `tcptype`: `active`, `passive` or `so` (RFC 6544 §4.5).
    public var tcpType: String?
    /// `generation`, a legacy extension Chromium writes.
    public var generation: UInt32?
    /// Every other extension pair, in order (`network-id`, `network-cost`, `ufrag`, …).
    public var extensions: [Extension]

    /// A candidate with the given fields.
    public init(
        foundation: String, component: UInt16, transport: String, priority: UInt32, address: String, port: UInt16,
        type: String, relatedAddress: String? = nil, relatedPort: UInt16? = nil, tcpType: String? = nil,
        generation: UInt32? = nil, extensions: [Extension] = []
    ) {
        self.foundation = foundation
        self.component = component
        self.transport = transport
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.tcpType = tcpType
        self.generation = generation
        self.extensions = extensions
    }

    /// Reads the text after `a=candidate:` (or after `candidate:` in a trickled line).
    public init(attributeValue text: Substring) throws(SDPError) {
        self = try Lexical.withSpan(text) { span throws(SDPError) in try Candidate(span: span) }
    }

    init(span: ByteSpan) throws(SDPError) {
        var cursor = span.fieldCursor
        guard let foundation = cursor.next(), let componentText = cursor.next(), let transport = cursor.next(),
            let priorityText = cursor.next(), let address = cursor.next(), let portText = cursor.next(),
            let typ = cursor.next(), let type = cursor.next()
        else { throw SDPError(.badCandidate, "a=candidate has fewer than 8 fields") }
        guard (1...32).contains(foundation.count), foundation.isICEChars else {
            throw SDPError(.badCandidate, "candidate foundation must be 1 to 32 ice-chars")
        }
        guard let component = componentText.number(max: 256), component >= 1 else {
            throw SDPError(.badCandidate, "candidate component is not in 1...256")
        }
        guard transport.isToken else { throw SDPError(.badCandidate, "candidate transport is not a token") }
        guard let priority = priorityText.number(max: UInt64(UInt32.max)) else {
            throw SDPError(.badCandidate, "candidate priority is not a 32-bit number")
        }
        guard address.isVisible else { throw SDPError(.badCandidate, "candidate address is empty") }
        guard let port = portText.number(max: 65535) else { throw SDPError(.badCandidate, "candidate port is not in 0...65535") }
        guard typ.equals("typ"), type.isToken else { throw SDPError(.badCandidate, "candidate has no 'typ <type>'") }
        self.init(
            foundation: foundation.string, component: UInt16(component), transport: transport.string,
            priority: UInt32(priority), address: address.string, port: UInt16(port), type: type.string)
        while let name = cursor.next() {
            guard let value = cursor.next() else { throw SDPError(.badCandidate, "candidate extension without a value") }
            guard name.isToken, value.isVisible else { throw SDPError(.badCandidate, "candidate extension is not a name and a value") }
            if relatedAddress == nil, name.equals("raddr") {
                relatedAddress = value.string
            } else if relatedPort == nil, name.equals("rport") {
                guard let rport = value.number(max: 65535) else { throw SDPError(.badCandidate, "candidate rport is not a port") }
                relatedPort = UInt16(rport)
            } else if tcpType == nil, name.equals("tcptype") {
                tcpType = value.string
            } else if generation == nil, name.equals("generation") {
                guard let number = value.number(max: UInt64(UInt32.max)) else {
                    throw SDPError(.badCandidate, "candidate generation is not a number")
                }
                generation = UInt32(number)
            } else {
                extensions.append(Extension(name: name.string, value: value.string))
            }
        }
    }

    /// Whether the transport is UDP.
    public var isUDP: Bool { transport.lowercased() == "udp" }

    /// The text after `a=candidate:`, fields in RFC 8839 §5.1 order, then tcptype, generation
    /// and the other extensions.
    public var attributeValue: String {
        var text = "\(foundation) \(component) \(transport) \(priority) \(address) \(port) typ \(type)"
        if let relatedAddress { text += " raddr \(relatedAddress)" }
        if let relatedPort { text += " rport \(relatedPort)" }
        if let tcpType { text += " tcptype \(tcpType)" }
        if let generation { text += " generation \(generation)" }
        for pair in extensions { text += " \(pair.name) \(pair.value)" }
        return text
    }
}
