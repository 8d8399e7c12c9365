import Cluster
import Foundation
import Testing
import Wire

/// Coordinators of several nodes against one real redis-server, each test under its own key
/// prefix. Heartbeats are run with `refreshNow()`, so nothing waits on the clock.
@Suite(.serialized) struct ClusterCoordinatorTests {
    func coordinator(_ node: String, _ server: RedisServer, prefix: String, cores: Int = 2) -> ClusterCoordinator {
        var settings = ClusterCoordinator.Settings(redis: server.url, node: node, url: "http://127.0.0.1:80\(node.utf8.first.map { Int($0) } ?? 0)")
        settings.prefix = prefix
        settings.cores = cores
        let coordinator = ClusterCoordinator(settings: settings) { _, _, _ in }
        coordinator.start()
        return coordinator
    }

    func prefix() -> String { "test-\(UUID().uuidString.prefix(8)):" }

    /// A record written as another host would, for nodes the test only pretends to run.
    func pretend(_ record: NodeRecord, on server: RedisServer, prefix: String) throws {
        let redis = RedisConnection(url: server.url)
        _ = try redis.command([Array("SET".utf8), Array((prefix + "node:" + record.name).utf8), record.json])
        _ = try redis.command(["SADD", prefix + "nodes", record.name])
    }

    @Test func aNewRoomGoesToTheNodeWithTheMostSpareAndOthersRedirectThere() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys, cores: 1)  // offers 0.8 cores
        let b = coordinator("b", server, prefix: keys, cores: 4)  // offers 3.2
        defer { a.stop(); b.stop() }
        #expect(a.refreshNow() && b.refreshNow() && a.refreshNow())
        #expect(a.resolve(room: "standup", place: true) == .elsewhere(node: "b", url: b.settings.url))
        // b was chosen and claimed for: it serves the join that follows the redirect.
        #expect(b.resolve(room: "standup", place: true) == .here)
        b.roomOpened("standup")
        #expect(a.resolve(room: "standup", place: false) == .elsewhere(node: "b", url: b.settings.url))
        #expect(a.resolve(room: "nothing", place: false) == .unowned, "no placement without a join")
        // The listing sees both nodes and b's room.
        b.publish(.init(rooms: [NodeRecord.Room(name: "standup", participants: 1)], videoGuests: 1))
        #expect(b.refreshNow())
        let nodes = try a.nodes().get()
        #expect(nodes.map(\.name) == ["a", "b"])
        #expect(nodes.last?.rooms.map(\.name) == ["standup"])
    }

    @Test func twoFirstJoinsRacingAtTwoHostsEndWithOneOwner() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys)
        let b = coordinator("b", server, prefix: keys)
        defer { a.stop(); b.stop() }
        #expect(a.refreshNow() && b.refreshNow())
        for round in 0..<20 {
            let room = "race\(round)"
            let answers = LockedAnswers()
            let group = DispatchGroup()
            for (me, coordinator) in [("a", a), ("b", b)] {
                DispatchQueue.global().async(group: group) { answers.add(me, coordinator.resolve(room: room, place: true)) }
            }
            group.wait()
            // Each answers with the owner: one says here, the other redirects to it.
            let owners = answers.all.map { me, resolution -> String? in
                switch resolution {
                case .here: me
                case .elsewhere(let node, _): node
                default: nil
                }
            }
            #expect(owners.count == 2 && owners[0] != nil && owners[0] == owners[1], "\(room): \(answers.all)")
        }
    }

    @Test func aRoomWhoseOwnerIsGoneIsPlacedAnewAndLeasesAreRenewedAndReleased() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let redis = RedisConnection(url: server.url)
        try pretend(NodeRecord(name: "ghost", url: "http://127.0.0.1:9", cores: 64, spare: 50), on: server, prefix: keys)
        _ = try redis.command(["SET", keys + "room:standup", "ghost", "PX", "60000"])
        let a = coordinator("a", server, prefix: keys)
        defer { a.stop() }
        #expect(a.refreshNow())
        #expect(a.resolve(room: "standup", place: true) == .elsewhere(node: "ghost", url: "http://127.0.0.1:9"))
        // The ghost's record lapses (its host died): the lease it still holds is taken over.
        _ = try redis.command(["DEL", keys + "node:ghost"])
        #expect(a.resolve(room: "standup", place: false) == .unowned, "a dead owner owns nothing")
        #expect(a.refreshNow())
        #expect(a.resolve(room: "standup", place: true) == .here)
        #expect(try redis.command(["GET", keys + "room:standup"]) == .string(Array("a".utf8)))
        a.roomOpened("standup")
        // Renewed by the heartbeat; re-claimed when Redis lost it (a restart with no persistence).
        _ = try redis.command(["DEL", keys + "room:standup"])
        #expect(a.refreshNow())
        #expect(try redis.command(["GET", keys + "room:standup"]) == .string(Array("a".utf8)))
        let ttl = try redis.command(["PTTL", keys + "room:standup"]).integer ?? -1
        #expect(ttl > 0 && ttl <= 5000, "the lease: \(ttl) ms")
        // Closed: the lease goes with the next job, and a's record stays.
        a.roomClosed("standup")
        #expect(a.refreshNow())
        #expect(try redis.command(["GET", keys + "room:standup"]) == .null)
        let record = try NodeRecord(json: redis.command(["GET", keys + "node:a"]).text.map { Array($0.utf8) } ?? [])
        #expect(record.name == "a" && record.rooms.isEmpty)
        let expiry = try redis.command(["PTTL", keys + "node:a"]).integer ?? -1
        #expect(expiry > 0 && expiry <= 5000, "the record's expiry: \(expiry) ms")
    }

    @Test func aDrainingNodeIsNotChosenAndEveryNodeDrainingPlacesNothing() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys, cores: 8)
        let b = coordinator("b", server, prefix: keys, cores: 1)
        defer { a.stop(); b.stop() }
        a.setDraining(true)
        #expect(a.refreshNow() && b.refreshNow() && a.refreshNow())
        #expect(a.resolve(room: "r1", place: true) == .elsewhere(node: "b", url: b.settings.url))
        b.setDraining(true)
        #expect(b.refreshNow() && a.refreshNow())
        if case .noPlacement = a.resolve(room: "r2", place: true) {} else { Issue.record("every node drains: no placement") }
        let record = try NodeRecord(json: RedisConnection(url: server.url).command(["GET", keys + "node:a"]).text.map { Array($0.utf8) } ?? [])
        #expect(record.draining)
    }

    @Test func redisGoneAnswersUnavailableLocalRoomsStayAndItCatchesUpWhenBack() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys)
        defer { a.stop() }
        #expect(a.refreshNow())
        #expect(a.resolve(room: "mine", place: true) == .here)
        a.roomOpened("mine")
        server.kill()
        #expect(!a.refreshNow())
        #expect(a.isRedisReachable == false)
        #expect(a.resolve(room: "mine", place: true) == .here, "a room this host has open needs no Redis")
        if case .unavailable(let reason) = a.resolve(room: "other", place: true) {
            #expect(reason.contains("Redis"), "\(reason)")
        } else {
            Issue.record("a room it cannot resolve is unavailable")
        }
        guard let again = RedisServer(port: server.url.port) else { return }
        #expect(a.refreshNow())
        #expect(a.isRedisReachable == true)
        let redis = RedisConnection(url: again.url)
        #expect(try redis.command(["GET", keys + "room:mine"]) == .string(Array("a".utf8)), "its lease is claimed again")
        #expect(try redis.command(["EXISTS", keys + "node:a"]) == .integer(1), "and its record written")
    }
}

final class LockedAnswers: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [(String, ClusterCoordinator.Resolution)] = []
    func add(_ me: String, _ resolution: ClusterCoordinator.Resolution) { lock.withLock { answers.append((me, resolution)) } }
    var all: [(String, ClusterCoordinator.Resolution)] { lock.withLock { answers } }
}
