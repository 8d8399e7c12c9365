import Foundation
import Wire

/// One host's part in the cluster: its record in Redis, the leases of the rooms it owns, and
/// the answers to "who owns this room?" for the HTTP handlers.
///
/// Every Redis command runs on one thread of its own (`tessera-cluster`), in order: a queue of
/// jobs and, every second, the heartbeat (the node record, the leases, the view of the other
/// nodes). Callers never touch Redis: the media loop only hands over its state (`publish`,
/// `roomOpened`, `roomClosed`, which take a lock and return), and an HTTP handler waits for its
/// answer at most `requestTimeout`, so a Redis that hangs or is gone costs a request a 503, never
/// the media loop a moment.
///
/// Keys (`prefix` = `tessera:`): `tessera:node:<name>` the node's JSON record with a 5 s expiry;
/// `tessera:nodes` a set of node names, so that the records are read with SMEMBERS and one MGET
/// rather than a SCAN of the keyspace; `tessera:room:<name>` the owner's node name with the lease
/// as its expiry; `tessera:directory` the mark of a directory in use: the Redis server time
/// (ms) at which a host that had seen it before found it gone (Redis restarted without
/// persistence), or 0 for a new cluster; `tessera:files:<name>` the set of recording files the
/// node holds, which counts only while the node's record lives.
public final class ClusterCoordinator: @unchecked Sendable {
    public struct Settings: Sendable {
        public var redis: RedisURL
        public var node: String
        public var url: String
        /// A room's lease: renewed every heartbeat while the room is open, so it lapses at most
        /// this long after its host stops renewing.
        public var lease: Duration = .seconds(5)
        /// The node record's expiry: a host that stops refreshing is gone for placement after it.
        public var nodeExpiry: Duration = .seconds(5)
        public var heartbeat: Duration = .seconds(1)
        /// How long an HTTP handler waits for the worker's answer.
        public var requestTimeout: Duration = .seconds(2)
        /// How long after Redis came back empty no room is placed anew: long enough for every
        /// live host's heartbeat to claim again the rooms it has open (one heartbeat, plus the
        /// reconnect of a connection the restart broke), so that a join arriving in between does
        /// not place an open room on a second host. A join in that time waits it out.
        public var directoryGrace: Duration = .seconds(2)
        public var maxRooms = 100
        public var cores = ProcessInfo.processInfo.activeProcessorCount
        public var model = CapacityModel()
        public var prefix = "tessera:"
        public init(redis: RedisURL, node: String, url: String) {
            self.redis = redis
            self.node = node
            self.url = url
        }
    }

    /// What the host has open, as the media loop last said.
    public struct LocalState: Sendable, Equatable {
        public var rooms: [NodeRecord.Room]
        public var videoGuests: Int
        public var otherGuests: Int
        /// Viewers served as an edge host, of rooms others own.
        public var edgeViewers: Int
        /// Cores the process used over the last second.
        public var cpu: Double
        public init(rooms: [NodeRecord.Room] = [], videoGuests: Int = 0, otherGuests: Int = 0, edgeViewers: Int = 0, cpu: Double = 0) {
            self.rooms = rooms
            self.videoGuests = videoGuests
            self.otherGuests = otherGuests
            self.edgeViewers = edgeViewers
            self.cpu = cpu
        }
    }

    /// Who owns a room, for a request about it.
    public enum Resolution: Sendable, Equatable {
        /// This host owns it, or was just chosen for it: serve the request here.
        case here
        /// Another live host owns it: redirect there.
        case elsewhere(node: String, url: String)
        /// Nobody (alive) owns it, and the request does not place rooms: serve it here (as
        /// today: a room that is not open is not found).
        case unowned
        /// Every node drains or is full.
        case noPlacement(String)
        /// Redis could not be asked.
        case unavailable(String)
    }

    public typealias Log = @Sendable (_ warning: Bool, _ event: String, _ fields: [String: String]) -> Void

    public let settings: Settings
    private let log: Log
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [(RedisConnection) -> Void] = []
    private var local = LocalState()
    private var localRooms: Set<String> = []
    private var draining = false
    private var stopping = false
    private var beatNow = false
    private var view: [NodeRecord] = []
    /// Rooms this host placed on each node (node → room → when): counted against its spare
    /// capacity for a lease (5 s) after, whether or not its record shows them yet (a room just
    /// opened shows neither in the measured CPU nor, where that is larger, in the model), so
    /// that joins placed in a burst do not all pick the same node.
    private var pending: [String: [String: ContinuousClock.Instant]] = [:]
    /// Whether the worker has found the directory's mark in Redis before: then a Redis without
    /// it has lost its data (restarted without persistence), and placement waits `directoryGrace`.
    private var sawDirectory = false
    private var reachable: Bool?
    private var lastFailure: (at: ContinuousClock.Instant, reason: String)?
    private var lostRooms: Set<String> = []
    private var recordingFiles: Set<String> = []
    /// Whether Redis holds `recordingFiles` (false after a failure: written again on the next
    /// heartbeat that works).
    private var filesWritten = false
    private let finished = DispatchSemaphore(value: 0)
    private var started = false
    static let maximumQueuedJobs = 256

    public init(settings: Settings, log: @escaping Log) {
        self.settings = settings
        self.log = log
    }

    /// Starts the worker thread (once).
    public func start() {
        let first = condition.withLock { () -> Bool in
            defer { started = true }
            return !started
        }
        guard first else { return }
        let thread = Thread { [self] in run() }
        thread.name = "tessera-cluster"
        thread.start()
    }

    /// Removes the node's record, releases its leases (bounded by the command timeout) and ends
    /// the worker. Later calls return at once.
    public func stop() {
        let wait = condition.withLock { () -> Bool in
            defer { stopping = true; condition.broadcast() }
            return started && !stopping
        }
        if wait { finished.wait() }
    }

    // MARK: What the host tells it (any thread; a lock, never Redis)

    public func publish(_ state: LocalState) {
        condition.withLock { local = state }
    }

    public func roomOpened(_ name: String) {
        condition.withLock { _ = localRooms.insert(name) }
    }

    /// Forgets the room and releases its lease (in the background).
    public func roomClosed(_ name: String) {
        let node = settings.node, key = roomKey(name)
        let queued = condition.withLock { () -> Bool in
            localRooms.remove(name)
            lostRooms.remove(name)
            guard jobs.count < Self.maximumQueuedJobs, !stopping else { return false }
            jobs.append { connection in _ = try? connection.command(["EVAL", Self.releaseScript, "1", key, node]) }
            condition.signal()
            return true
        }
        // Not queued: the lease lapses by itself within `lease`.
        _ = queued
    }

    /// Recording files this host holds (its folder at start, then each recording it starts), so
    /// that another host can send a `GET` of one here. Written to Redis in the background.
    public func holdRecordings(_ files: [String]) {
        let valid = files.filter(ClusterNames.isValid)
        guard !valid.isEmpty else { return }
        let node = settings.node, key = filesKey(node)
        condition.withLock {
            recordingFiles.formUnion(valid)
            guard filesWritten, jobs.count < Self.maximumQueuedJobs, !stopping else { return }
            jobs.append { connection in _ = try? connection.command(["SADD", key] + valid) }
            condition.signal()
        }
    }

    /// Which live host holds a recording file: `.elsewhere` with its URL, `.here` when it is this
    /// one, `.unowned` when no live host says it has it.
    public func locateRecording(_ file: String) -> Resolution {
        guard ClusterNames.isValid(file) else { return .unowned }
        if condition.withLock({ recordingFiles.contains(file) }) { return .here }
        let me = settings.node, nodes = nodesKey, prefix = settings.prefix
        let result = ask { connection throws(RedisError) -> Resolution in
            let found = try connection.command(["EVAL", Self.locateFileScript, "1", nodes, prefix, file])
            guard let pair = found.elements, pair.count == 2, let owner = pair[0].text, let bytes = pair[1].bytes,
                  let record = try? NodeRecord(json: bytes) else { return .unowned }
            return owner == me ? .here : .elsewhere(node: owner, url: record.url)
        }
        switch result {
        case .success(let resolution): return resolution
        case .failure(let failure): return .unavailable(failure.reason)
        }
    }

    public func setDraining(_ on: Bool) {
        condition.withLock {
            draining = on
            beatNow = true  // the record says so at once, not a second later
            condition.signal()
        }
    }

    public var isDraining: Bool { condition.withLock { draining } }
    /// Whether the last exchange with Redis worked; nil before the first.
    public var isRedisReachable: Bool? { condition.withLock { reachable } }
    public func isLocal(_ room: String) -> Bool { condition.withLock { localRooms.contains(room) } }

    // MARK: Questions (an HTTP thread waits, at most `requestTimeout`)

    /// Who owns `room`. With `place`, a room nobody alive owns is claimed for the node chosen by
    /// `Placement` (this one or another), atomically: of two hosts placing one room at once, one
    /// claim wins and both answer with its owner.
    public func resolve(room: String, place: Bool) -> Resolution {
        if isLocal(room) { return .here }
        guard ClusterNames.isValid(room) else { return .unowned }
        // Redis came back empty a moment ago: wait (here, on the HTTP thread) until the hosts
        // have claimed their open rooms again, then ask once more.
        switch resolveOnce(room: room, place: place) {
        case .settling(let remaining) where remaining <= settings.requestTimeout:
            Thread.sleep(forTimeInterval: remaining.seconds)
            if case .resolved(let resolution) = resolveOnce(room: room, place: place) { return resolution }
            return .unavailable("Redis restarted empty: the hosts are still claiming their open rooms again")
        case .settling:
            return .unavailable("Redis restarted empty: the hosts are still claiming their open rooms again")
        case .resolved(let resolution):
            return resolution
        }
    }

    private enum Attempt: Sendable {
        case resolved(Resolution)
        /// No room is placed for this long yet (`directoryGrace`).
        case settling(Duration)
    }

    private func resolveOnce(room: String, place: Bool) -> Attempt {
        let me = settings.node, key = roomKey(room), prefix = nodeKeyPrefix, lease = String(settings.lease.milliseconds)
        let directory = directoryKey, grace = String(settings.directoryGrace.milliseconds)
        let result = ask { [self] connection throws(RedisError) -> Attempt in
            func answer(owner: String, record: RedisReply?) -> Resolution {
                if owner == me { return .here }
                guard let bytes = record?.bytes, let node = try? NodeRecord(json: bytes) else { return .unowned }
                return .elsewhere(node: owner, url: node.url)
            }
            let found = try connection.command(["EVAL", Self.lookupScript, "1", key, prefix])
            if let pair = found.elements, pair.count == 2, let owner = pair[0].text, pair[1] != .null {
                return .resolved(answer(owner: owner, record: pair[1]))
            }
            guard place else { return .resolved(.unowned) }
            // The records as Redis holds them now, not as of the last heartbeat: a host that
            // was busy starting up a second ago is idle now (a burst of first joins at one
            // host put two rooms on it while its view showed the others still starting).
            let nodes = try readNodes(connection)
            condition.withLock { view = nodes }
            guard let candidate = placementCandidate() else {
                return .resolved(.noPlacement("every host in the cluster is draining or at its room limit"))
            }
            let claimed = try connection.command(["EVAL", Self.claimScript, "2", key, directory, candidate, lease, prefix, grace])
            if let pair = claimed.elements, pair.count == 2, pair[0] == .null, let wait = pair[1].integer {
                return .settling(.milliseconds(max(1, wait)))
            }
            guard let pair = claimed.elements, pair.count == 2, let owner = pair[0].text else {
                throw .protocol("the claim script answered \(claimed)")
            }
            if owner == candidate { condition.withLock { pending[candidate, default: [:]][room] = ContinuousClock.now } }
            let resolution = answer(owner: owner, record: pair[1])
            // Claimed for a node whose record lapsed between the two reads: serve it here rather
            // than send the client to a host that is gone; the next join re-places it.
            return .resolved(resolution == .unowned ? .here : resolution)
        }
        switch result {
        case .success(let attempt): return attempt
        case .failure(let failure): return .resolved(.unavailable(failure.reason))
        }
    }

    /// Runs a heartbeat now and waits for it: true when Redis took it. (Tests, and a drain that
    /// should show at once.)
    @discardableResult
    public func refreshNow() -> Bool {
        let result = ask(evenAfterFailure: true) { [self] connection throws(RedisError) in
            if !heartbeat(connection) { throw .io(condition.withLock { lastFailure?.reason } ?? "the heartbeat failed") }
        }
        if case .success = result { return true }
        return false
    }

    /// Every live node's record, read now (for `GET /v1/rooms`).
    public func nodes() -> Result<[NodeRecord], ClusterFailure> {
        switch ask({ [self] connection throws(RedisError) in try readNodes(connection) }) {
        case .success(let nodes): .success(nodes)
        case .failure(let failure): .failure(failure)
        }
    }

    // MARK: The worker

    private var nodeKeyPrefix: String { settings.prefix + "node:" }
    private var nodesKey: String { settings.prefix + "nodes" }
    private func roomKey(_ room: String) -> String { settings.prefix + "room:" + room }
    private var directoryKey: String { settings.prefix + "directory" }
    private func filesKey(_ node: String) -> String { settings.prefix + "files:" + node }

    /// Runs `body` on the worker and waits for it.
    private func ask<T: Sendable>(evenAfterFailure: Bool = false, _ body: @escaping (RedisConnection) throws(RedisError) -> T) -> Result<T, ClusterFailure> {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        let queued = condition.withLock { () -> String? in
            if stopping { return "the host is stopping" }
            guard jobs.count < Self.maximumQueuedJobs else { return "too many cluster requests waiting" }
            jobs.append { [self] connection in
                do throws(RedisError) {
                    if !evenAfterFailure { try recentFailure() }
                    box.set(.success(try body(connection)))
                    noteReachable()
                } catch {
                    noteFailure(error)
                    box.set(.failure(ClusterFailure(reason: error.description)))
                }
                done.signal()
            }
            condition.signal()
            return nil
        }
        if let queued { return .failure(ClusterFailure(reason: queued)) }
        guard done.wait(timeout: .now() + .milliseconds(Int(settings.requestTimeout.milliseconds))) == .success, let result = box.get() else {
            return .failure(ClusterFailure(reason: "Redis did not answer within \(settings.requestTimeout)"))
        }
        return result
    }

    /// After a failure, questions are answered at once with it until the next heartbeat tries
    /// Redis again, rather than each waiting for its own connect timeout.
    private func recentFailure() throws(RedisError) {
        let failure = condition.withLock { lastFailure }
        if let failure, ContinuousClock.now - failure.at < settings.heartbeat { throw .io(failure.reason) }
    }

    private func noteFailure(_ error: RedisError) {
        let wasReachable = condition.withLock { () -> Bool? in
            defer { reachable = false; lastFailure = (ContinuousClock.now, error.description) }
            return reachable
        }
        if wasReachable != false { log(true, "clusterUnavailable", ["detail": error.description, "redis": settings.redis.description]) }
    }

    private func noteReachable() {
        let was = condition.withLock { () -> Bool? in
            defer { reachable = true; lastFailure = nil }
            return reachable
        }
        if was != true { log(false, "clusterAvailable", ["redis": settings.redis.description, "node": settings.node, "url": settings.url]) }
    }

    /// The node to place a new room on: the records last read, with this node's own as it is now.
    private func placementCandidate() -> String? {
        condition.lock()
        let others = view.filter { $0.name != settings.node }
        let me = ownRecord()
        let placed = pending.mapValues(\.count)
        condition.unlock()
        return Placement.choose(among: others + [me], pending: placed, model: settings.model)?.name
    }

    /// This node's record from the local state. Call under the lock.
    private func ownRecord() -> NodeRecord {
        // An edge's viewer is forwarded, not mixed or encoded for: modelled as an audio guest.
        let modelled = settings.model.modelledCores(rooms: local.rooms.count, videoGuests: local.videoGuests,
                                                    otherGuests: local.otherGuests + local.edgeViewers)
        return NodeRecord(name: settings.node, url: settings.url, draining: draining, cores: settings.cores, cpu: local.cpu,
                          spare: settings.model.spare(cores: settings.cores, measuredCores: local.cpu, modelledCores: modelled),
                          maxRooms: settings.maxRooms, rooms: local.rooms, edgeViewers: local.edgeViewers)
    }

    private func run() {
        let connection = RedisConnection(url: settings.redis)
        var nextBeat = ContinuousClock.now
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping && !beatNow && ContinuousClock.now < nextBeat {
                let wait = nextBeat - ContinuousClock.now
                _ = condition.wait(until: Date(timeIntervalSinceNow: max(0.001, wait.seconds)))
            }
            let work = jobs
            jobs = []
            let stop = stopping
            beatNow = false
            condition.unlock()
            if stop {
                farewell(connection)
                break
            }
            for job in work { job(connection) }
            if ContinuousClock.now >= nextBeat || work.isEmpty {
                heartbeat(connection)
                nextBeat = ContinuousClock.now + settings.heartbeat
            }
        }
        // Questions queued while stopping are answered by their own timeouts.
        finished.signal()
    }

    /// The node record, the leases of the open rooms, and the view of every node; true when
    /// Redis took them.
    @discardableResult
    private func heartbeat(_ connection: RedisConnection) -> Bool {
        // A connection that was open may have been broken by a Redis restart: one more try on a
        // new one, so that this host claims its rooms again now rather than a heartbeat later
        // (`directoryGrace` counts on it).
        if connection.isConnected, beat(connection, quietly: true) { return true }
        return beat(connection, quietly: false)
    }

    private func beat(_ connection: RedisConnection, quietly: Bool) -> Bool {
        let (record, rooms, files, filesKnown) = condition.withLock { (ownRecord(), Array(localRooms).sorted(), Array(recordingFiles), filesWritten) }
        do throws(RedisError) {
            // First, so that the grace for claiming open rooms again starts from the first host
            // that meets an empty directory.
            let marked = try connection.command(["EVAL", Self.markDirectoryScript, "1", directoryKey, condition.withLock { sawDirectory } ? "1" : "0"])
            if marked.integer == 0 { condition.withLock { sawDirectory = true } }
            let expiry = String(settings.nodeExpiry.milliseconds)
            let set = try connection.command([Array("SET".utf8), Array((nodeKeyPrefix + settings.node).utf8), record.json, Array("PX".utf8), Array(expiry.utf8)])
            if case .error(let reason) = set { throw .protocol(reason) }
            _ = try connection.command(["SADD", nodesKey, settings.node])
            if !rooms.isEmpty {
                let renewed = try connection.command(["EVAL", Self.renewScript, String(rooms.count)] + rooms.map(roomKey)
                    + [settings.node, String(settings.lease.milliseconds)])
                for (room, outcome) in zip(rooms, renewed.elements ?? []) {
                    switch outcome.integer {
                    case 0:
                        let first = condition.withLock { lostRooms.insert(room).inserted }
                        if first {
                            log(true, "clusterLeaseLost", ["room": room, "detail": "another host holds the room's lease (Redis was unreachable past the lease); the room goes on here"])
                        }
                    case 2:
                        log(false, "clusterLeaseRestored", ["room": room])
                    default: break
                    }
                }
            }
            if !files.isEmpty {
                // Written whole after a failure, or when Redis lost the set (restarted empty).
                let present = try connection.command(["EXISTS", filesKey(settings.node)]).integer == 1
                if !filesKnown || !present {
                    _ = try connection.command(["SADD", filesKey(settings.node)] + files.sorted())
                }
            }
            // A file held since the snapshot was neither queued nor written: the next beat writes it.
            if !filesKnown { condition.withLock { filesWritten = recordingFiles.count == files.count } }
            let nodes = try readNodes(connection)
            condition.withLock {
                view = nodes
                // A placement weighs for a lease; a claim never opened lapses with it too.
                let now = ContinuousClock.now
                pending = pending.compactMapValues { rooms in
                    let live = rooms.filter { now - $0.value < settings.lease }
                    return live.isEmpty ? nil : live
                }
            }
            noteReachable()
            return true
        } catch {
            connection.close()
            condition.withLock { filesWritten = false }
            if !quietly { noteFailure(error) }
            return false
        }
    }

    /// Every live node's record; names in the set whose record lapsed are removed from it.
    private func readNodes(_ connection: RedisConnection) throws(RedisError) -> [NodeRecord] {
        guard let names = try connection.command(["SMEMBERS", nodesKey]).elements?.compactMap(\.text), !names.isEmpty else { return [] }
        let sorted = names.filter(ClusterNames.isValid).sorted()
        guard !sorted.isEmpty else { return [] }
        let values = try connection.command(["MGET"] + sorted.map { nodeKeyPrefix + $0 }).elements ?? []
        var records: [NodeRecord] = []
        var gone: [String] = []
        for (name, value) in zip(sorted, values) {
            guard let bytes = value.bytes else {
                gone.append(name)
                continue
            }
            if let record = try? NodeRecord(json: bytes), record.name == name { records.append(record) }
        }
        if !gone.isEmpty { _ = try connection.command(["SREM", nodesKey] + gone) }
        return records
    }

    /// On a clean stop: the record and the leases go at once, so the rooms can be re-placed
    /// without waiting for them to lapse.
    private func farewell(_ connection: RedisConnection) {
        let rooms = condition.withLock { Array(localRooms) }
        // One failure ends it: with Redis gone, each command would wait for its own connect
        // timeout, and what is left lapses by itself within 5 s anyway.
        do throws(RedisError) {
            for room in rooms { _ = try connection.command(["EVAL", Self.releaseScript, "1", roomKey(room), settings.node]) }
            _ = try connection.command(["DEL", nodeKeyPrefix + settings.node])
            _ = try connection.command(["DEL", filesKey(settings.node)])
            _ = try connection.command(["SREM", nodesKey, settings.node])
        } catch {}
        connection.close()
    }

    // MARK: Scripts (each atomic in Redis)

    /// The room's owner and the owner's record: `{owner, record}`, the record nil when the
    /// owner's record lapsed (it is gone); nil when the room has no owner.
    static let lookupScript = """
        local owner = redis.call('GET', KEYS[1])
        if not owner then return false end
        return {owner, redis.call('GET', ARGV[1] .. owner)}
        """

    /// Claim-or-read: the owner when it is alive; else the room is claimed for ARGV[1] with a
    /// lease of ARGV[2] ms (taking it over from an owner whose record lapsed). Answers
    /// `{owner, owner's record}`; or `{nil, ms}` while the directory (KEYS[2], the server time
    /// it was found empty) is younger than ARGV[4] ms: hosts may still be claiming their open
    /// rooms again, so nothing is placed anew for `ms` more.
    static let claimScript = """
        local owner = redis.call('GET', KEYS[1])
        if owner then
            local record = redis.call('GET', ARGV[3] .. owner)
            if record then return {owner, record} end
        end
        local since = tonumber(redis.call('GET', KEYS[2]) or '')
        if since then
            local time = redis.call('TIME')
            local age = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) - since
            if age < tonumber(ARGV[4]) then return {false, tonumber(ARGV[4]) - age} end
        end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return {ARGV[1], redis.call('GET', ARGV[3] .. ARGV[1])}
        """

    /// Marks the directory (KEYS[1]) when it is missing: with the server's time in ms when the
    /// host had seen the mark before (ARGV[1] = 1: Redis lost its data, and hosts must claim
    /// their open rooms again before any is placed), else with 0 (a new cluster: no grace).
    /// Answers 0 when the mark was there, 1 when it set it.
    static let markDirectoryScript = """
        if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
        local since = 0
        if ARGV[1] == '1' then
            local time = redis.call('TIME')
            since = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
        end
        redis.call('SET', KEYS[1], since)
        return 1
        """

    /// The first live node (KEYS[1] the set of names, ARGV[1] the key prefix) whose set of files
    /// holds ARGV[2]: `{node, record}`, or nil.
    static let locateFileScript = """
        for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
            local record = redis.call('GET', ARGV[1] .. 'node:' .. name)
            if record and redis.call('SISMEMBER', ARGV[1] .. 'files:' .. name, ARGV[2]) == 1 then
                return {name, record}
            end
        end
        return false
        """

    /// Renews each room's lease while ARGV[1] owns it: 1 renewed, 2 re-claimed (it had lapsed, or
    /// Redis restarted empty), 0 another node owns it.
    static let renewScript = """
        local out = {}
        for i, key in ipairs(KEYS) do
            local owner = redis.call('GET', key)
            if owner == ARGV[1] then
                redis.call('PEXPIRE', key, ARGV[2]); out[i] = 1
            elseif not owner then
                redis.call('SET', key, ARGV[1], 'PX', ARGV[2]); out[i] = 2
            else
                out[i] = 0
            end
        end
        return out
        """

    /// Deletes the room's lease if ARGV[1] still holds it (compare-and-delete).
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
}

/// Why the cluster could not answer.
public struct ClusterFailure: Error, Sendable, Equatable {
    public let reason: String
}

extension RedisReply {
    /// A bulk string's bytes.
    var bytes: [UInt8]? {
        if case .string(let bytes) = self { return bytes }
        return nil
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// A value set on one thread and read on another.
private final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<T, ClusterFailure>?
    func set(_ new: Result<T, ClusterFailure>) { lock.withLock { value = new } }
    func get() -> Result<T, ClusterFailure>? { lock.withLock { value } }
}

