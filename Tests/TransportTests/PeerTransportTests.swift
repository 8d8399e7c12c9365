import Foundation
import Testing
import Transport
import Wire
import WireTesting

/// A host and a client `PeerTransport` joined by a seeded, lossy, in-memory network on a manual
/// clock. OpenSSL times DTLS retransmissions by its own clock, so while a handshake waits for a
/// lost flight the network lets that much real time pass too (a few tens of milliseconds here).
private final class InMemoryCall {
    let hostAddress = TransportAddress(ipv4: 127, 0, 0, 1, port: 50000)
    /// The client's address as the host sees it: a test may move it (NAT rebinding).
    var clientAddress = TransportAddress(ipv4: 127, 0, 0, 1, port: 40000)
    let clock = ManualClock(start: .milliseconds(1000))
    let host: PeerTransport
    let client: PeerTransport
    var generator: SeededGenerator
    var lossRate: Double
    var hostEvents: [PeerTransport.Event] = []
    var clientEvents: [PeerTransport.Event] = []

    static let hostCertificate = Result { try DTLSCertificate() }
    static let clientCertificate = Result { try DTLSCertificate() }

    init(seed: UInt64, lossRate: Double = 0, clientPresents: DTLSCertificate? = nil, clientNominatesOnConsent: Bool = true) throws {
        let now = clock.now()
        let hostCredentials = ICECredentials.random(), clientCredentials = ICECredentials.random()
        let hostCertificate = try Self.hostCertificate.get(), clientCertificate = try Self.clientCertificate.get()
        let hostDTLS = try DTLSTransport(context: DTLSContext(certificate: hostCertificate), role: .server,
                                         remoteFingerprints: [clientCertificate.fingerprint], now: now,
                                         initialRetransmitInterval: .milliseconds(10))
        let clientDTLS = try DTLSTransport(context: DTLSContext(certificate: clientPresents ?? clientCertificate), role: .client,
                                           remoteFingerprints: [hostCertificate.fingerprint], now: now,
                                           initialRetransmitInterval: .milliseconds(10))
        host = PeerTransport(ice: .lite(ICELiteAgent(local: hostCredentials, remote: clientCredentials)), dtls: hostDTLS, now: now)
        var agent = ICEControllingAgent(local: clientCredentials, remote: hostCredentials, remoteAddress: hostAddress,
                                        tieBreaker: seed, now: now)
        agent.nominatesOnConsent = clientNominatesOnConsent
        client = PeerTransport(ice: .controlling(agent), dtls: clientDTLS, now: now)
        generator = SeededGenerator(seed: seed)
        self.lossRate = lossRate
    }

    /// Delivers what both sides sent (minus losses); true if anything moved.
    @discardableResult
    func deliver() -> Bool {
        var moved = false
        let now = clock.now()
        while let (bytes, destination) = client.pollTransmit() {
            moved = true
            if Double.random(in: 0..<1, using: &generator) >= lossRate, destination == hostAddress {
                host.handleDatagram(bytes, from: clientAddress, now: now)
            }
        }
        while let (bytes, destination) = host.pollTransmit() {
            moved = true
            if Double.random(in: 0..<1, using: &generator) >= lossRate, destination == clientAddress {
                client.handleDatagram(bytes, from: hostAddress, now: now)
            }
        }
        while let event = host.pollEvent() { hostEvents.append(event) }
        while let event = client.pollEvent() { clientEvents.append(event) }
        return moved
    }

    /// Runs the call until `done` or `steps` run out: deliver, else jump to the next deadline.
    func run(steps: Int = 2000, until done: () -> Bool) {
        for _ in 0..<steps where !done() {
            if deliver() { continue }
            let now = clock.now()
            guard let next = [host.nextTimeout(now: now), client.nextTimeout(now: now)].compactMap({ $0 }).min() else { return }
            let wait = max(.zero, next - now)
            if !(host.isSecure && client.isSecure) {
                // Let OpenSSL's own clock reach its retransmission deadline as well.
                Thread.sleep(forTimeInterval: Double(wait.nanosecondsClamped) / 1e9)
            }
            clock.advance(by: wait)
            host.handleTimeout(now: clock.now())
            client.handleTimeout(now: clock.now())
        }
    }

    var bothSecure: Bool { host.isSecure && client.isSecure }
}

private func rtpPacket(seq: UInt16, ssrc: UInt32 = 0x1234_5678, payload: [UInt8] = Array(repeating: 0x42, count: 100)) -> [UInt8] {
    [0x80, 96, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x10, 0x00,
     UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)] + payload
}

@Suite struct PeerTransportTests {
    @Test func hostAndClientCompleteICEAndDTLSAndCarrySRTPBothWays() throws {
        let call = try InMemoryCall(seed: 1)
        call.client.handleTimeout(now: call.clock.now())  // the first check
        call.run { call.bothSecure }
        #expect(call.bothSecure)
        #expect(call.hostEvents.contains(.iceConnected(call.clientAddress)))
        #expect(call.hostEvents.contains(.secure(.aeadAES128GCM)))
        #expect(call.clientEvents.contains(.secure(.aeadAES128GCM)))

        #expect(call.client.sendRTP(rtpPacket(seq: 1)))
        #expect(call.host.sendRTP(rtpPacket(seq: 2, ssrc: 0xAAAA_BBBB)))
        let rtcp: [UInt8] = [0x80, 201, 0, 1, 0x12, 0x34, 0x56, 0x78]
        #expect(call.client.sendRTCP(rtcp))
        call.deliver()
        #expect(call.hostEvents.contains(.rtp(rtpPacket(seq: 1))))
        #expect(call.hostEvents.contains(.rtcp(rtcp)))
        #expect(call.clientEvents.contains(.rtp(rtpPacket(seq: 2, ssrc: 0xAAAA_BBBB))))
        #expect(call.host.drops.total == 0)

        // A packet protected for a caller that batches its own sends: to the client, not queued.
        let datagram = try #require(call.host.protectedRTP(rtpPacket(seq: 3, ssrc: 0xAAAA_BBBB)))
        #expect(datagram.destination == call.clientAddress && !call.host.hasTransmits)
        call.client.handleDatagram(datagram.bytes, from: call.hostAddress, now: call.clock.now())
        #expect(call.client.pollEvent() == .rtp(rtpPacket(seq: 3, ssrc: 0xAAAA_BBBB)))
    }

    /// NAT rebinding: the client's packets start coming from another port and its old mapping
    /// is gone. Its media is dropped until its next consent check validates the new address;
    /// then, the old one silent, the host sends there, and the call goes on without a rejoin.
    /// Its consent checks do not nominate (a check with USE-CANDIDATE moves the host at once).
    @Test func aClientWhoseAddressChangesIsFollowedAfterAValidCheck() throws {
        let call = try InMemoryCall(seed: 2, clientNominatesOnConsent: false)
        call.client.handleTimeout(now: call.clock.now())
        call.run { call.bothSecure }
        #expect(call.bothSecure)
        call.clientAddress = TransportAddress(ipv4: 127, 0, 0, 1, port: 40_001)
        var sequence: UInt16 = 100
        var received: [UInt16] = []
        for _ in 0..<400 {  // 8 s in 20 ms steps: the client's consent check comes every 5 s
            call.clock.advance(by: .milliseconds(20))
            call.host.handleTimeout(now: call.clock.now())
            call.client.handleTimeout(now: call.clock.now())
            sequence &+= 1
            call.client.sendRTP(rtpPacket(seq: sequence))
            call.host.sendRTP(rtpPacket(seq: sequence, ssrc: 0xAAAA_BBBB))
            call.clientEvents.removeAll()
            call.deliver()
            for case .rtp(let bytes) in call.clientEvents { received.append(UInt16(bytes[2]) << 8 | UInt16(bytes[3])) }
        }
        #expect(call.host.remoteAddress == call.clientAddress, "the host sends to the new address")
        #expect(call.host.failure == nil && call.client.failure == nil)
        #expect(received.count > 100, "the host's media reaches the client again: \(received.count) packets")
        #expect(received.last == sequence)
    }

    @Test(arguments: [UInt64(11), 12, 13, 14, 15])
    func aCallCompletesOverALossyNetwork(seed: UInt64) throws {
        let call = try InMemoryCall(seed: seed, lossRate: 0.3)
        call.client.handleTimeout(now: call.clock.now())
        call.run { call.bothSecure }
        #expect(call.bothSecure, "seed \(seed): host \(call.host.failure.map { "\($0)" } ?? "-"), client \(call.client.failure.map { "\($0)" } ?? "-")")
    }

    @Test func badInputIsDroppedAndCountedWhileMediaGoesOn() throws {
        let call = try InMemoryCall(seed: 3)
        call.client.handleTimeout(now: call.clock.now())
        call.run { call.bothSecure }
        let now = call.clock.now()
        let stranger = TransportAddress(ipv4: 127, 0, 0, 9, port: 9999)
        var mutator = Mutator(seed: 99)

        // Garbage of every first-byte kind, STUN with a bad integrity, DTLS and SRTP from an
        // unknown address, SRTP that fails authentication, and truncated SRTP.
        for _ in 0..<200 { call.host.handleDatagram(mutator.mutate(rtpPacket(seq: 5)), from: call.clientAddress, now: now) }
        call.host.handleDatagram([], from: call.clientAddress, now: now)
        call.host.handleDatagram([0x42, 0x42], from: call.clientAddress, now: now)
        var badCheck = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
        try badCheck.append(.username("nobody:nobody"))
        call.host.handleDatagram(badCheck.finish(integrityKey: .shortTerm(password: "wrong"), fingerprint: true), from: call.clientAddress, now: now)
        call.host.handleDatagram([0x16, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], from: stranger, now: now)
        call.client.sendRTP(rtpPacket(seq: 10))
        let (protected, _) = try #require(call.client.pollTransmit())
        call.host.handleDatagram(protected, from: stranger, now: now)
        var tampered = protected
        tampered[tampered.count - 1] ^= 0xFF
        call.host.handleDatagram(tampered, from: call.clientAddress, now: now)
        call.host.handleDatagram(Array(protected.prefix(9)), from: call.clientAddress, now: now)
        // After the handshake: application data (no data channels here) and records of a content
        // type TLS does not know, from the peer's own address.
        call.host.handleDatagram([0x17, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 7, 0, 3, 1, 2, 3], from: call.clientAddress, now: now)
        call.host.handleDatagram([0x3F] + Array(repeating: 0xAB, count: 40), from: call.clientAddress, now: now)

        #expect(call.host.drops.dtlsRejected == 2)
        #expect(call.host.drops.stunRejected >= 1)
        #expect(call.host.drops.unknownAddress >= 2)
        #expect(call.host.drops.srtpRejected >= 2)
        #expect(call.host.failure == nil)

        // The genuine packet still gets through, and so does the next one.
        call.host.handleDatagram(protected, from: call.clientAddress, now: now)
        call.client.sendRTP(rtpPacket(seq: 11))
        call.deliver()
        #expect(call.hostEvents.contains(.rtp(rtpPacket(seq: 10))))
        #expect(call.hostEvents.contains(.rtp(rtpPacket(seq: 11))))
    }

    @Test func aPeerThatGoesSilentIsDroppedAfterTheConsentTimeout() throws {
        let call = try InMemoryCall(seed: 4)
        call.client.handleTimeout(now: call.clock.now())
        call.run { call.bothSecure }
        // The client vanishes: the host hears nothing more.
        let silentFrom = call.clock.now()
        call.clock.advance(by: .seconds(29))
        call.host.handleTimeout(now: call.clock.now())
        #expect(call.host.failure == nil)
        call.clock.advance(by: .seconds(2))
        let deadline = try #require(call.host.nextTimeout(now: silentFrom))
        #expect(deadline <= call.clock.now())
        call.host.handleTimeout(now: call.clock.now())
        #expect(call.host.failure == .consentLost)
        #expect(call.host.pollEvent() == .failed(.consentLost))
        #expect(!call.host.sendRTP(rtpPacket(seq: 1)))
        #expect(call.host.nextTimeout(now: call.clock.now()) == nil)
    }

    @Test func aClientWhoseCertificateIsNotTheOneInItsSDPIsRefused() throws {
        let call = try InMemoryCall(seed: 5, clientPresents: DTLSCertificate())
        call.client.handleTimeout(now: call.clock.now())
        call.run { call.host.failure != nil }
        #expect(call.host.failure == .dtls(.fingerprintMismatch))
        #expect(!call.host.isSecure)
    }
}
