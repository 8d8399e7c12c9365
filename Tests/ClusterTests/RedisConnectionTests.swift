import Cluster
import Foundation
import Testing
import Wire
import WireTesting

@Suite struct RedisReplyTests {
    /// One of each kind of RESP2 reply, as a server sends it.
    static let samples: [(bytes: String, reply: RedisReply)] = [
        ("+OK\r\n", .status("OK")),
        ("-ERR unknown command 'x'\r\n", .error("ERR unknown command 'x'")),
        (":42\r\n", .integer(42)),
        (":-7\r\n", .integer(-7)),
        ("$5\r\nhello\r\n", .string(Array("hello".utf8))),
        ("$0\r\n\r\n", .string([])),
        ("$-1\r\n", .null),
        ("*-1\r\n", .null),
        ("*0\r\n", .array([])),
        ("*3\r\n$3\r\nfoo\r\n:1\r\n$-1\r\n", .array([.string(Array("foo".utf8)), .integer(1), .null])),
        ("*2\r\n*1\r\n+a\r\n*2\r\n:1\r\n-E\r\n", .array([.array([.status("a")]), .array([.integer(1), .error("E")])])),
    ]

    @Test func everyKindOfReplyParses() throws {
        for sample in Self.samples {
            #expect(try RedisReply.parse(Array(sample.bytes.utf8)) == sample.reply, "\(sample.bytes.debugDescription)")
        }
        // Binary-safe: a bulk string may hold CR, LF and NUL.
        #expect(try RedisReply.parse([0x24, 0x33, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x0D, 0x0A]) == .string([0x00, 0x0D, 0x0A]))
        #expect(RedisReply.string(Array("hé".utf8)).text == "hé")
        #expect(RedisReply.string([0xFF]).text == nil, "not UTF-8")
        #expect(RedisReply.integer(3).integer == 3 && RedisReply.null.integer == nil)
    }

    /// Every prefix of a reply is incomplete: nil, never a wrong reply or a throw.
    @Test func truncatedRepliesAreIncomplete() throws {
        for sample in Self.samples {
            for prefix in Mutator.truncations(of: Array(sample.bytes.utf8)) {
                #expect(try RedisReply.parse(prefix) == nil, "\(String(decoding: prefix, as: UTF8.self).debugDescription)")
            }
        }
    }

    @Test func bytesThatAreNotRESPAreRefused() {
        for bad in ["?what\r\n", ":12x\r\n", "$abc\r\n"] {
            #expect(throws: RedisError.self) { try RedisReply.parse(Array(bad.utf8)) }
        }
    }

    /// Seeded mutations of every sample: parsed, incomplete or refused, never a trap.
    @Test func mutatedRepliesNeverTrap() {
        var mutator = Mutator(seed: 17)
        var outcomes = (parsed: 0, incomplete: 0, refused: 0)
        for sample in Self.samples {
            for _ in 0..<3_000 {
                do {
                    if try RedisReply.parse(mutator.mutate(Array(sample.bytes.utf8))) == nil { outcomes.incomplete += 1 } else { outcomes.parsed += 1 }
                } catch {
                    outcomes.refused += 1
                }
            }
        }
        #expect(outcomes.parsed > 0 && outcomes.incomplete > 0 && outcomes.refused > 0, "\(outcomes)")
    }
}

@Suite struct RedisURLTests {
    @Test func theConfigFormsParse() throws {
        #expect(try RedisURL(parsing: "redis://127.0.0.1:6379") == RedisURL(host: "127.0.0.1", port: 6379))
        #expect(try RedisURL(parsing: "redis://redis.lan") == RedisURL(host: "redis.lan", port: 6379))
        #expect(try RedisURL(parsing: "redis://10.0.0.5:7000/3") == RedisURL(host: "10.0.0.5", port: 7000, database: 3))
        #expect(try RedisURL(parsing: "redis://10.0.0.5:7000/") == RedisURL(host: "10.0.0.5", port: 7000))
        #expect(try RedisURL(parsing: "redis://[::1]:6380/1") == RedisURL(host: "::1", port: 6380, database: 1))
        #expect(try RedisURL(parsing: "redis://[::1]:6380/1").description == "redis://[::1]:6380/1")
    }

    @Test func badFormsAreRefusedWithAReason() {
        for bad in ["", "redis://", "http://127.0.0.1:6379", "redis://:6379", "redis://h:0", "redis://h:65536", "redis://h:x", "redis://h:",
                    "redis://user:pw@h:6379", "redis://h:6379/x", "redis://h:6379/99999", "redis://h:6379?db=1", "redis://[::1", "redis://[::1]x",
                    "redis://h o:1", "redis://h:6379/-1", "redis://h:+1"] {
            #expect(throws: RedisURL.ParseError.self, "\(bad)") { try RedisURL(parsing: bad) }
        }
    }

    @Test func mutatedAndTruncatedURLsNeverTrap() {
        let valid = Array("redis://[::1]:6380/12".utf8)
        for prefix in Mutator.truncations(of: valid) { _ = try? RedisURL(parsing: String(decoding: prefix, as: UTF8.self)) }
        var mutator = Mutator(seed: 6379)
        for _ in 0..<20_000 {
            if let url = try? RedisURL(parsing: String(decoding: mutator.mutate(valid), as: UTF8.self)) {
                #expect((1...65535).contains(url.port) && (0...9999).contains(url.database) && !url.host.isEmpty)
            }
        }
    }
}

/// Against a real redis-server on a free loopback port (persistence off).
@Suite(.serialized) struct RedisConnectionTests {
    @Test func commandsAndRepliesAgainstARealServer() throws {
        guard let server = RedisServer() else {
            print(RedisServer.missingReason ?? "redis-server did not start: skipped")
            return
        }
        let redis = RedisConnection(url: server.url)
        #expect(try redis.command(["PING"]) == .status("PONG"))
        // Binary-safe arguments, both ways.
        let value: [UInt8] = [0, 13, 10, 255, 36, 42]
        #expect(try redis.command([Array("SET".utf8), Array("k\0ey".utf8), value]) == .status("OK"))
        #expect(try redis.command([Array("GET".utf8), Array("k\0ey".utf8)]) == .string(value))
        #expect(try redis.command(["GET", "missing"]) == .null)
        #expect(try redis.command(["INCR", "n"]) == .integer(1))
        #expect(try redis.command(["RPUSH", "l", "a", "b"]) == .integer(2))
        #expect(try redis.command(["LRANGE", "l", "0", "-1"]) == .array([.string(Array("a".utf8)), .string(Array("b".utf8))]))
        if case .error(let reason) = try redis.command(["INCR", "l"]) { #expect(reason.hasPrefix("WRONGTYPE")) } else { Issue.record("no error reply") }
        #expect(try redis.command(["EVAL", "return {1, false, 'x', {2}}", "0"])
                == .array([.integer(1), .null, .string(Array("x".utf8)), .array([.integer(2)])]))
        // SET NX PX: the atomic claim's primitive.
        #expect(try redis.command(["SET", "room", "a", "NX", "PX", "5000"]) == .status("OK"))
        #expect(try redis.command(["SET", "room", "b", "NX", "PX", "5000"]) == .null)
    }

    @Test func aDatabaseIsSelectedAndAServerThatWentAwayIsReachedAgain() throws {
        guard let server = RedisServer() else {
            print(RedisServer.missingReason ?? "redis-server did not start: skipped")
            return
        }
        var url = server.url
        url.database = 2
        let redis = RedisConnection(url: url)
        #expect(try redis.command(["SET", "x", "2"]) == .status("OK"))
        let zero = RedisConnection(url: server.url)
        #expect(try zero.command(["GET", "x"]) == .null, "database 0 does not see database 2's keys")
        server.kill()
        #expect(throws: RedisError.self) { try redis.command(["PING"]) }
        #expect(!redis.isConnected, "a failed connection is dropped")
        #expect(throws: RedisError.self) { try redis.command(["PING"]) }
        // Redis back on its port (empty: no persistence): the same connection's next command connects.
        guard let again = RedisServer(port: server.url.port) else { return }
        #expect(try redis.command(["PING"]) == .status("PONG"))
        #expect(try redis.command(["GET", "x"]) == .null)
        _ = again
    }

    @Test func nothingListeningIsAConnectError() {
        guard let port = RedisServer.freePort() else { return }
        let redis = RedisConnection(url: RedisURL(host: "127.0.0.1", port: port))
        #expect {
            try redis.command(["PING"])
        } throws: { error in
            if case .connect = error as? RedisError { return true }
            return false
        }
    }
}
