import Testing
import Transport
import Wire
import WireTesting

/// Two DTLS endpoints connected in memory: datagrams move between them only when `exchange` runs,
/// and a seeded network may drop them.
private struct DTLSPair {
    let server: DTLSTransport
    let client: DTLSTransport
    var generator = SeededGenerator(seed: 7)
    var dropRate = 0.0
    var delivered = 0

    /// Moves every pending datagram once in each direction; returns how many were delivered.
    @discardableResult
    mutating func exchange(now: Instant) -> Int {
        var moved = 0
        for (from, to) in [(client, server), (server, client)] {
            while let datagram = from.pollTransmit() {
                if Double.random(in: 0..<1, using: &generator) < dropRate { continue }
                to.handleDatagram(datagram, now: now)
                moved += 1
            }
        }
        delivered += moved
        return moved
    }
}

@Suite struct DTLSTransportTests {
    static let serverCertificate = Result { try DTLSCertificate() }
    static let clientCertificate = Result { try DTLSCertificate() }

    private func makePair(serverExpects: [CertificateFingerprint]? = nil, clientCertificate: DTLSCertificate? = nil,
                          serverProfiles: [SRTPProfile] = SRTPProfile.allCases,
                          clientProfiles: [SRTPProfile] = SRTPProfile.allCases, now: Instant) throws -> DTLSPair {
        let serverCertificate = try Self.serverCertificate.get()
        let clientCertificate = try clientCertificate ?? Self.clientCertificate.get()
        let server = try DTLSTransport(context: DTLSContext(certificate: serverCertificate, profiles: serverProfiles), role: .server,
                                       remoteFingerprints: serverExpects ?? [clientCertificate.fingerprint], now: now)
        let client = try DTLSTransport(context: DTLSContext(certificate: clientCertificate, profiles: clientProfiles), role: .client,
                                       remoteFingerprints: [serverCertificate.fingerprint], now: now)
        return DTLSPair(server: server, client: client)
    }

    private func keys(_ transport: DTLSTransport) -> SRTPKeyingMaterial? {
        if case .connected(let keys) = transport.state { return keys }
        return nil
    }

    @Test func certificateFingerprintIsSHA256InSDPForm() throws {
        let fingerprint = try Self.serverCertificate.get().fingerprint
        #expect(fingerprint.algorithm == "sha-256")
        #expect(fingerprint.digest.count == 32)
        #expect(fingerprint.sdpValue.count == 32 * 3 - 1)
        #expect(CertificateFingerprint(algorithm: "SHA-256", sdpValue: fingerprint.sdpValue) == fingerprint)
        #expect(CertificateFingerprint(algorithm: "sha-256", sdpValue: "AB:CD:G1") == nil)
        #expect(CertificateFingerprint(algorithm: "sha-256", sdpValue: "") == nil)
        #expect(try Self.serverCertificate.get().pem.hasPrefix("-----BEGIN CERTIFICATE-----"))
    }

    @Test func clientAndServerAgreeOnGCMAndCrossedKeys() throws {
        let now = Instant.milliseconds(1000)
        var pair = try makePair(now: now)
        pair.client.start(now: now)
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        let server = try #require(keys(pair.server))
        let client = try #require(keys(pair.client))
        #expect(server.profile == .aeadAES128GCM)
        #expect(server.localMasterKeyAndSalt == client.remoteMasterKeyAndSalt)
        #expect(server.remoteMasterKeyAndSalt == client.localMasterKeyAndSalt)
        #expect(server.localMasterKeyAndSalt != server.remoteMasterKeyAndSalt)

        // The exported keys carry media: what the client protects, the server reads.
        let outbound = try SRTPSession(profile: client.profile, direction: .outbound, masterKeyAndSalt: client.localMasterKeyAndSalt)
        let inbound = try SRTPSession(profile: server.profile, direction: .inbound, masterKeyAndSalt: server.remoteMasterKeyAndSalt)
        let rtp: [UInt8] = [0x80, 96, 0, 1, 0, 0, 0, 1, 0xCA, 0xFE, 0xBA, 0xBE, 1, 2, 3, 4]
        #expect(try inbound.unprotectRTP(outbound.protectRTP(rtp)) == rtp)
    }

    @Test func aPeerOfferingOnlyHMACGetsHMAC() throws {
        let now = Instant.milliseconds(0)
        var pair = try makePair(clientProfiles: [.aes128CMHMACSHA1_80], now: now)
        pair.client.start(now: now)
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        #expect(keys(pair.server)?.profile == .aes128CMHMACSHA1_80)
        #expect(keys(pair.client)?.profile == .aes128CMHMACSHA1_80)
    }

    @Test func anRSAPeerIsAccepted() throws {
        let now = Instant.milliseconds(0)
        var pair = try makePair(clientCertificate: DTLSCertificate(keyType: .rsa2048), now: now)
        pair.client.start(now: now)
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        #expect(keys(pair.server) != nil)
    }

    @Test func aCertificateThatDoesNotMatchTheSDPFingerprintIsRefused() throws {
        let now = Instant.milliseconds(0)
        let stranger = try DTLSCertificate()
        var pair = try makePair(serverExpects: [stranger.fingerprint], now: now)
        pair.client.start(now: now)
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        #expect(pair.server.state == .failed(.fingerprintMismatch))
    }

    @Test func noCommonSRTPProfileFailsTheHandshake() throws {
        let now = Instant.milliseconds(0)
        var pair = try makePair(serverProfiles: [.aeadAES128GCM], clientProfiles: [.aes128CMHMACSHA1_80], now: now)
        pair.client.start(now: now)
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        #expect(keys(pair.server) == nil)
        #expect(keys(pair.client) == nil)
    }

    @Test func garbageAndMutatedRecordsNeverTrapAndTheHandshakeStillCompletes() throws {
        let now = Instant.milliseconds(0)
        var pair = try makePair(now: now)
        var mutator = Mutator(seed: 42)
        pair.client.start(now: now)
        let hello = try #require(pair.client.pollTransmit())
        // Hostile variants of the ClientHello first, then the real one.
        for _ in 0..<300 { pair.server.handleDatagram(mutator.mutate(hello), now: now) }
        pair.server.handleDatagram([], now: now)
        pair.server.handleDatagram([UInt8](repeating: 0x16, count: 3), now: now)
        if case .failed = pair.server.state {
            // A mutant may legitimately fail this association; a fresh one must still work.
            pair = try makePair(now: now)
            pair.client.start(now: now)
        } else {
            pair.server.handleDatagram(hello, now: now)
        }
        for _ in 0..<10 where pair.exchange(now: now) > 0 {}
        #expect(keys(pair.server) != nil)
    }

    @Test func aHandshakeThatNeverCompletesTimesOut() throws {
        let start = Instant.milliseconds(0)
        let pair = try makePair(now: start)
        pair.client.start(now: start)
        #expect(pair.client.nextTimeout(now: start) != nil)
        pair.client.handleTimeout(now: start + .seconds(31))
        #expect(pair.client.state == .failed(.handshakeTimedOut))
        #expect(pair.client.nextTimeout(now: start + .seconds(31)) == nil)
    }
}
