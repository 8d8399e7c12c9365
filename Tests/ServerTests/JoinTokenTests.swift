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

    /// `nbf` (RFC 7519 §4.1.5): refused before it, with a minute of leeway for clocks.
    @Test func aTokenIsNotValidBeforeItsNotBefore() throws {
        let token = JoinToken(room: "standup", identity: "alice", expires: 1_800_003_600, notBefore: 1_800_000_300)
        let text = token.signed(secret: secret)
        #expect(throws: JoinToken.VerificationError.notYetValid) { try JoinToken(verifying: text, secret: secret, now: now) }
        #expect(try JoinToken(verifying: text, secret: secret, now: now.addingTimeInterval(250)) == token, "within the leeway")
        #expect(try JoinToken(verifying: text, secret: secret, now: now.addingTimeInterval(300)) == token)
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
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        try body(HTTPTestClient(port: host.http.address.port))
    }

    private func offer() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("SDPTests/Fixtures/chromium-offer.sdp")
        return try Array(Data(contentsOf: url))
    }

    /// A token for `room` and `identity`, good for 10 minutes unless `expires` says otherwise.
    private func token(room: String, identity: String, admin: Bool = false, expires: Int64? = nil, notBefore: Int64? = nil,
                       secret: String = "s3cret") -> String {
        JoinToken(room: room, identity: identity, expires: expires ?? Int64(Date().timeIntervalSince1970) + 600, admin: admin,
                  notBefore: notBefore).signed(secret: secret)
    }

    /// Every route of the API against every way a token can be wrong: no token, garbage,
    /// `alg: none`, a wrong signature, expired, not yet valid (401); a token for another room,
    /// for another identity, a participant's token on an admin call, an admin token of another
    /// room (403). A good token is let through (whatever the call then answers).
    @Test func everyRouteRefusesEveryWrongToken() throws {
        try withAuthHost { client in try everyRouteRefusesEveryWrongToken(client) }
    }

    private func everyRouteRefusesEveryWrongToken(_ client: HTTPTestClient) throws {
        let now = Int64(Date().timeIntervalSince1970)
        func sign(_ room: String, _ identity: String, admin: Bool = false, expires: Int64? = nil, notBefore: Int64? = nil,
                  secret: String = "s3cret") -> String {
            token(room: room, identity: identity, admin: admin, expires: expires, notBefore: notBefore, secret: secret)
        }
        // alice is in room r (she stays connecting: her offer's peer never connects).
        let joined = try client.send("POST", "/v1/rooms/r/participants?identity=alice&token=\(sign("r", "alice"))",
                                     headers: ["Content-Type": "application/sdp"], body: offer())
        let alice = try #require(joined.headers["location"]?.split(separator: "/").last.map(String.init), "\(joined.status) \(joined.text)")

        let header = JoinToken.base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims = JoinToken.base64URL(Array(#"{"room":"r","identity":"alice","exp":\#(now + 600),"admin":true}"#.utf8))
        let unauthenticated: [(String, String?)] = [
            ("no token", nil), ("garbage", "not.a.token"), ("alg none", "\(header).\(claims)."),
            ("wrong signature", sign("r", "alice", admin: true, secret: "guess")),
            ("expired", sign("r", "alice", admin: true, expires: now - 10)),
            ("not yet valid", sign("r", "alice", admin: true, notBefore: now + 3600)),
        ]
        enum Needs { case any, member, participant, admin, adminOfAnyRoom }
        let routes: [(method: String, path: String, needs: Needs)] = [
            ("GET", "/metrics", .adminOfAnyRoom), ("GET", "/v1/rooms", .adminOfAnyRoom), ("POST", "/v1/drain", .adminOfAnyRoom),
            ("POST", "/v1/echo", .any), ("DELETE", "/v1/echo/nothing", .any),
            ("GET", "/v1/rooms/r", .member), ("POST", "/v1/rooms/r/viewers", .member), ("DELETE", "/v1/rooms/r/viewers/v1", .member),
            ("GET", "/v1/rooms/r/events", .member),
            ("POST", "/v1/rooms/r/recordings", .admin), ("DELETE", "/v1/rooms/r/recordings/x", .admin),
            ("GET", "/v1/rooms/r/recordings", .admin), ("GET", "/v1/recordings/x.webm", .adminOfAnyRoom),
            ("GET", "/v1/rooms/r/layout", .admin), ("PUT", "/v1/rooms/r/layout", .admin),
            ("POST", "/v1/rooms/r/participants?identity=alice", .participant),
            ("PATCH", "/v1/rooms/r/participants/\(alice)", .participant), ("DELETE", "/v1/rooms/r/participants/\(alice)", .participant),
            ("POST", "/v1/rooms/r/participants/\(alice)/subscriptions", .participant),
            ("PUT", "/v1/rooms/r/participants/\(alice)/placeholder", .participant),
            ("DELETE", "/v1/rooms/r/participants/\(alice)/placeholder", .participant),
            ("DELETE", "/v1/rooms/r/participants/\(alice)/subscriptions/bob/camera", .participant),
        ]
        #expect(Set(routes.map(\.method)).count >= 4 && routes.count == HostAPI.routes.count, "a row for every route of HostAPI.routes")
        for route in routes {
            for (name, token) in unauthenticated {
                let headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
                let status = try client.send(route.method, route.path, headers: headers).status
                #expect(status == 401, "\(route.method) \(route.path) with \(name): \(status)")
            }
            // Tokens that are good but do not grant the call.
            var forbidden: [(String, String)] = []
            if route.needs != .any && route.needs != .adminOfAnyRoom {
                forbidden.append(("another room's token", sign("other", "alice")))
                forbidden.append(("another room's admin token", sign("other", "alice", admin: true)))
            }
            if route.needs == .participant { forbidden.append(("another identity's token", sign("r", "mallory"))) }
            if route.needs == .admin || route.needs == .adminOfAnyRoom { forbidden.append(("a participant's token", sign("r", "alice"))) }
            for (name, token) in forbidden {
                let status = try client.send(route.method, route.path, headers: ["Authorization": "Bearer \(token)"]).status
                #expect(status == 403, "\(route.method) \(route.path) with \(name): \(status)")
            }
        }
        // The room's admin token is let through everywhere (the events stream is left out: it
        // stays open; DELETE of alice last).
        for route in routes where route.path != "/v1/rooms/r/events" {
            let status = try client.send(route.method, route.path, headers: ["Authorization": "Bearer \(sign("r", "admin", admin: true))"]).status
            #expect(status != 401 && status != 403, "\(route.method) \(route.path) with r's admin token: \(status)")
        }
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
