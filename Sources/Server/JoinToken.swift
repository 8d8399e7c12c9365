import Foundation
import Transport

/// A join token (docs/api.md): a JWT (RFC 7519) signed HS256 (RFC 7518 §3.2) with the config's
/// `auth.secret`, naming the room, the identity, when it expires, and whether it may run the
/// room (layout, recording, moderation).
public struct JoinToken: Sendable, Equatable {
    public var room: String
    public var identity: String
    /// Seconds since 1970 (the `exp` claim).
    public var expires: Int64
    public var admin: Bool
    /// Not valid before, seconds since 1970 (the optional `nbf` claim, RFC 7519 §4.1.5).
    public var notBefore: Int64?

    public init(room: String, identity: String, expires: Int64, admin: Bool = false, notBefore: Int64? = nil) {
        self.room = room
        self.identity = identity
        self.expires = expires
        self.admin = admin
        self.notBefore = notBefore
    }

    public enum VerificationError: Error, Equatable, CustomStringConvertible {
        case malformed(String), unsupportedAlgorithm(String), badSignature, expired, notYetValid
        public var description: String {
            switch self {
            case .malformed(let why): "the token is not a JWT: \(why)"
            case .unsupportedAlgorithm(let alg): "the token is signed with \(alg); only HS256 is accepted"
            case .badSignature: "the token's signature does not match this host's secret"
            case .expired: "the token has expired"
            case .notYetValid: "the token is not valid yet (its nbf is in the future)"
            }
        }
    }

    private struct Header: Codable { var alg: String; var typ: String? }
    private struct Claims: Codable {
        var room: String
        var identity: String
        var exp: Int64
        var admin: Bool?
        var nbf: Int64?
    }

    /// The compact serialization: header.claims.signature, each base64url without padding.
    public func signed(secret: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = (try? encoder.encode(Header(alg: "HS256", typ: "JWT"))) ?? Data()
        let claims = (try? encoder.encode(Claims(room: room, identity: identity, exp: expires, admin: admin ? true : nil, nbf: notBefore))) ?? Data()
        let signingInput = Self.base64URL(Array(header)) + "." + Self.base64URL(Array(claims))
        let signature = MessageAuthentication.hmacSHA256(key: Array(secret.utf8), message: Array(signingInput.utf8)) ?? []
        return signingInput + "." + Self.base64URL(signature)
    }

    /// Reads and checks a token: the signature first (RFC 7515 §5.2), then the expiry at `now`.
    public init(verifying token: String, secret: String, now: Date = Date()) throws(VerificationError) {
        guard token.utf8.count <= 4096 else { throw .malformed("longer than 4096 bytes") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("it needs three dot-separated parts") }
        guard let headerBytes = Self.fromBase64URL(parts[0]), let claimBytes = Self.fromBase64URL(parts[1]),
              let signature = Self.fromBase64URL(parts[2]) else { throw .malformed("a part is not base64url") }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else { throw .malformed("unreadable header") }
        guard header.alg == "HS256" else { throw .unsupportedAlgorithm(header.alg) }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard let expected = MessageAuthentication.hmacSHA256(key: Array(secret.utf8), message: signingInput),
              MessageAuthentication.constantTimeEqual(expected, signature) else { throw .badSignature }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)) else {
            throw .malformed("the claims need room, identity and exp")
        }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw .expired }
        // A minute of leeway for the clocks of the host and the backend that minted it.
        if let nbf = claims.nbf, Double(nbf) > now.timeIntervalSince1970 + 60 { throw .notYetValid }
        self.init(room: claims.room, identity: claims.identity, expires: claims.exp, admin: claims.admin ?? false, notBefore: claims.nbf)
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func fromBase64URL(_ text: Substring) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).map(Array.init)
    }
}
