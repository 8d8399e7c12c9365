import Testing
import Transport
import Wire

@Suite struct ICEAgentTests {
    let host = ICECredentials(ufrag: "hostufrg", password: "hostpasswordhostpassword")
    let peer = ICECredentials(ufrag: "peerufrg", password: "peerpasswordpeerpassword")
    let hostAddress = TransportAddress(ipv4: 127, 0, 0, 1, port: 50000)
    let peerAddress = TransportAddress(ipv4: 127, 0, 0, 1, port: 40001)

    private func check(username: String, password: String, useCandidate: Bool = true, extra: [STUNAttribute] = []) throws -> STUNMessage {
        var builder = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
        try builder.append(contentsOf: [.username(username), .priority(100), .iceControlling(tieBreaker: 1)] + extra)
        if useCandidate { try builder.append(.useCandidate) }
        return try STUNMessage(parsing: builder.finish(integrityKey: .shortTerm(password: password), fingerprint: true))
    }

    @Test func aControllingPeerAndTheLiteHostConnectInMemory() throws {
        let start = Instant.milliseconds(0)
        var lite = ICELiteAgent(local: host, remote: peer)
        var client = ICEControllingAgent(local: peer, remote: host, remoteAddress: hostAddress, tieBreaker: 42, now: start)
        let request = try #require(client.pollCheck(now: start) as [UInt8]?)
        let response = try lite.handleCheck(STUNMessage(parsing: request), from: peerAddress, now: start)
        try client.handleResponse(STUNMessage(parsing: response), from: hostAddress, now: start)
        #expect(client.connected)
        #expect(lite.selectedAddress == peerAddress)
        #expect(lite.nominated)
        // The response tells the peer its own address (XOR-MAPPED-ADDRESS).
        #expect(try STUNMessage(parsing: response).xorMappedAddress == peerAddress)
        // Checks go on as consent, every 5 s.
        #expect(client.pollCheck(now: start + .seconds(1)) == nil)
        #expect(client.pollCheck(now: start + .seconds(5)) != nil)
    }

    @Test func checksWithTheWrongUsernameOrPasswordAreIgnored() throws {
        var lite = ICELiteAgent(local: host, remote: peer)
        let now = Instant.milliseconds(0)
        let wrongHost = try check(username: "other:peerufrg", password: host.password)
        let wrongPeer = try check(username: "hostufrg:other", password: host.password)
        let wrongPassword = try check(username: "hostufrg:peerufrg", password: "not-the-password")
        #expect(throws: ICERejection.wrongUsername) { try lite.handleCheck(wrongHost, from: peerAddress, now: now) }
        #expect(throws: ICERejection.wrongUsername) { try lite.handleCheck(wrongPeer, from: peerAddress, now: now) }
        #expect(throws: ICERejection.badIntegrity) { try lite.handleCheck(wrongPassword, from: peerAddress, now: now) }
        #expect(lite.selectedAddress == nil)
        #expect(lite.lastConsent == nil)
    }

    @Test func aNominatedCheckFromANewAddressSwitchesTheSelectedAddress() throws {
        var lite = ICELiteAgent(local: host, remote: peer)
        let other = TransportAddress(ipv4: 127, 0, 0, 2, port: 40002)
        let now = Instant.milliseconds(0)
        _ = try lite.handleCheck(check(username: lite.expectedUsername, password: host.password, useCandidate: false), from: peerAddress, now: now)
        #expect(lite.selectedAddress == peerAddress)
        #expect(!lite.nominated)
        // An unnominated check from elsewhere does not move media.
        _ = try lite.handleCheck(check(username: lite.expectedUsername, password: host.password, useCandidate: false), from: other, now: now)
        #expect(lite.selectedAddress == peerAddress)
        _ = try lite.handleCheck(check(username: lite.expectedUsername, password: host.password), from: other, now: now)
        #expect(lite.selectedAddress == other)
    }

    @Test func consentLapsesThirtySecondsAfterTheLastValidCheck() throws {
        var lite = ICELiteAgent(local: host, remote: peer)
        let start = Instant.milliseconds(0)
        #expect(!lite.consentExpired(now: start + .seconds(29), since: start))
        #expect(lite.consentExpired(now: start + .seconds(31), since: start))
        _ = try lite.handleCheck(check(username: lite.expectedUsername, password: host.password), from: peerAddress, now: start + .seconds(20))
        #expect(!lite.consentExpired(now: start + .seconds(49), since: start))
        #expect(lite.consentExpired(now: start + .seconds(51), since: start))
        #expect(lite.consentDeadline(since: start) == start + .seconds(50))
    }

    @Test func anUnknownRequiredAttributeGets420AndNoConsent() throws {
        var lite = ICELiteAgent(local: host, remote: peer)
        let request = try check(username: lite.expectedUsername, password: host.password,
                                extra: [.other(type: STUNAttributeType(rawValue: 0x0031), value: [1, 2, 3, 4])])
        let response = try STUNMessage(parsing: lite.handleCheck(request, from: peerAddress, now: .milliseconds(0)))
        #expect(response.type == .bindingErrorResponse)
        #expect(response.errorCode?.code == 420)
        #expect(lite.lastConsent == nil)
    }

    @Test func theClientIgnoresResponsesItDidNotAskFor() throws {
        let start = Instant.milliseconds(0)
        var lite = ICELiteAgent(local: host, remote: peer)
        var client = ICEControllingAgent(local: peer, remote: host, remoteAddress: hostAddress, tieBreaker: 1, now: start)
        let forged = try STUNMessage(parsing: lite.handleCheck(check(username: lite.expectedUsername, password: host.password), from: peerAddress, now: start))
        #expect(throws: ICERejection.unknownTransaction) { try client.handleResponse(forged, from: hostAddress, now: start) }
        #expect(!client.connected)
        #expect(client.consentExpired(now: start + .seconds(31)))
    }
}
