import Conference
import Sockets

/// Rooms by name. A room is made by its first join and closed when its last participant
/// leaves. Touched only on the media loop thread.
final class RoomDirectory {
    struct Limits {
        var maxRooms: Int
        var maxParticipantsPerRoom: Int
        var maxVoices = 3
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
    /// The host's load, which every room's encoder speed reads.
    let hostLoad = HostLoadMeter()

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
        let hosted = HostedRoom(name: name, configuration: configuration, port: port, events: events, recordingLog: recordings,
                                log: log, hostLoad: hostLoad) { [weak self] closed in
            self?.closedRoomsExpiredJoins += closed.expiredJoins
            if self?.rooms[closed.name] === closed { self?.rooms[closed.name] = nil }
        }
        rooms[name] = hosted
        return hosted
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
