import Client
import Foundation
import Compositing
import Sockets
import Streams
import Transport
import Wire

/// Why a run could not start.
public enum LoadRunError: Error, CustomStringConvertible {
    case hostUnreachable(String)
    case setup(String)
    public var description: String {
        switch self {
        case .hostUnreachable(let why): "the host does not answer: \(why)"
        case .setup(let why): "cannot prepare the run: \(why)"
        }
    }
}

/// One `tessera load` run: prepares the media every participant sends (each distinct source
/// encoded once), then drives every participant on one event loop on the calling thread: joins
/// at the ramp's rate, media ticks, churn, a sample of everything once a second (with the host's
/// /metrics and layout), and the end at the run's duration. Returns the report.
public final class LoadRun {
    public let options: LoadOptions
    private let log: (String) -> Void
    private let progress: (String) -> Void
    private let http: HostHTTPClient
    private var loop: EventLoop?
    private var model: LoadRoomModel?
    private var participants: [LoadParticipant] = []
    private var attacker: LoadAttacker?
    private var ticks: [MediaTick] = []
    /// The latest this generator's own 20 ms send tick fired (its loop stalled, or the machine
    /// gave it no core), and when: sound and pictures it sent or read then look late through no
    /// fault of the host's.
    private var worstTickLateness: (late: Duration, at: Double)?
    private var samples: [LoadReport.Sample] = []
    private var hostReadings: [(seconds: Double, values: [String: Double])] = []
    private var loadCPUReadings: [(seconds: Double, cpu: Double)] = []
    private var lastPackets = (incoming: 0, outgoing: 0)
    private var allJoinedAt: Double?
    private var endedAt: Double?
    /// The churn's choices are the same on every run.
    private var churnGenerator = SplitMix64(seed: 0x7E55E4A)
    private var pendingDeletes = 0
    /// Why the recording (`--record`) did not start, when it did not.
    private var recordingProblem: String?
    /// `--simulcast`: each guest's camera layer the host decodes, and its width, by identity.
    private var hostCameraLayers: [String: (layer: String?, width: Int?)] = [:]

    /// Signs a join token: room, identity, admin. The host's token format lives with the host;
    /// `tessera load` is handed the signer when `--secret` is given.
    public typealias TokenSigner = @Sendable (_ room: String, _ identity: String, _ admin: Bool) -> String

    /// `log` takes whole lines (start, end); `progress` the live line, rewritten each second;
    /// `sign` makes the tokens of a run with `--secret`.
    public init(options: LoadOptions, sign: TokenSigner? = nil, log: @escaping (String) -> Void, progress: @escaping (String) -> Void) {
        self.options = options
        self.log = log
        self.progress = progress
        http = HostHTTPClient(base: options.url, credentials: sign.map { sign in Self.credentials(room: options.room, sign: sign) })
    }

    /// Each participant's join carries a token for its identity; every other call of the run
    /// (layout, metrics, recordings, leaving) the room's admin token.
    static func credentials(room: String, sign: @escaping TokenSigner) -> HostHTTPClient.Credentials {
        let admin = sign(room, "tessera-load", true)
        return { method, path in
            guard method == "POST", path.contains("/participants?"),
                  let identity = URLComponents(string: path)?.queryItems?.first(where: { $0.name == "identity" })?.value else { return admin }
            return sign(room, identity, false)
        }
    }

    public func run() throws(LoadRunError) -> LoadReport {
        switch http.sendAndWait("GET", "/healthz", timeout: .seconds(5)) {
        case .failure(let failure): throw .hostUnreachable("\(options.url): \(failure)")
        case .success(let reply) where reply.status != 200: throw .hostUnreachable("GET /healthz answered \(reply.status)")
        case .success: break
        }
        let loop: EventLoop
        do { loop = try EventLoop() } catch { throw .setup("\(error)") }
        self.loop = loop
        let started = Date()
        log("load: preparing \(options.speakers) tone loops and \(options.video == nil ? 0 : options.participants) picture loops")
        let start = loop.clock.now() + .milliseconds(100)
        let model = LoadRoomModel(options: options, start: start, wallClock: .reading(loop.clock))
        self.model = model
        do {
            let certificate = try DTLSCertificate(commonName: "tessera-load")
            let context = try DTLSContext(certificate: certificate)
            let silence = try ToneLoop.silence()
            for index in 0..<options.participants {
                let tone = index < options.speakers ? try ToneLoop(frequency: SyntheticSignal.toneFrequency(index: index)) : nil
                let pictures = try options.cameraLayers.map { layer in
                    (layer.rid, try PictureLoop(colour: SyntheticSignal.colour(index: index), format: layer.format))
                }
                let participant = LoadParticipant(index: index, model: model, loop: loop, http: http, certificate: certificate,
                                                  dtlsContext: context, toneLoop: tone, silence: silence, pictureLoops: pictures)
                participants.append(participant)
            }
            if options.attack {
                let participants = self.participants
                attacker = LoadAttacker(model: model, loop: loop, http: http, certificate: certificate, dtlsContext: context,
                                        silence: silence, guestSSRCs: { participants.filter { $0.state == .connected }.flatMap(\.ssrcs) })
            }
        } catch {
            throw .setup("\(error)")
        }
        log("load: \(options.participants) participants join \(options.url) room \(options.room) at \(options.joinRate)/s for \(options.duration)")
        schedule(start: start, on: loop)
        loop.run()
        return makeReport(startedAt: started)
    }

    private func seconds(_ instant: Instant) -> Double {
        guard let model else { return 0 }
        let duration = instant - model.start
        return duration.seconds
    }

    private func schedule(start: Instant, on loop: EventLoop) {
        for (index, participant) in participants.enumerated() {
            loop.schedule(at: start + .nanoseconds(Int64(Double(index) / options.joinRate * 1e9))) { participant.join() }
        }
        let audio = MediaTick(loop: loop, interval: { .milliseconds(20) }, maximumLateness: .milliseconds(100)) { [unowned self] deadline in
            let now = loop.clock.now()
            if now - deadline > worstTickLateness?.late ?? .zero { worstTickLateness = (now - deadline, seconds(now)) }
            for participant in participants { participant.sendAudio(now: now, capturedAt: deadline) }
        }
        ticks.append(audio)
        if let video = options.video {
            let interval = Duration.nanoseconds(1_000_000_000 / Int64(video.framesPerSecond))
            ticks.append(MediaTick(loop: loop, interval: { interval }, maximumLateness: .milliseconds(200)) { [unowned self] deadline in
                let now = loop.clock.now()
                for participant in participants { participant.sendVideo(now: now, capturedAt: deadline) }
            })
        }
        ticks.append(MediaTick(loop: loop, interval: { .seconds(1) }, maximumLateness: .seconds(1)) { [unowned self] _ in sample() })
        if let attacker {
            // It joins once the guests are in, and attacks until a second before the end.
            let joinAt = start + .nanoseconds(Int64(Double(options.participants) / options.joinRate * 1e9))
            loop.schedule(at: joinAt) { attacker.join() }
            var round = 0
            ticks.append(MediaTick(loop: loop, interval: { .milliseconds(100) }, maximumLateness: .seconds(1)) { [unowned self] deadline in
                guard deadline < start + (options.duration - .seconds(1)) else { return }
                round += 1
                attacker.volley(round: round)
            })
        }
        if options.churn > 0 {
            let interval = Duration.nanoseconds(Int64(1e9 / options.churn))
            ticks.append(MediaTick(loop: loop, interval: { interval }, maximumLateness: .seconds(1)) { [unowned self] _ in churn() })
        }
        loop.schedule(at: start) { [unowned self] in
            for tick in ticks { tick.start() }
        }
        // The recording starts once everyone is in, if that leaves it a few seconds.
        let everyoneIn = start + .nanoseconds(Int64(Double(options.participants - 1) / options.joinRate * 1e9)) + .seconds(2)
        if options.recordingsFolder != nil {
            if everyoneIn + .seconds(4) < start + options.duration {
                loop.schedule(at: everyoneIn) { [unowned self] in startRecording() }
            } else {
                recordingProblem = "the run is too short to record once everyone is in (\(options.duration))"
            }
        }
        loop.schedule(at: start + options.duration) { [unowned self] in finish() }
    }

    // MARK: During the run

    /// Once a second: the live line, the host's metrics and layout, the load generator's CPU.
    private func sample() {
        guard let loop else { return }
        let now = loop.clock.now()
        let at = seconds(now)
        let connected = participants.filter { $0.state == .connected }.count
        if connected == participants.count, allJoinedAt == nil { allJoinedAt = at }
        let results = participants.map(\.results)
        let incoming = results.reduce(0) { $0 + $1.audioPacketsReceived + $1.videoPacketsReceived }
        let outgoing = participants.reduce(0) { $0 + $1.packetsSent }
        let audio = Percentile.of(results.flatMap { $0.audioLatencies.filter { $0.at > at - 1 }.map(\.milliseconds) }, 0.5)
        let video = Percentile.of(results.flatMap { $0.videoLatencies.filter { $0.at > at - 1 }.map(\.milliseconds) }, 0.5)
        let loss = participants.map(\.lossFraction).max() ?? 0
        let host = hostRate(at: at)
        samples.append(LoadReport.Sample(seconds: at, participantsConnected: connected,
                                         packetsInPerSecond: Double(incoming - lastPackets.incoming),
                                         packetsOutPerSecond: Double(outgoing - lastPackets.outgoing), lossFraction: loss,
                                         audioLatencyMilliseconds: audio, videoLatencyMilliseconds: video,
                                         hostCPU: host?.cpu, compositeFramesPerSecond: host?.frames))
        lastPackets = (incoming, outgoing)
        loadCPUReadings.append((at, ProcessCPU.seconds()))
        let failed = participants.reduce(0) { $0 + $1.results.failures.count }
        func ms(_ value: Double?) -> String { value.map { String(format: "%.0f ms", $0) } ?? "-" }
        progress(String(format: "load %3.0fs  joined %d/%d  failed %d  in %.0f pkt/s  out %.0f pkt/s  loss %.2f%%  audio %@  video %@  host cpu %@",
                        at, connected, participants.count, failed, samples.last?.packetsInPerSecond ?? 0,
                        samples.last?.packetsOutPerSecond ?? 0, loss * 100, ms(audio), ms(video),
                        host.map { String(format: "%.2f", $0.cpu) } ?? "-"))
        let confined = LoopConfined(self, on: loop)
        http.send("GET", "/metrics") { result in
            guard case .success(let reply) = result, reply.status == 200 else { return }
            let values = Self.parseMetrics(reply.text)
            loop.execute { confined.value.hostReadings.append((confined.value.seconds(loop.clock.now()), values)) }
        }
        if options.simulcast {
            http.send("GET", (model?.roomHost ?? "") + "/v1/rooms/\(options.room)") { result in
                guard case .success(let reply) = result, reply.status == 200,
                      let room = try? JSONDecoder().decode(HostRoomCameras.self, from: Data(reply.body)) else { return }
                // Merged, not replaced: at the end the guests leave one by one, and each keeps
                // its last reading.
                loop.execute { confined.value.hostCameraLayers.merge(room.cameraLayers) { _, new in new } }
            }
        }
        if options.video != nil {
            http.send("GET", (model?.roomHost ?? "") + "/v1/rooms/\(options.room)/layout") { result in
                guard case .success(let reply) = result, reply.status == 200,
                      let template = try? JSONDecoder().decode(TemplateDescription.self, from: Data(reply.body)) else { return }
                loop.execute { confined.value.model?.layout = (template, loop.clock.now()) }
            }
        }
    }

    /// The host's CPU (cores) and composite frames per second over the last two readings.
    private func hostRate(at: Double) -> (cpu: Double, frames: Double?)? {
        guard hostReadings.count >= 2 else { return nil }
        let last = hostReadings[hostReadings.count - 1], before = hostReadings[hostReadings.count - 2]
        let span = last.seconds - before.seconds
        guard span > 0.2, let cpu = last.values["process_cpu_seconds_total"], let cpuBefore = before.values["process_cpu_seconds_total"] else {
            return nil
        }
        let frames = last.values["tessera_video_frames_composed"].flatMap { now in
            before.values["tessera_video_frames_composed"].map { (now - $0) / span }
        }
        return ((cpu - cpuBefore) / span, frames)
    }

    /// `POST …/recordings`: the host's answer gives the recording's id, file, and the wall-clock
    /// time its file's time zero stands for (a host without `start`: about halfway through the
    /// exchange, which a slow host's late answer puts too late).
    private func startRecording() {
        guard let loop else { return }
        let sentAt = loop.clock.now()
        let confined = LoopConfined(self, on: loop)
        http.send("POST", "/v1/rooms/\(options.room)/recordings", contentType: "application/json", body: Array("{}".utf8)) { result in
            loop.execute {
                let run = confined.value
                guard case .success(let reply) = result, reply.status == 201,
                      let started = try? JSONDecoder().decode(RecordingStarted.self, from: Data(reply.body)) else {
                    run.recordingProblem = "POST /v1/rooms/\(run.options.room)/recordings: \(result)"
                    return
                }
                let now = loop.clock.now()
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let began = started.start.flatMap(formatter.date(from:)).flatMap { run.model?.instant(at: $0) }
                run.model?.recording = (started.id, started.file, began ?? sentAt + (now - sentAt) / 2)
            }
        }
    }

    private struct RecordingStarted: Decodable {
        let id: String
        let file: String
        let start: String?
    }

    /// One leave; the leaver comes back a second later. Speakers and decoders stay, so the
    /// checks keep their references.
    private func churn() {
        let candidates = participants.filter { $0.state == .connected && !$0.isSpeaker && !$0.decodes }
        guard !candidates.isEmpty else { return }
        let leaver = candidates[Int(churnGenerator.next() % UInt64(candidates.count))]
        leaver.leave()
        rejoinLater(leaver)
    }

    private func rejoinLater(_ participant: LoadParticipant) {
        guard let loop, endedAt == nil else { return }
        loop.schedule(at: loop.clock.now() + .seconds(1)) { [unowned self] in
            guard endedAt == nil else { return }
            participant.join()
        }
    }

    /// The end: every participant leaves (DELETE); the loop stops when the host has answered
    /// them all, or after 5 s.
    private func finish() {
        guard let loop else { return }
        endedAt = seconds(loop.clock.now())
        sample()
        for tick in ticks { tick.stop() }
        let confined = LoopConfined(self, on: loop)
        // Counted before any answer can come back, so the last answer (not an early one) stops the loop.
        pendingDeletes = participants.count + 1
        if let model, let recording = model.recording {
            model.recordingEnded = loop.clock.now()
            pendingDeletes += 1
            http.send("DELETE", "/v1/rooms/\(options.room)/recordings/\(recording.id)") { _ in
                loop.execute { confined.value.deleteAnswered() }
            }
        }
        for participant in participants {
            participant.leave { confined.value.deleteAnswered() }
        }
        attacker?.leave()
        loop.schedule(at: loop.clock.now() + .seconds(5)) { loop.stop() }
        deleteAnswered()
    }

    private func deleteAnswered() {
        pendingDeletes -= 1
        if pendingDeletes == 0 { loop?.stop() }
    }

    /// Prometheus text: `name{labels} value` lines by `name{labels}`.
    static func parseMetrics(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    // MARK: The report

    private func makeReport(startedAt: Date) -> LoadReport {
        http.cancelAll()
        let end = endedAt ?? samples.last?.seconds ?? 0
        let rampEnd = Double(options.participants - 1) / options.joinRate
        let steadyStart = min((allJoinedAt ?? rampEnd) + 2, end * 0.75)
        let results = participants.map { $0.closeResults() }
        let window = { (readings: [(seconds: Double, value: Double)]) -> Double? in
            guard let first = readings.first(where: { $0.seconds >= steadyStart }), let last = readings.last(where: { $0.seconds <= end + 0.5 }),
                  last.seconds - first.seconds > 0.5 else { return nil }
            return (last.value - first.value) / (last.seconds - first.seconds)
        }
        // Readings answered after the end may already miss the participants that left (the
        // host's gauges count the open rooms), so the host's figures end with the last before.
        let readingsBeforeEnd = hostReadings.filter { $0.seconds < end }
        func hostSeries(_ name: String) -> [(seconds: Double, value: Double)] {
            readingsBeforeEnd.compactMap { reading in reading.values[name].map { (reading.seconds, $0) } }
        }
        func hostWindow(_ name: String) -> Double? { window(hostSeries(name)) }
        func hostDelta(_ name: String) -> Double? {
            let readings = hostSeries(name)
            guard let first = readings.first(where: { $0.seconds >= steadyStart }), let last = readings.last else { return nil }
            return last.value - first.value
        }
        let hostCPU = hostWindow("process_cpu_seconds_total")
        let loadCPU = window(loadCPUReadings.map { ($0.seconds, $0.cpu) }) ?? 0
        let count = Double(options.participants)
        let audioLatencies = results.flatMap { $0.audioLatencies.map { [$0.at, $0.milliseconds] } }.sorted { $0[0] < $1[0] }
        let videoLatencies = results.flatMap { $0.videoLatencies.map { [$0.at, $0.milliseconds] } }.sorted { $0[0] < $1[0] }
        let audioValues = audioLatencies.map { $0[1] }, videoValues = videoLatencies.map { $0[1] }
        let decoders = participants.filter(\.decodes).map(\.identity)
        let mixes = model.map { model -> String in
            let shared = model.mixDecoding.shared, decodes = model.mixDecoding.decodes
            return "the mix of every participant, each distinct stream of packets decoded once (\(decodes) decodes for \(decodes + shared) packets)"
        } ?? "the mix of every participant"
        let decoding = options.video == nil ? "\(mixes); no video"
            : "\(mixes); the composite (VP8) of \(decoders.isEmpty ? "none" : decoders.joined(separator: ", ")), every 6th picture checked; the others count composite packets and frames"
        let dark = options.blackoutAt == nil ? nil : LoadOptions.blackoutLength
        var figures = LoadReport.Figures(
            participants: options.participants, speakers: options.speakers, video: options.video?.description ?? "off",
            durationSeconds: end, joinMillisecondsMedian: Percentile.of(results.flatMap(\.joinMilliseconds), 0.5),
            firstFrameMillisecondsMedian: Percentile.of(results.compactMap(\.firstFrameMilliseconds), 0.5),
            audioLatencyMillisecondsMedian: Percentile.of(audioValues, 0.5), audioLatencyMillisecondsP95: Percentile.of(audioValues, 0.95),
            videoLatencyMillisecondsMedian: Percentile.of(videoValues, 0.5), videoLatencyMillisecondsP95: Percentile.of(videoValues, 0.95),
            lossFractionMax: results.map(Self.loss).max() ?? 0,
            jitterMillisecondsMedian: Percentile.of(results.flatMap(\.jitterMilliseconds), 0.5),
            freezes: results.reduce(0) { $0 + $1.freezes },
            longestFreezeMilliseconds: results.map(\.longestFreezeMilliseconds).max() ?? 0,
            nacksSent: results.reduce(0) { $0 + $1.nacksSent }, retransmissionsReceived: results.reduce(0) { $0 + $1.retransmissionsReceived },
            keyFramesPerReceiverMedian: options.video == nil ? nil : Percentile.of(results.map { Double($0.keyFramesReceived) }, 0.5),
            audioRecoveryMillisecondsMax: options.blackoutAt == nil ? nil : results.compactMap(\.audioRecoveryMilliseconds).max(),
            videoRecoveryMillisecondsMax: options.blackoutAt == nil || options.video == nil ? nil : results.compactMap(\.videoRecoveryMilliseconds).max(),
            audioConcealedFractionMedian: Percentile.of(results.compactMap { Self.audioConcealed($0, dark: dark) }, 0.5),
            avOffsetMillisecondsMedian: Percentile.of(results.flatMap(\.avOffsetMilliseconds), 0.5),
            avOffsetMillisecondsP95: Percentile.of(results.flatMap { $0.avOffsetMilliseconds.map(abs) }, 0.95),
            steadySeconds: max(0, end - steadyStart),
            hostCPU: hostCPU, hostCPUPerParticipant: hostCPU.map { $0 / count },
            compositeFramesPerSecond: options.video == nil ? nil : hostWindow("tessera_video_frames_composed"),
            compositeFramesReceivedPerSecondMin: options.video == nil ? nil : Self.framesReceivedPerSecond(results, from: steadyStart, to: end - 1),
            compositePicturesDropped: options.video == nil ? nil : hostDelta("tessera_video_pictures_dropped"),
            cameraFramesDecodedPerSecond: options.video == nil ? nil : hostWindow(#"tessera_camera_frames{result="decoded"}"#),
            cameraFramesDropped: options.video == nil ? nil : hostDelta(#"tessera_camera_frames{result="dropped"}"#),
            hostPacketsLost: hostDelta("tessera_packets_lost"),
            loadGeneratorCPU: loadCPU, loadGeneratorCPUPerParticipant: loadCPU / count,
            loadTickLateMillisecondsMax: worstTickLateness.map { $0.late.seconds * 1000 }, loadTickLateAtSeconds: worstTickLateness?.at,
            decoding: decoding)
        if options.rejoin {
            let gaps = results.flatMap { $0.rejoins.map(\.gapMilliseconds) }
            figures.rejoins = gaps.count
            figures.rejoinGapMillisecondsMedian = Percentile.of(gaps, 0.5)
            figures.rejoinGapMillisecondsMax = gaps.max()
        }
        var checks = LoadChecks(options: options, identities: participants.map(\.identity), results: results,
                                audioLatencies: audioValues, videoLatencies: videoValues).all
        if let attacker { checks.append(attacker.check()) }
        if options.simulcast {
            let layers = participants.map { hostCameraLayers[$0.identity]?.layer }
            figures.simulcastLayers = Dictionary(layers.compactMap { $0 }.map { ($0, 1) }, uniquingKeysWith: +)
            checks.append(LoadChecks.simulcast(layers: Dictionary(uniqueKeysWithValues: zip(participants.map(\.identity), layers))))
        }
        var recordingOffsets: [[Double]]?
        if options.recordingsFolder != nil {
            let (check, measured) = checkRecording()
            checks.append(check)
            let offsets = measured.map(\.milliseconds)
            figures.recordingOnsetsMeasured = offsets.count
            figures.recordingAVOffsetMillisecondsMedian = Percentile.of(offsets, 0.5)
            figures.recordingAVOffsetMillisecondsP95 = Percentile.of(offsets.map(abs), 0.95)
            recordingOffsets = measured.map { [$0.captured, $0.milliseconds] }
        }
        let participantReports = zip(participants, results).map { participant, result in
            LoadReport.Participant(
                identity: participant.identity, speaker: participant.isSpeaker, decodes: participant.decodes, joins: result.joins,
                failures: result.failures, joinMilliseconds: result.joinMilliseconds, firstFrameMilliseconds: result.firstFrameMilliseconds,
                audioPacketsReceived: result.audioPacketsReceived, videoPacketsReceived: result.videoPacketsReceived,
                lossFraction: Self.loss(result),
                lossBeyondImpairmentFraction: options.impairment == nil ? nil : Self.lossBeyondImpairment(result),
                jitterMilliseconds: Percentile.of(result.jitterMilliseconds, 0.5) ?? 0,
                videoFramesReceived: result.videoFramesReceived, framesDecoded: result.framesDecoded, freezes: result.freezes,
                freezeMilliseconds: result.freezeMilliseconds, longestFreezeMilliseconds: result.longestFreezeMilliseconds,
                nacksSent: result.nacksSent, keyFrameRequestsSent: result.keyFrameRequestsSent,
                retransmissionsReceived: result.retransmissionsReceived, keyFramesReceived: result.keyFramesReceived,
                audioRecoveryMilliseconds: result.audioRecoveryMilliseconds, videoRecoveryMilliseconds: result.videoRecoveryMilliseconds,
                audioConcealedFraction: Self.audioConcealed(result, dark: dark),
                avOffsetMillisecondsMedian: Percentile.of(result.avOffsetMilliseconds, 0.5),
                avOffsetMillisecondsP95: Percentile.of(result.avOffsetMilliseconds.map(abs), 0.95),
                heard: Dictionary(uniqueKeysWithValues: result.framesExpectingSpeaker.map { speaker, frames in
                    ("load-\(speaker)", Double(result.framesHearingSpeaker[speaker] ?? 0) / Double(max(frames, 1)))
                }),
                ownToneFraction: participant.isSpeaker
                    ? Double(result.framesWithOwnTone) / Double(max(result.framesCheckedForOwnTone, 1)) : nil,
                slotChecks: result.slotChecks, slotChecksPassed: result.slotChecksPassed,
                audioLatencyMedianMilliseconds: Percentile.of(result.audioLatencies.map(\.milliseconds), 0.5),
                videoLatencyMedianMilliseconds: Percentile.of(result.videoLatencies.map(\.milliseconds), 0.5),
                cameraLayer: hostCameraLayers[participant.identity]?.layer, cameraDecodedWidth: hostCameraLayers[participant.identity]?.width,
                firstHost: result.firstHost, rejoins: options.rejoin ? result.rejoins : nil)
        }
        let formatter = ISO8601DateFormatter()
        return LoadReport(url: options.url, room: options.room, startedAt: formatter.string(from: startedAt),
                          passed: checks.allSatisfy(\.passed), checks: checks, figures: figures, participants: participantReports,
                          samples: samples, audioLatencies: audioLatencies, recordingOffsets: recordingOffsets, videoLatencies: videoLatencies)
    }

    /// A recording's lips and voices fail the check where a viewer would notice them apart
    /// (ITU-R BT.1359's thresholds of detection, +45 ms to −125 ms, positive for sound before
    /// vision): lips more than 45 ms late (the voice first, which nobody meets in life), or
    /// 125 ms early (the voice after, as from across a room),
    /// in the 95th percentile.
    static let recordingLipsLateBound = 45.0, recordingLipsEarlyBound = 125.0

    /// The recording (`--record`), read from its folder: it plays, holds most onsets the
    /// speakers sent with their pictures, and shows them together.
    private func checkRecording() -> (LoadReport.Check, [(captured: Double, milliseconds: Double)]) {
        let name = "the recording plays with lips and voices together"
        guard let model, let recording = model.recording, let folder = options.recordingsFolder, let format = options.video else {
            return (.init(name: name, passed: false, detail: recordingProblem ?? "the recording did not start"), [])
        }
        let path = folder.hasSuffix("/") ? folder + recording.file : folder + "/" + recording.file
        var tiles: [Int: TemplateDescription.Position] = [:]
        for position in model.recordingLayout?.positions ?? [] where position.source == .camera {
            if let index = model.indexOf[position.participant], index < model.speakers.count { tiles[index] = position }
        }
        let (onsets, pictures) = model.recorded()
        let lipSync = RecordingLipSync(tiles: tiles, pictures: pictures, cameraSize: (format.width, format.height),
                                       cameraFramesPerSecond: format.framesPerSecond, frequencies: model.speakers.map(\.frequency))
        let result: RecordingLipSync.Result
        do { result = try lipSync.measure(path: path, onsets: onsets) } catch {
            return (.init(name: name, passed: false, detail: "\(path): \(error)"), [])
        }
        let offsets = result.offsetsMilliseconds
        let late = Percentile.of(offsets.map { max(0, $0) }, 0.95) ?? 0, early = Percentile.of(offsets.map { max(0, -$0) }, 0.95) ?? 0
        let missing = result.unmatched > 0 ? " (of those missing, \(result.toneMissing) without their tone's onset in the audio, \(result.unmatched - result.toneMissing) without their picture)" : ""
        let summary = "\(offsets.count) of \(onsets.count) onsets found in \(recording.file)\(missing); lips late \(Int(late.rounded())) ms, early \(Int(early.rounded())) ms (p95)"
        let passed = offsets.count >= max(3, onsets.count / 2) && late <= Self.recordingLipsLateBound && early <= Self.recordingLipsEarlyBound
        let bounds = " (half the onsets at least; lips at most \(Int(Self.recordingLipsLateBound)) ms late and \(Int(Self.recordingLipsEarlyBound)) ms early)"
        return (.init(name: name, passed: passed, detail: passed ? summary : summary + bounds), result.offsets)
    }

    /// The slowest receiver's whole composite frames per second from `start` to `end` (seconds
    /// into the run); nil when the window is under a second.
    static func framesReceivedPerSecond(_ results: [LoadParticipant.Results], from start: Double, to end: Double) -> Double? {
        guard end - start >= 1, !results.isEmpty else { return nil }
        return results.map { result in Double(result.frameArrivals.filter { $0 >= start && $0 < end }.count) / (end - start) }.min()
    }

    static func loss(_ results: LoadParticipant.Results) -> Double {
        results.packetsExpected > 0 ? Double(results.packetsLost) / Double(results.packetsExpected) : 0
    }

    /// The share of what the host sent that a receiver lost other than to its own impaired
    /// network (`--loss`): the host's part of the loss.
    static func lossBeyondImpairment(_ results: LoadParticipant.Results) -> Double {
        results.packetsExpected > 0 ? Double(results.packetsLost - results.packetsLostOnTheWay) / Double(results.packetsExpected) : 0
    }

    /// The share of its mix packets a receiver never got, less those a blackout of `dark` took
    /// (the mix is 50 packets a second); nil when it expected none.
    static func audioConcealed(_ results: LoadParticipant.Results, dark: Duration?) -> Double? {
        let blackedOut = Int64((dark ?? .zero).seconds * 50)
        let expected = results.audioPacketsExpected - blackedOut, lost = results.audioPacketsLost - blackedOut
        return expected > 0 ? Double(max(0, lost)) / Double(expected) : nil
    }
}

/// The part of `GET /v1/rooms/{room}` that says which simulcast layer of each camera the host
/// decodes.
struct HostRoomCameras: Decodable {
    struct Participant: Decodable {
        struct Track: Decodable {
            let source: String
            let layer: String?
            let width: Int?
        }
        let identity: String
        let tracks: [Track]
    }
    let participants: [Participant]

    var cameraLayers: [String: (layer: String?, width: Int?)] {
        var layers: [String: (layer: String?, width: Int?)] = [:]
        for participant in participants {
            guard let camera = participant.tracks.first(where: { $0.source == "camera" }) else { continue }
            layers[participant.identity] = (camera.layer, camera.width)
        }
        return layers
    }
}
