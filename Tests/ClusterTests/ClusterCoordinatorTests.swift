import Cluster
import Foundation
import Testing
import Wire

/// Coordinators of several nodes against one real redis-server, each test under its own key
/// prefix. Heartbeats are run with `refreshNow()`, so nothing waits on the clock.
@Suite(.serialized) struct ClusterCoordinatorTests {
    /// No grace after an empty directory unless asked: these tests place rooms at once.
    func coordinator(_ node: String, _ server: RedisServer, prefix: String, cores: Int = 2, grace: Duration = .zero,
                     events: LoggedEvents? = nil) -> ClusterCoordinator {
        var settings = ClusterCoordinator.Settings(redis: server.url, node: node, url: "http://127.0.0.1:80\(node.utf8.first.map { Int($0) } ?? 0)")
        settings.prefix = prefix
        settings.cores = cores
        settings.directoryGrace = grace
        let coordinator = ClusterCoordinator(settings: settings) { _, event, _ in events?.add(event) }
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

    /// Redis restarted without persistence: the directory is empty, and a join for a room that
    /// is open on a arrives at b before a's next heartbeat. b must not place the room anew (a
    /// second copy of the room on another host, a's lease lost); it waits until a has claimed it
    /// again, then sends the join to a.
    @Test func aRoomOpenOnAHostIsNotPlacedAnewWhileRedisComesBackEmpty() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let events = LoggedEvents()
        // A grace longer than any question waits: answered at once, not slept through.
        let a = coordinator("a", server, prefix: keys, cores: 8, grace: .seconds(600), events: events)
        let b = coordinator("b", server, prefix: keys, grace: .seconds(600))
        defer { a.stop(); b.stop() }
        #expect(a.refreshNow() && b.refreshNow())
        // A new cluster: rooms are placed at once, this one on a, which has the most to spare.
        #expect(a.resolve(room: "mine", place: true) == .here)
        a.roomOpened("mine")
        #expect(a.refreshNow())
        server.kill()
        guard let again = RedisServer(port: server.url.port) else { Issue.record("redis-server did not start again"); return }
        // b's heartbeat meets the empty directory first; a's has not run yet, so b sees only
        // itself and would place the room on itself.
        #expect(b.refreshNow())
        let redis = RedisConnection(url: again.url)
        #expect(try redis.command(["EXISTS", keys + "directory"]) == .integer(1), "b marked the directory new")
        if case .unavailable(let reason) = b.resolve(room: "mine", place: true) {
            #expect(reason.contains("restarted"), "\(reason)")
        } else {
            Issue.record("a join for a room nobody has claimed yet waits for the hosts to claim theirs")
        }
        #expect(try redis.command(["GET", keys + "room:mine"]) == .null, "nothing placed it")
        // a's next heartbeat claims its open room again; b now sends the join there.
        #expect(a.refreshNow())
        #expect(try redis.command(["GET", keys + "room:mine"]) == .string(Array("a".utf8)))
        #expect(b.resolve(room: "mine", place: true) == .elsewhere(node: "a", url: a.settings.url))
        #expect(a.refreshNow())
        #expect(!events.all.contains("clusterLeaseLost"), "\(events.all)")
        #expect(events.all.contains("clusterLeaseRestored"), "\(events.all)")
    }

    /// Two new rooms placed by one host with a heartbeat between them, before the first's node
    /// has opened it: the second goes to the other node (the first still weighs on the node
    /// chosen for it until its record shows it).
    @Test func roomsPlacedBetweenHeartbeatsSpreadOverTheNodes() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys)
        let b = coordinator("b", server, prefix: keys)
        defer { a.stop(); b.stop() }
        #expect(a.refreshNow() && b.refreshNow() && a.refreshNow())
        func owner(_ resolution: ClusterCoordinator.Resolution) -> String? {
            switch resolution {
            case .here: "a"
            case .elsewhere(let node, _): node
            default: nil
            }
        }
        let first = owner(a.resolve(room: "r1", place: true))
        #expect(a.refreshNow() && b.refreshNow() && a.refreshNow())
        let second = owner(a.resolve(room: "r2", place: true))
        #expect(first != nil && second != nil && first != second, "r1 on \(first ?? "-"), r2 on \(second ?? "-")")
    }

    /// Placement reads the records as Redis holds them at the join, not as of this host's last
    /// heartbeat: a node that measured busy while starting and idle since is chosen at once.
    @Test func placementReadsTheRecordsAsTheyAreNow() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys, cores: 1)  // offers 0.8 cores
        defer { a.stop() }
        let url = "http://127.0.0.1:8098"
        try pretend(NodeRecord(name: "b", url: url, draining: false, cores: 4, cpu: 3.2, spare: 0, maxRooms: 100, rooms: []),
                    on: server, prefix: keys)
        #expect(a.refreshNow())
        // b is idle now; a has not beaten since.
        try pretend(NodeRecord(name: "b", url: url, draining: false, cores: 4, cpu: 0, spare: 3.2, maxRooms: 100, rooms: []),
                    on: server, prefix: keys)
        #expect(a.resolve(room: "after-startup", place: true) == .elsewhere(node: "b", url: url))
    }

    /// A new cluster (no host has seen its directory before) places rooms at once: the grace
    /// is for a Redis that lost its data.
    @Test func aNewClusterPlacesAtOnce() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let a = coordinator("a", server, prefix: prefix(), grace: .seconds(600))
        defer { a.stop() }
        #expect(a.refreshNow())
        #expect(a.resolve(room: "first", place: true) == .here)
    }

    /// A recording file is found at the live host that holds it, also after Redis restarted
    /// empty; a host that left holds nothing.
    @Test func aRecordingIsLocatedAtTheLiveHostThatHoldsIt() throws {
        guard let server = RedisServer() else { print(RedisServer.missingReason ?? "redis-server did not start: skipped"); return }
        let keys = prefix()
        let a = coordinator("a", server, prefix: keys)
        let b = coordinator("b", server, prefix: keys)
        defer { a.stop(); b.stop() }
        a.holdRecordings(["earlier.webm"])
        #expect(a.refreshNow() && b.refreshNow())
        a.holdRecordings(["standup-1.webm"])  // a recording started after the first heartbeat
        #expect(a.refreshNow())
        #expect(b.locateRecording("earlier.webm") == .elsewhere(node: "a", url: a.settings.url))
        #expect(b.locateRecording("standup-1.webm") == .elsewhere(node: "a", url: a.settings.url))
        #expect(a.locateRecording("standup-1.webm") == .here)
        #expect(b.locateRecording("nowhere.webm") == .unowned)
        server.kill()
        guard let again = RedisServer(port: server.url.port) else { Issue.record("redis-server did not start again"); return }
        #expect(a.refreshNow() && b.refreshNow())
        #expect(b.locateRecording("standup-1.webm") == .elsewhere(node: "a", url: a.settings.url), "written again after the restart")
        a.stop()
        #expect(b.locateRecording("standup-1.webm") == .unowned, "a host that left holds nothing")
        _ = again
    }
}

final class LoggedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    func add(_ event: String) { lock.withLock { events.append(event) } }
    var all: [String] { lock.withLock { events } }
}

final class LockedAnswers: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [(String, ClusterCoordinator.Resolution)] = []
    func add(_ me: String, _ resolution: ClusterCoordinator.Resolution) { lock.withLock { answers.append((me, resolution)) } }
    var all: [(String, ClusterCoordinator.Resolution)] { lock.withLock { answers } }
}
