import Cluster
import Conference
import Foundation
import Sockets
import Wire

/// Rooms by name. A room is made by its first join and closed when its last participant
/// leaves. Touched only on the media loop thread.
final class RoomDirectory {
    struct Limits {
        var maxRooms: Int
        var maxParticipantsPerRoom: Int
        var maxVoices = 3
        /// Decode worker threads (`VideoDecodePool`).
        var decodeWorkers = VideoDecodePool.defaultSize
    }
    enum JoinRefusal {
        case identityPresent, roomFull, hostFull
    }

    let limits: Limits
    private(set) var rooms: [String: HostedRoom] = [:]
    let configuration: RoomConfiguration
    let events: RoomEventHub
    let log: HostLog
    /// Every recording made, kept after its room closes.
    let recordings = RecordingLog()
    /// The mixes' Opus complexity, following the media loop's load (sampled every second
    /// while rooms are open).
    private(set) var audioEncoderLoad = AudioEncoderLoadRule(configured: RoomAudioMixer<Participant>.Configuration().encoder.complexity)
    /// The media loop's busy fraction over the last second.
    private(set) var loopBusy = 0.0
    private var loadTimer: DeadlineTimer?
    private var lastLoadSample: (busy: Duration, at: Instant)?
    /// The decode workers every room shares; made with the first room.
    private var decodePool: VideoDecodePool?
    var decoders: VideoDecodePool? { decodePool }
    /// The host's load, which every room's encoder speed reads.
    let hostLoad = HostLoadMeter()
    /// In a cluster: told of each room opened and closed (at once, so its lease is claimed and
    /// released with it) and, every second, of what the host holds (`publishEverySecond`).
    /// Each call takes a lock and returns; Redis is the coordinator's worker's business.
    var cluster: ClusterCoordinator?
    /// The viewers this host serves as an edge (read on the loop), for its node record.
    var edgeViewerCount: () -> Int = { 0 }
    private var clusterTimer: DeadlineTimer?

    init(limits: Limits, video: HostConfig.Video = HostConfig.Video(), faults: Set<HostConfig.Testing.Fault> = [], events: RoomEventHub,
         log: HostLog) {
        self.limits = limits
        var configuration = RoomConfiguration()
        configuration.width = video.width
        configuration.height = video.height
        configuration.fps = video.fps
        configuration.bitrate = video.bitrate
        configuration.lowWidth = video.lowWidth
        configuration.lowHeight = video.lowHeight
        configuration.lowBitrate = video.lowBitrate
        configuration.smallWidth = video.smallWidth
        configuration.smallHeight = video.smallHeight
        configuration.smallBitrate = video.smallBitrate
        configuration.maxVoices = limits.maxVoices
        configuration.returnsOwnVoice = faults.contains(.ownVoiceInMix)
        configuration.camerasInWrongSlots = faults.contains(.camerasInWrongSlots)
        self.configuration = configuration
        self.events = events
        self.log = log
    }

    /// Why `identity` may not join `room` now, or nil when it may.
    func refusal(room: String, identity: String) -> JoinRefusal? {
        if let hosted = rooms[room] {
            if hosted.room.participant(identity: identity) != nil { return .identityPresent }
            if hosted.participants.count >= limits.maxParticipantsPerRoom { return .roomFull }
        } else if rooms.count >= limits.maxRooms {
            return .hostFull
        }
        return nil
    }

    /// The room `name`, opened when it is not.
    func open(_ name: String, port: MediaPort) -> HostedRoom {
        if let hosted = rooms[name] { return hosted }
        let decoders = decodePool ?? VideoDecodePool(size: limits.decodeWorkers, loop: port.loop)
        decodePool = decoders
        let hosted = HostedRoom(name: name, configuration: configuration, port: port, events: events, recordingLog: recordings,
                                decoders: decoders, log: log, hostLoad: hostLoad) { [weak self] closed in
            self?.closedRoomsExpiredJoins += closed.expiredJoins
            if self?.rooms[closed.name] === closed {
                self?.rooms[closed.name] = nil
                self?.hostLoad.roomsOpen = self?.rooms.count ?? 0
                self?.cluster?.roomClosed(closed.name)
            }
        }
        // A host already busy with rooms starts the new one at the cheapest step they run at, or
        // at the half canvas once it holds a room per core.
        hosted.room.startEncoderSpeed(atLeast: CompositeEncoderSpeed.openingStep(otherRooms: rooms.values.map(\.room.encoderSpeed.step),
                                                                                 cores: hostLoad.cores))
        rooms[name] = hosted
        hostLoad.roomsOpen = rooms.count
        cluster?.roomOpened(name)
        hosted.room.mixer.loadComplexity = audioEncoderLoad.complexity
        sampleLoadEverySecond(on: port.loop)
        return hosted
    }

    private func sampleLoadEverySecond(on loop: EventLoop) {
        guard loadTimer == nil else { return }
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [weak self, weak timer] now in
            self?.sampleLoad(busy: loop.busyTime, now: now)
            timer?.arm(at: now + .seconds(1))
        }
        loadTimer = timer
        timer.arm(at: loop.clock.now() + .seconds(1))
    }

    /// Takes the loop's busy time at `now`: the busy fraction since the last sample sets the
    /// mixes' complexity in every room.
    func sampleLoad(busy: Duration, now: Instant) {
        defer { lastLoadSample = (busy, now) }
        guard let last = lastLoadSample, now > last.at else { return }
        loopBusy = min(1, max(0, (busy - last.busy) / (now - last.at)))
        let complexity = audioEncoderLoad.update(busy: loopBusy, now: now)
        for hosted in rooms.values where hosted.room.mixer.loadComplexity != complexity {
            hosted.room.mixer.loadComplexity = complexity
        }
    }

    /// Hands the cluster coordinator what this host holds, now and then every second.
    func publishEverySecond(on loop: EventLoop) {
        guard cluster != nil, clusterTimer == nil else { return }
        let timer = DeadlineTimer(loop: loop)
        timer.action = { [weak self, weak timer] now in
            self?.publishToCluster(now: now)
            timer?.arm(at: now + .seconds(1))
        }
        clusterTimer = timer
        timer.arm(at: loop.clock.now())
    }

    /// What the node record says: the rooms with their guests and viewers, guests sending
    /// video apart (they cost ten times more, `CapacityModel`), and the cores in use.
    func publishToCluster(now: Instant) {
        guard let cluster else { return }
        var state = ClusterCoordinator.LocalState()
        for (name, hosted) in rooms.sorted(by: { $0.key < $1.key }) {
            let everyone = hosted.participants
            let viewers = everyone.count { $0.isViewer }
            let video = everyone.count { !$0.isViewer && $0.inbound.cameraStatistics != nil }
            state.rooms.append(NodeRecord.Room(name: name, participants: everyone.count - viewers, viewers: viewers))
            state.videoGuests += video
            state.otherGuests += everyone.count - video
        }
        state.edgeViewers = edgeViewerCount()
        state.cpu = (hostLoad.sample(now: now) ?? 0) * Double(ProcessInfo.processInfo.activeProcessorCount)
        cluster.publish(state)
    }

    /// Joins dropped for not connecting in time (`Room.connectTimeout`), in every room so far.
    var expiredJoins: Int { closedRoomsExpiredJoins + rooms.values.reduce(0) { $0 + $1.expiredJoins } }
    private var closedRoomsExpiredJoins = 0

    /// The room of participant `id`, if `room` has it.
    func hosting(room: String, id: String) -> HostedRoom? {
        guard let hosted = rooms[room], hosted.room.participant(id: id) != nil else { return nil }
        return hosted
    }
}
