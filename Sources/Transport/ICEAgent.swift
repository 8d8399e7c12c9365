import Wire

/// An ICE username fragment and password (RFC 8445 §5.3, RFC 8839 §5.4).
public struct ICECredentials: Sendable, Hashable {
    public let ufrag: String
    public let password: String

    public init(ufrag: String, password: String) {
        self.ufrag = ufrag
        self.password = password
    }

    /// Fresh credentials: 8 and 24 characters of the ice-char set (RFC 8839 §5.4 asks for at
    /// least 4 and 22, with at least 24 and 128 bits of randomness).
    public static func random() -> ICECredentials {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> ICECredentials {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
        func text(_ count: Int) -> String { String((0..<count).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }) }
        return ICECredentials(ufrag: text(8), password: text(24))
    }
}

/// Why an agent did not answer a STUN message.
public enum ICERejection: Error, Sendable, Equatable {
    /// Not a Binding request (a response to nobody, an indication, another method).
    case notACheck
    /// USERNAME missing or not `ourUfrag:theirUfrag` (RFC 8445 §7.3).
    case wrongUsername
    /// MESSAGE-INTEGRITY missing or not made with our password (RFC 8489 §9.1.3).
    case badIntegrity
    /// FINGERPRINT present but wrong (RFC 8489 §14.7).
    case badFingerprint
    /// A response whose transaction we did not start.
    case unknownTransaction
}

/// The host's side of ICE: a lite agent (RFC 8445 §2.5), always controlled, which answers the
/// peer's connectivity checks from its one host candidate and never sends checks of its own.
/// It learns the peer's address from valid checks, switches to the address of a nominated check
/// (USE-CANDIDATE, §7.3.1.5), and counts each valid check as consent (RFC 7675 §5.1).
public struct ICELiteAgent: Sendable {
    public let local: ICECredentials
    /// The peer's credentials, from its SDP; checks must name its ufrag.
    public let remote: ICECredentials
    /// The address media goes to: the last nominated one, or the first validated before that.
    public private(set) var selectedAddress: TransportAddress?
    /// True once a check carried USE-CANDIDATE.
    public private(set) var nominated = false
    /// When consent was last refreshed by a valid check.
    public private(set) var lastConsent: Instant?
    /// RFC 7675 §5.1: consent is lost after 30 s without a valid check.
    public var consentTimeout: Duration = .seconds(30)

    public init(local: ICECredentials, remote: ICECredentials) {
        self.local = local
        self.remote = remote
    }

    /// The USERNAME a check to us carries: our ufrag, a colon, the peer's (RFC 8445 §7.2.2).
    public var expectedUsername: String { "\(local.ufrag):\(remote.ufrag)" }

    /// Answers a connectivity check from `source` with the bytes of the response, or says why not.
    public mutating func handleCheck(_ request: STUNMessage, from source: TransportAddress, now: Instant) throws(ICERejection) -> [UInt8] {
        guard request.type == .bindingRequest else { throw .notACheck }
        guard request.username == expectedUsername else { throw .wrongUsername }
        let key = STUNIntegrityKey.shortTerm(password: local.password)
        guard request.hasMessageIntegrity, request.verifyIntegrity(key: key) else { throw .badIntegrity }
        if request.hasFingerprint, !request.verifyFingerprint() { throw .badFingerprint }

        var response: STUNMessageBuilder
        if !request.unknownComprehensionRequired.isEmpty {
            // RFC 8489 §6.3.1.1: 420 naming what we do not understand; the check does not count.
            response = STUNMessageBuilder(type: .bindingErrorResponse, transactionID: request.transactionID)
            try? response.append(.errorCode(STUNErrorCode(code: 420, reason: "Unknown Attribute")))
            try? response.append(.unknownAttributes(request.unknownComprehensionRequired))
            return response.finish(integrityKey: key, fingerprint: true)
        }

        lastConsent = now
        if request.useCandidate {
            nominated = true
            selectedAddress = source
        } else if selectedAddress == nil {
            selectedAddress = source
        }
        response = STUNMessageBuilder(type: .bindingSuccessResponse, transactionID: request.transactionID)
        try? response.append(.xorMappedAddress(source))
        return response.finish(integrityKey: key, fingerprint: true)
    }

    /// The agent after an ICE restart (RFC 8445 §9): checks must carry the new credentials from
    /// now on, while media goes on to the selected address until a new check selects another.
    public func restarted(local: ICECredentials, remote: ICECredentials) -> ICELiteAgent {
        var agent = ICELiteAgent(local: local, remote: remote)
        agent.selectedAddress = selectedAddress
        agent.nominated = nominated
        agent.lastConsent = lastConsent
        agent.consentTimeout = consentTimeout
        return agent
    }

    /// Sends to `address` from now on: a validated address the peer moved to (NAT rebinding).
    public mutating func select(_ address: TransportAddress) { selectedAddress = address }

    /// True when no valid check has come for the consent timeout (RFC 7675 §5.1), counting from
    /// `since` (when the session began) before the first one.
    public func consentExpired(now: Instant, since start: Instant) -> Bool {
        now - (lastConsent ?? start) > consentTimeout
    }

    /// When consent runs out unless a check comes first.
    public func consentDeadline(since start: Instant) -> Instant { (lastConsent ?? start) + consentTimeout }
}

/// The client's side of ICE for the load tester and tests: a controlling agent (RFC 8445 §7.2)
/// with one local and one remote candidate. It sends checks with USE-CANDIDATE (aggressive
/// nomination, as a lite peer expects) every `Ta` until one succeeds, then refreshes consent
/// every 5 s (RFC 7675 §5.1 asks for 4–6 s, randomized).
public struct ICEControllingAgent: Sendable {
    public let local: ICECredentials
    public let remote: ICECredentials
    public let remoteAddress: TransportAddress
    public let tieBreaker: UInt64
    /// RFC 8445 §14.2: Ta, the pacing of checks before one succeeds.
    public var checkInterval: Duration = .milliseconds(50)
    public var consentInterval: Duration = .seconds(5)
    public var consentTimeout: Duration = .seconds(30)
    /// Whether consent checks (after the first success) nominate again with USE-CANDIDATE, as
    /// Chromium does towards a lite peer; false for a peer whose consent checks do not.
    public var nominatesOnConsent = true

    public private(set) var connected = false
    public private(set) var lastResponse: Instant?
    private var pending: [STUNTransactionID: Instant] = [:]
    private var nextCheck: Instant
    private let start: Instant

    public init(local: ICECredentials, remote: ICECredentials, remoteAddress: TransportAddress, tieBreaker: UInt64, now: Instant) {
        self.local = local
        self.remote = remote
        self.remoteAddress = remoteAddress
        self.tieBreaker = tieBreaker
        self.nextCheck = now
        self.start = now
    }

    /// When `pollCheck` next has something to send.
    public var nextTimeout: Instant { nextCheck }

    /// A check to send now, if one is due.
    public mutating func pollCheck(now: Instant) -> [UInt8]? {
        guard now >= nextCheck else { return nil }
        nextCheck = now + (connected ? consentInterval : checkInterval)
        let transaction = STUNTransactionID.random()
        pending[transaction] = now
        if pending.count > 64 { pending = pending.filter { now - $0.value < .seconds(10) } }
        var request = STUNMessageBuilder(type: .bindingRequest, transactionID: transaction)
        try? request.append(contentsOf: [
            .username("\(remote.ufrag):\(local.ufrag)"),
            .priority(0x7E00_00FF),  // host candidate, RFC 8445 §5.1.2.1
            .iceControlling(tieBreaker: tieBreaker),
        ])
        if !connected || nominatesOnConsent { try? request.append(.useCandidate) }
        return request.finish(integrityKey: .shortTerm(password: remote.password), fingerprint: true)
    }

    /// Takes a response to one of our checks.
    public mutating func handleResponse(_ response: STUNMessage, from source: TransportAddress, now: Instant) throws(ICERejection) {
        guard response.type == .bindingSuccessResponse || response.type == .bindingErrorResponse else { throw .notACheck }
        guard pending.removeValue(forKey: response.transactionID) != nil else { throw .unknownTransaction }
        guard response.verifyIntegrity(key: .shortTerm(password: remote.password)) else { throw .badIntegrity }
        if response.hasFingerprint, !response.verifyFingerprint() { throw .badFingerprint }
        guard response.type == .bindingSuccessResponse, source == remoteAddress else { return }
        if !connected { nextCheck = now + consentInterval }
        connected = true
        lastResponse = now
    }

    /// RFC 7675 §5.1: no response for 30 s means the path is gone.
    public func consentExpired(now: Instant) -> Bool { now - (lastResponse ?? start) > consentTimeout }
}
