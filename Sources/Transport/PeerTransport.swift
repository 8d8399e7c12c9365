import Wire

/// Everything one peer's media crosses on the shared port: ICE, DTLS, then SRTP and SRTCP,
/// demultiplexed by first byte (RFC 7983). Sans-IO, as every engine here: the shell hands in
/// datagrams and the time, sends what `pollTransmit()` gives, reacts to `pollEvent()`, and calls
/// `handleTimeout(now:)` at `nextTimeout(now:)`. Whatever a datagram holds, the worst it can do
/// is be dropped and counted.
public final class PeerTransport {
    /// Which side of ICE this end plays.
    public enum ICERole: Sendable {
        /// The host: answers checks (RFC 8445 §2.5).
        case lite(ICELiteAgent)
        /// A client (load tester, tests): sends checks to the host's candidate.
        case controlling(ICEControllingAgent)
    }

    public enum Event: Sendable, Equatable {
        /// The first valid check arrived (lite) or was answered (controlling).
        case iceConnected(TransportAddress)
        /// DTLS finished: SRTP can flow.
        case secure(SRTPProfile)
        /// A decrypted RTP packet.
        case rtp([UInt8])
        /// A decrypted RTCP compound packet.
        case rtcp([UInt8])
        /// The session is over; nothing more will be sent or received.
        case failed(Failure)
    }

    public enum Failure: Error, Sendable, Equatable {
        /// No valid check or response for the consent timeout (RFC 7675 §5.1).
        case consentLost
        case dtls(DTLSError)
    }

    /// What was dropped, and why. Each counter is a kind of bad input that harmed nothing.
    public struct DropCounters: Sendable, Equatable {
        /// Not STUN, DTLS, RTP or RTCP by its first byte, or too short to be any.
        public var unknownKind = 0
        /// STUN that did not parse, or a check ICE refused (wrong ufrag, integrity, fingerprint).
        public var stunRejected = 0
        /// DTLS or SRTP from an address no valid check came from.
        public var unknownAddress = 0
        /// SRTP or SRTCP before keys, or that failed authentication or replay checks.
        public var srtpRejected = 0
        /// DTLS records from the peer's address that the handshake or its end could not use
        /// (garbage, replayed or out-of-place handshake records).
        public var dtlsRejected = 0
        public var total: Int { unknownKind + stunRejected + unknownAddress + srtpRejected + dtlsRejected }
        public init() {}

        public static func + (a: Self, b: Self) -> Self {
            var sum = a
            sum.unknownKind += b.unknownKind
            sum.stunRejected += b.stunRejected
            sum.unknownAddress += b.unknownAddress
            sum.srtpRejected += b.srtpRejected
            sum.dtlsRejected += b.dtlsRejected
            return sum
        }
    }

    public var drops: DropCounters {
        var drops = counted
        drops.dtlsRejected = dtls.droppedDatagrams
        return drops
    }
    private var counted = DropCounters()
    public private(set) var failure: Failure?
    public var isSecure: Bool { outbound != nil && failure == nil }
    /// Where media goes: kept as `ice` changes, since every packet sent and received reads it
    /// (reading it from the agent copied the agent, retains and all, per packet).
    public private(set) var remoteAddress: TransportAddress?

    private static func mediaAddress(of ice: ICERole) -> TransportAddress? {
        switch ice {
        case .lite(let agent): agent.selectedAddress
        case .controlling(let agent): agent.connected ? agent.remoteAddress : nil
        }
    }

    /// True once a valid check came from `address` (or, for a client, it is the host's).
    public func hasValidated(_ address: TransportAddress) -> Bool { validatedAddresses.contains(address) }

    private var ice: ICERole {
        didSet { remoteAddress = Self.mediaAddress(of: ice) }
    }
    private let dtls: DTLSTransport
    private let start: Instant
    private var iceConnected = false
    /// Addresses that passed a check: the only ones DTLS and SRTP are taken from (bounded).
    private var validatedAddresses: [TransportAddress] = []
    /// When each validated address last sent a valid check or an authenticated packet.
    private var lastHeard: [TransportAddress: Instant] = [:]
    /// A lite host follows its peer to another validated address once the selected one has
    /// been silent this long while the other is heard (NAT rebinding: the peer's checks and
    /// media come from a new port, and its old mapping is gone).
    public static let rebindingSilence: Duration = .seconds(1)
    private var inbound: SRTPSession?
    private var outbound: SRTPSession?
    private var transmits = FIFOQueue<Transmit>()
    private var events = FIFOQueue<Event>()

    public init(ice: ICERole, dtls: DTLSTransport, now: Instant) {
        self.ice = ice
        remoteAddress = Self.mediaAddress(of: ice)
        self.dtls = dtls
        self.start = now
        if case .controlling(let agent) = ice { validatedAddresses = [agent.remoteAddress] }
    }

    /// Takes one datagram that arrived from `source`.
    public func handleDatagram(_ datagram: [UInt8], from source: TransportAddress, now: Instant) {
        guard failure == nil else { return }
        switch DatagramKind(datagram: datagram) {
        case .stun: handleSTUN(datagram, from: source, now: now)
        case .dtls:
            guard validatedAddresses.contains(source) else { counted.unknownAddress += 1; return }
            dtls.handleDatagram(datagram, now: now)
            afterDTLS(destination: source)
        case .rtpOrRTCP: handleSRTP(datagram, from: source, now: now)
        case .unknown: counted.unknownKind += 1
        }
    }

    /// Runs what is due: ICE checks and consent, DTLS retransmission.
    public func handleTimeout(now: Instant) {
        guard failure == nil else { return }
        switch ice {
        case .lite(let agent):
            if agent.consentExpired(now: now, since: start) { return fail(.consentLost) }
        case .controlling(var agent):
            if agent.consentExpired(now: now) { return fail(.consentLost) }
            if let check = agent.pollCheck(now: now) { transmits.append((check, agent.remoteAddress)) }
            ice = .controlling(agent)
        }
        dtls.handleTimeout(now: now)
        afterDTLS(destination: remoteAddress)
    }

    /// When `handleTimeout(now:)` is next due.
    public func nextTimeout(now: Instant) -> Instant? {
        guard failure == nil else { return nil }
        let iceDeadline: Instant = switch ice {
        case .lite(let agent): agent.consentDeadline(since: start)
        case .controlling(let agent): min(agent.nextTimeout, (agent.lastResponse ?? start) + agent.consentTimeout)
        }
        // Asked after every datagram: no arrays built, and DTLS not asked once its handshake is
        // done (the SRTP sessions exist): it has no timer after it.
        guard outbound == nil, let dtlsDeadline = dtls.nextTimeout(now: now) else { return iceDeadline }
        return min(iceDeadline, dtlsDeadline)
    }

    /// A datagram to send.
    public typealias Transmit = (bytes: [UInt8], destination: TransportAddress)

    public func pollTransmit() -> Transmit? { transmits.popFirst() }

    /// Every datagram queued to send, in order (for one `sendmmsg`).
    public func takeTransmits() -> [Transmit] {
        var all: [Transmit] = []
        all.reserveCapacity(transmits.count)
        while let transmit = transmits.popFirst() { all.append(transmit) }
        return all
    }

    public func pollEvent() -> Event? { events.popFirst() }

    /// Protects and queues an RTP packet; false when the session cannot send yet.
    @discardableResult
    public func sendRTP(_ packet: consuming [UInt8]) -> Bool {
        guard let transmit = protectedRTP(packet) else { return false }
        transmits.append(transmit)
        return true
    }

    /// An RTP packet protected into the datagram to send, not queued: for a caller that batches
    /// its sends itself (the media port, a packet per guest per tick). Nil when the session
    /// cannot send yet. Send what `pollTransmit` holds first, to keep the order.
    public func protectedRTP(_ packet: consuming [UInt8]) -> Transmit? {
        guard let outbound, let destination = remoteAddress, failure == nil,
              let protected = try? outbound.protectRTP(packet) else { return nil }
        return (protected, destination)
    }

    /// Whether datagrams wait in `pollTransmit`.
    public var hasTransmits: Bool { !transmits.isEmpty }

    /// Protects and queues an RTCP compound packet; false when the session cannot send yet.
    @discardableResult
    public func sendRTCP(_ packet: consuming [UInt8]) -> Bool {
        guard let outbound, let destination = remoteAddress, failure == nil,
              let protected = try? outbound.protectRTCP(packet) else { return false }
        transmits.append((protected, destination))
        return true
    }

    /// Starts the DTLS handshake when this end is its client (call once ICE is up).
    private func startDTLSIfClient(now: Instant) {
        guard dtls.role == .client else { return }
        dtls.start(now: now)
        afterDTLS(destination: remoteAddress)
    }

    private func handleSTUN(_ datagram: [UInt8], from source: TransportAddress, now: Instant) {
        guard let message = try? STUNMessage(parsing: datagram) else { counted.stunRejected += 1; return }
        switch ice {
        case .lite(var agent):
            do {
                let response = try agent.handleCheck(message, from: source, now: now)
                ice = .lite(agent)
                transmits.append((response, source))
                // A 420 answer (unknown required attribute) validates nothing.
                if message.unknownComprehensionRequired.isEmpty {
                    if !validatedAddresses.contains(source) {
                        validatedAddresses.append(source)
                        if validatedAddresses.count > 8 { lastHeard[validatedAddresses.removeFirst()] = nil }
                    }
                    heard(from: source, now: now)
                }
            } catch {
                counted.stunRejected += 1
            }
        case .controlling(var agent):
            do {
                try agent.handleResponse(message, from: source, now: now)
                ice = .controlling(agent)
            } catch {
                counted.stunRejected += 1
            }
        }
        if !iceConnected, let address = remoteAddress {
            iceConnected = true
            events.append(.iceConnected(address))
            startDTLSIfClient(now: now)
        }
    }

    private func handleSRTP(_ datagram: [UInt8], from source: TransportAddress, now: Instant) {
        guard validatedAddresses.contains(source) else { counted.unknownAddress += 1; return }
        guard let inbound, datagram.count >= 2 else { counted.srtpRejected += 1; return }
        // RFC 5761 §4: RTCP packet types 192–223 put 64–95 in the RTP payload-type position.
        let isRTCP = (64...95).contains(datagram[1] & 0x7F)
        do {
            events.append(isRTCP ? .rtcp(try inbound.unprotectRTCP(datagram)) : .rtp(try inbound.unprotectRTP(datagram)))
            heard(from: source, now: now)
        } catch {
            counted.srtpRejected += 1
        }
    }

    /// An ICE restart (RFC 8445 §9, after a renegotiation with new credentials): checks must
    /// carry the new ones; DTLS and SRTP go on. A lite host keeps sending to the selected address
    /// until a check with the new credentials selects one; a controlling client checks afresh.
    public func restartICE(local: ICECredentials, remote: ICECredentials, now: Instant) {
        switch ice {
        case .lite(let agent):
            ice = .lite(agent.restarted(local: local, remote: remote))
        case .controlling(let agent):
            var restarted = ICEControllingAgent(local: local, remote: remote, remoteAddress: agent.remoteAddress,
                                                tieBreaker: agent.tieBreaker, now: now)
            restarted.nominatesOnConsent = agent.nominatesOnConsent
            ice = .controlling(restarted)
        }
    }

    /// A validated address was heard (a valid check, or a packet that authenticated): when the
    /// selected one has gone silent, the lite host sends there instead. Only the peer can make
    /// both (the check needs its ICE password, the packet its SRTP key), so no one else can
    /// divert its media.
    private func heard(from source: TransportAddress, now: Instant) {
        lastHeard[source] = now
        guard case .lite = ice, let selected = remoteAddress, selected != source,
              now - (lastHeard[selected] ?? start) >= Self.rebindingSilence, case .lite(var agent) = ice else { return }
        agent.select(source)
        ice = .lite(agent)
    }

    /// Sends what DTLS wrote and notices the end of the handshake.
    private func afterDTLS(destination: TransportAddress?) {
        while let datagram = dtls.pollTransmit() {
            guard let destination = remoteAddress ?? destination else { break }
            transmits.append((datagram, destination))
        }
        switch dtls.state {
        case .handshaking: break
        case .connected(let keys):
            guard outbound == nil else { return }
            do {
                inbound = try SRTPSession(profile: keys.profile, direction: .inbound, masterKeyAndSalt: keys.remoteMasterKeyAndSalt)
                outbound = try SRTPSession(profile: keys.profile, direction: .outbound, masterKeyAndSalt: keys.localMasterKeyAndSalt)
                events.append(.secure(keys.profile))
            } catch {
                fail(.dtls(.noSRTPProfile))
            }
        case .failed(let error):
            fail(.dtls(error))
        }
    }

    private func fail(_ reason: Failure) {
        guard failure == nil else { return }
        failure = reason
        events.append(.failed(reason))
    }
}
