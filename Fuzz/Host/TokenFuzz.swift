import Foundation
import Transport
@testable import Server

/// Join tokens (JWS HS256). The fuzzer cannot forge an HMAC, so inputs whose first byte is odd
/// have their first two parts signed with the test secret: the header and claims readers are
/// reached, not only the signature check. A token that verifies must name a room and identity
/// and re-sign to a token that verifies to the same claims.
enum TokenFuzz {
    static let secret = "fuzz-secret"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        var text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        if first & 1 == 1 {
            let parts = text.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2 else { return }
            let signingInput = parts[0] + "." + parts[1]
            let signature = MessageAuthentication.hmacSHA256(key: Array(secret.utf8), message: Array(signingInput.utf8)) ?? []
            text = signingInput + "." + JoinToken.base64URL(signature)
        }
        guard let token = try? JoinToken(verifying: text, secret: secret, now: now) else { return }
        let again = JoinToken(room: token.room, identity: token.identity, expires: token.expires, admin: token.admin,
                              notBefore: token.notBefore).signed(secret: secret)
        guard let reread = try? JoinToken(verifying: again, secret: secret, now: now) else {
            preconditionFailure("a token that verified does not verify once re-signed")
        }
        precondition(reread.room == token.room && reread.identity == token.identity && reread.admin == token.admin,
                     "re-signing changed the claims")
    }
}
