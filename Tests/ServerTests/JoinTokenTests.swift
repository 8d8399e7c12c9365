import Sockets
import Foundation
import Testing
@testable import Server

@Suite struct JoinTokenTests {
    let secret = "correct horse battery staple"
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aSignedTokenVerifiesWithItsClaims() throws {
        let token = JoinToken(room: "standup", identity: "alice", expires: 1_800_000_600, admin: true)
        let text = token.signed(secret: secret)
        #expect(text.split(separator: ".").count == 3)
        #expect(try JoinToken(verifying: text, secret: secret, now: now) == token)
    }

    @Test func theWrongSecretATamperedClaimAndExpiryAreRefused() throws {
        let text = JoinToken(room: "standup", identity: "alice", expires: 1_800_000_600).signed(secret: secret)
        #expect(throws: JoinToken.VerificationError.badSignature) { try JoinToken(verifying: text, secret: "other", now: now) }
        // Swap in claims for another identity, keeping the signature.
        let parts = text.split(separator: ".")
        let forged = JoinToken(room: "standup", identity: "mallory", expires: 1_800_000_600).signed(secret: "other").split(separator: ".")[1]
        #expect(throws: JoinToken.VerificationError.badSignature) {
            try JoinToken(verifying: "\(parts[0]).\(forged).\(parts[2])", secret: secret, now: now)
        }
        #expect(throws: JoinToken.VerificationError.expired) {
            try JoinToken(verifying: text, secret: secret, now: now.addingTimeInterval(601))
        }
    }

    @Test func unsignedAndMalformedTokensAreRefused() throws {
        // alg "none" (RFC 7518 §3.6) must never be accepted.
        let header = JoinToken.base64URL(Array(#"{"alg":"none"}"#.utf8))
        let claims = JoinToken.base64URL(Array(#"{"room":"r","identity":"i","exp":9999999999}"#.utf8))
        #expect(throws: JoinToken.VerificationError.unsupportedAlgorithm("none")) {
            try JoinToken(verifying: "\(header).\(claims).", secret: secret, now: now)
        }
        for bad in ["", "a.b", "a.b.c.d", "!!!.???.***", String(repeating: "a", count: 5000), "..."] {
            #expect(throws: JoinToken.VerificationError.self) { try JoinToken(verifying: bad, secret: secret, now: now) }
        }
    }
}

@Suite struct AuthTests {
    private func withAuthHost(_ body: (HTTPTestClient) throws -> Void) throws {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        config.auth.secret = "s3cret"
        let host = try ConferenceHost(config: config)
        defer { host.stop() }
        try body(HTTPTestClient(port: host.http.address.port))
    }

    private func offer() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/chromium-offer.sdp")
        return try Array(Data(contentsOf: url))
    }

    private func token(room: String, identity: String, admin: Bool = false) -> String {
        JoinToken(room: room, identity: identity, expires: Int64(Date().timeIntervalSince1970) + 600, admin: admin).signed(secret: "s3cret")
    }

    @Test func withASecretAJoinNeedsATokenForThatRoomAndIdentity() throws {
        try withAuthHost { client in
            let sdp = ["Content-Type": "application/sdp"]
            #expect(try client.send("POST", "/v1/rooms/r1/participants?identity=alice", headers: sdp, body: offer()).status == 401)
            let forged = JoinToken(room: "r1", identity: "alice", expires: 9_999_999_999).signed(secret: "guess")
            #expect(try client.send("POST", "/v1/rooms/r1/participants?identity=alice",
                                    headers: sdp.merging(["Authorization": "Bearer \(forged)"]) { $1 }, body: offer()).status == 401)
            let otherRoom = token(room: "r2", identity: "alice")
            #expect(try client.send("POST", "/v1/rooms/r1/participants?identity=alice",
                                    headers: sdp.merging(["Authorization": "Bearer \(otherRoom)"]) { $1 }, body: offer()).status == 403)
            let otherIdentity = token(room: "r1", identity: "bob")
            #expect(try client.send("POST", "/v1/rooms/r1/participants?identity=alice",
                                    headers: sdp.merging(["Authorization": "Bearer \(otherIdentity)"]) { $1 }, body: offer()).status == 403)
            let good = token(room: "r1", identity: "alice")
            let joined = try client.send("POST", "/v1/rooms/r1/participants?identity=alice&token=\(good)", headers: sdp, body: offer())
            #expect(joined.status == 201)
            // Listing every room is an admin's call.
            #expect(try client.send("GET", "/v1/rooms", headers: ["Authorization": "Bearer \(good)"]).status == 403)
            #expect(try client.send("GET", "/v1/rooms", headers: ["Authorization": "Bearer \(token(room: "r1", identity: "x", admin: true))"]).status == 200)
            // The health check stays open.
            #expect(try client.send("GET", "/healthz").status == 200)
        }
    }
}
