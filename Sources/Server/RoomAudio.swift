import Conference
import Sockets
import Compositing
import Media
import RTP
import Wire

/// A room's audio shell: the 20 ms tick on the media loop that drives the room's
/// `RoomAudioMixer` and hands each participant its packet. Lives on the media loop thread;
/// started with the room's first participant and stopped when the room closes.
final class RoomAudio {
    let room: String
    let mixer: RoomAudioMixer<ObjectIdentifier>
    private let loop: EventLoop
    private var sessions: [ObjectIdentifier: ParticipantSession] = [:]
    /// The room's video, told every tick's levels (its active speaker detector).
    weak var video: RoomVideo?
    private var tick: MediaTick?
    /// Ticks that came more than `maximumLateness` late and restarted the schedule from now.
    var scheduleResets: Int { tick?.resets ?? 0 }
    /// Beyond this, a late tick does not try to catch up (which would play a burst of frames):
    /// the schedule restarts from now and the jitter buffers absorb the gap.
    static let maximumLateness: Duration = .milliseconds(100)
    /// The audio tick: one 20 ms frame per participant.
    static let tickInterval: Duration = .milliseconds(20)

    /// `returnsOwnVoice` is a deliberate fault for tests (`HostConfig.Testing`).
    init(room: String, loop: EventLoop, returnsOwnVoice: Bool = false) {
        self.room = room
        mixer = RoomAudioMixer(configuration: .init(returnsOwnVoice: returnsOwnVoice))
        self.loop = loop
        tick = MediaTick(loop: loop, interval: { Self.tickInterval }, maximumLateness: Self.maximumLateness) { [weak self] deadline in
            self?.fire(deadline: deadline)
        }
    }

    /// The room's whole mix as a track, while something records it.
    private var mixTrack: AudioTrack?
    /// Recordings in progress, by id.
    private(set) var recordings: [String: (file: String, recorder: TrackRecorder)] = [:]

    /// Starts recording the room's composite and whole mix into `path`.
    func startRecording(id: String, file: String, path: String) throws(RecordingError) {
        let track = mixTrack ?? AudioTrack(id: "\(room)/mix")
        mixTrack = track
        mixer.producesRoomMix = true
        let canvas = video?.compositor.resolutionSize
        let recorder: TrackRecorder
        do {
            recorder = try TrackRecorder(path: path, videoTrack: video?.compositor.outputTrack, audioTrack: track,
                                         configuration: .init(width: canvas?.width ?? 1280, height: canvas?.height ?? 720,
                                                              framesPerSecond: video?.compositor.fps ?? 30),
                                         now: loop.clock.now())
        } catch {
            StartFailures.shared.record("recorder", error)  // the caller answers the request with the reason
            throw error
        }
        video?.isRecorded = true
        recordings[id] = (file, recorder)
    }

    /// Finishes a recording: the file is complete and playable when this returns.
    func stopRecording(id: String) throws(RecordingError) -> String? {
        guard let recording = recordings.removeValue(forKey: id) else { return nil }
        if recordings.isEmpty {
            video?.isRecorded = false
            mixer.producesRoomMix = false
            mixTrack?.end()
            mixTrack = nil
        }
        try recording.recorder.stop()
        return recording.file
    }

    /// Finishes every recording (the room closed, or the host is stopping).
    func stopAllRecordings() {
        for id in recordings.keys { _ = try? stopRecording(id: id) }
    }

    /// Adds a participant's audio (its receiver, and whether it is sent a mix); the first starts
    /// the tick.
    func add(_ session: ParticipantSession) {
        let key = ObjectIdentifier(session)
        sessions[key] = session
        mixer.add(key, receiver: session.audioReceiver, listens: session.receivesAudio)
        refreshHearing()
        tick?.start()
    }

    /// Tells the mixer whom each participant does not hear (by identity, so it holds for those
    /// who join later) and whose voice is muted. Call after a join, a leave or a PATCH.
    func refreshHearing() {
        let byIdentity = Dictionary(sessions.map { ($0.value.identity, $0.key) }, uniquingKeysWith: { first, _ in first })
        for (key, session) in sessions {
            mixer.setNotHeard(Set(session.notHeard.compactMap { byIdentity[$0] }), by: key)
            mixer.setMuted(key, session.audioMuted)
        }
    }

    /// Removes a participant: its voice leaves every mix at the next tick.
    func remove(_ session: ParticipantSession) {
        let key = ObjectIdentifier(session)
        sessions[key] = nil
        mixer.remove(key)
        refreshHearing()
    }

    var isEmpty: Bool { sessions.isEmpty }
    var isRunning: Bool { tick?.isRunning ?? false }

    /// Stops the tick (the room closed), finishing its recordings.
    func stop() {
        stopAllRecordings()
        tick?.stop()
    }

    /// One tick: mix for the deadline (not the wake-up time, so the media clock stays regular)
    /// and send.
    private func fire(deadline: Instant) {
        let packets = mixer.tick(now: deadline)
        for error in mixer.takeStartFailures() { StartFailures.shared.record("opus-encoder", error) }
        if let video {
            var levels: [String: Double] = [:]
            for (key, level) in mixer.levelsLastTick {
                if let identity = sessions[key]?.identity { levels[identity] = level }
            }
            video.audioLevels(levels, now: deadline)
        }
        if let whole = mixer.roomMixLastTick, let mixTrack {
            mixTrack.push(whole, now: deadline)
            for (_, recording) in recordings { recording.recorder.tick(now: deadline) }
        }
        var sent = false
        for (key, payload) in packets {
            if sessions[key]?.sendAudio(payload) == true { sent = true }
        }
        if sent, let port = sessions.values.first?.port { port.flush() }
    }
}
