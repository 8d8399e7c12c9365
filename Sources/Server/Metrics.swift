import Conference
import Foundation
import Sockets
import Wire

/// `GET /metrics`.
extension HostAPI {
    /// Prometheus text format (version 0.0.4): a snapshot taken on the media loop.
    func metrics() -> HTTPResponse {
        let media = self.media, rooms = self.rooms, echoes = self.echoes
        return onLoop { () -> Result<MetricsSnapshot, HTTPResponseError> in
            guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
            return .success(MetricsSnapshot(rooms: Array(rooms.value.rooms.values), expiredJoins: rooms.value.expiredJoins,
                                            echoSessions: echoes.value.count, port: port, loopBusy: rooms.value.loopBusy,
                                            audioEncoderComplexity: rooms.value.audioEncoderLoad.complexity,
                                            decoders: rooms.value.decoders))
        }
        .response { snapshot in
            // The process's own figures are read here, on the HTTP thread: reading /proc has no
            // business on the media loop.
            .text(200, MetricsSnapshot.prometheusText(MetricsSnapshot.processMetrics() + snapshot.metrics + clusterMetrics() + edgeMetrics()),
                  contentType: "text/plain; version=0.0.4")
        }
    }
}

/// One metric in Prometheus's text format: its samples by label set.
struct PrometheusMetric: Sendable {
    enum Kind: String, Sendable { case counter, gauge }
    let name: String
    let kind: Kind
    let help: String
    let samples: [(labels: String, value: String)]

    init(_ name: String, _ kind: Kind, _ help: String, _ samples: [(labels: String, value: String)]) {
        self.name = name
        self.kind = kind
        self.help = help
        self.samples = samples
    }
}

/// What the host has counted, read on the media loop at one moment.
struct MetricsSnapshot: Sendable {
    let metrics: [PrometheusMetric]

    init(rooms hosted: [HostedRoom], expiredJoins: Int, echoSessions: Int, port: MediaPort, loopBusy: Double, audioEncoderComplexity: Int,
         decoders: VideoDecodePool?) {
        let counters = port.counters, drops = port.drops
        let everyone = hosted.flatMap(\.participants).map(\.inbound)
        let cameras = everyone.compactMap(\.cameraStatistics)
        let videos = cameras + everyone.compactMap(\.screenStatistics)
        let encoding = hosted.compactMap(\.encodeStatistics)
        let failures = StartFailures.shared.snapshot
        metrics = [
            PrometheusMetric("tessera_packets_lost", .gauge, "Packets participants sent that did not arrive (open rooms, RFC 3550 A.3).", [("", "\(everyone.reduce(Int64(0)) { $0 + $1.packetsLost })")]),
            PrometheusMetric("tessera_feedback_sent", .gauge, "RTCP feedback the host sent participants of the open rooms.", [("type=\"nack\"", "\(everyone.reduce(0) { $0 + $1.nacksSent })"), ("type=\"pli\"", "\(everyone.reduce(0) { $0 + $1.keyFrameRequestsSent })"), ("type=\"remb\"", "\(everyone.reduce(0) { $0 + $1.rembsSent })")]),
            PrometheusMetric("tessera_packets_resent", .gauge, "Composite and mix packets the open rooms sent again because a receiver asked (NACK, RFC 4585), on RTX where negotiated (RFC 4588).", [("", "\(hosted.reduce(Int64(0)) { $0 + $1.room.packetsResent })")]),
            PrometheusMetric("tessera_resends_refused", .gauge, "Composite packets receivers asked for that the open rooms could not resend (too old or unknown); each brings a key frame instead.", [("", "\(hosted.reduce(Int64(0)) { $0 + $1.room.resendsRefused })")]),
            PrometheusMetric("tessera_camera_bitrate_cap_bits", .gauge, "The bitrate caps (REMB) last sent the open rooms' cameras, summed (bit/s): each camera's is what its largest tile needs (the speaker's 1.5x, a subscribed camera's 2.5 Mbit/s).", [("", "\(everyone.reduce(0) { $0 + ($1.cameraBitrateCapSent ?? 0) })")]),
            PrometheusMetric("tessera_audio_silent_packets_skipped", .gauge, "Audio packets of the open rooms' participants played as silence without decoding (their RFC 6464 level said silence, or they were Opus DTX frames).", [("", "\(everyone.reduce(0) { $0 + $1.silentAudioPacketsSkipped })")]),
            PrometheusMetric("tessera_audio_unheard_packets_skipped", .gauge, "Audio packets of the open rooms' participants played as silence without decoding because their RFC 6464 level was too low for a place in the mixes (Top K).", [("", "\(everyone.reduce(0) { $0 + $1.unheardAudioPacketsSkipped })")]),
            PrometheusMetric("tessera_camera_frames", .gauge, "Camera frames of the open rooms' participants: decoded, or dropped (lost, refused by the decoder, or waiting for a key frame).", [("result=\"decoded\"", "\(cameras.reduce(0) { $0 + $1.framesDecoded })"), ("result=\"dropped\"", "\(cameras.reduce(0) { $0 + $1.framesLost + $1.framesDroppedWaitingForKeyFrame + $1.decodeErrors + $1.framesDroppedDecodeQueueFull })")]),
            PrometheusMetric("tessera_video_decode_seconds", .gauge, "Time the decode workers spent decoding the open rooms' cameras and screens.", [("", "\(everyone.reduce(0.0) { $0 + $1.decodeTime.seconds })")]),
            PrometheusMetric("tessera_video_decode_frames_dropped", .gauge, "Camera and screen frames of the open rooms' participants dropped because their decode queue was full (the decode workers were behind): each drops its stream to the next key frame, which is asked for.", [("", "\(videos.reduce(0) { $0 + $1.framesDroppedDecodeQueueFull })")]),
            PrometheusMetric("tessera_video_decode_workers", .gauge, "Decode worker threads running (each runs while a camera or screen is assigned to it; at most limits.decodeWorkers).", [("", "\(decoders?.running ?? 0)")]),
            PrometheusMetric("tessera_video_frames_composed", .gauge, "Composite pictures drawn in the open rooms.", [("", "\(hosted.reduce(0) { $0 + $1.room.framesComposed })")]),
            PrometheusMetric("tessera_video_compose_seconds", .gauge, "Time spent drawing them (per frame: divide by frames composed).", [("", "\(hosted.reduce(0.0) { $0 + $1.room.composeTime.seconds })")]),
            PrometheusMetric("tessera_tick_late", .gauge, "Media ticks that came over their lateness bound and restarted their schedule.", [("media=\"audio\"", "\(hosted.reduce(0) { $0 + $1.room.audioScheduleResets })"), ("media=\"video\"", "\(hosted.reduce(0) { $0 + $1.room.videoScheduleResets })")]),
            PrometheusMetric("tessera_rooms", .gauge, "Rooms with at least one participant.", [("", "\(hosted.count)")]),
            PrometheusMetric("tessera_participants", .gauge, "Participants in all rooms.", [("", "\(hosted.reduce(0) { $0 + $1.participants.count })")]),
            PrometheusMetric("tessera_audio_encoders", .gauge, "Opus encoders running for rooms' mixes (one per distinct mix).", [("", "\(hosted.reduce(0) { $0 + $1.room.mixer.encodersRunning })")]),
            PrometheusMetric("tessera_audio_encoder_complexity", .gauge, "The Opus complexity of the mixes' encoders now: lowered while the media loop is loaded (0-10).", [("", "\(audioEncoderComplexity)")]),
            PrometheusMetric("tessera_loop_busy_ratio", .gauge, "The media loop's busy fraction over the last second (0-1).", [("", "\(loopBusy)")]),
            PrometheusMetric("tessera_video_frames_encoded", .gauge, "Composite frames encoded by the open rooms' encoder threads.", [("", "\(encoding.reduce(0) { $0 + $1.framesEncoded })")]),
            PrometheusMetric("tessera_video_pictures_dropped", .gauge, "Composite pictures the open rooms' encoder threads had no time for.", [("", "\(encoding.reduce(0) { $0 + $1.picturesDropped })")]),
            PrometheusMetric("tessera_video_encode_seconds", .gauge, "Time the open rooms' encoder threads spent encoding.", [("", "\(encoding.reduce(0.0) { $0 + $1.totalEncodeTime.seconds })")]),
            PrometheusMetric("tessera_video_encoder_step", .gauge, "Open rooms by their composite encoders' step (0 the best pictures; each step cheaper: the VP8 profile and libvpx cpu-used it codes with, and the canvas drawn whole or at half its size), chosen from their encode times and the host's load (docs/config.md, many rooms).", CompositeEncoderSpeed.steps.enumerated().map { step, setting in ("step=\"\(step)\",profile=\"\(setting.profile)\",cpu_used=\"\(setting.cpuUsed)\",canvas=\"\(setting.halvesCanvas ? "half" : "full")\"", "\(hosted.filter { $0.room.encoderSpeed.step == step }.count)") }),
            PrometheusMetric("tessera_video_encoder_speed_changes", .gauge, "Steps the open rooms' composite encoders took to a faster speed (under load) and back to a slower one.", [("direction=\"faster\"", "\(hosted.reduce(0) { $0 + $1.room.encoderSpeed.stepsFaster })"), ("direction=\"slower\"", "\(hosted.reduce(0) { $0 + $1.room.encoderSpeed.stepsSlower })")]),
            PrometheusMetric("tessera_video_encoders_running", .gauge, "Composite encoder threads running (none in a room nobody receives the composite of).", [("", "\(hosted.reduce(0) { total, room in total + CompositeEncoding.Kind.allCases.filter { room.encoderRunning($0) }.count })")]),
            PrometheusMetric("tessera_video_low_receivers", .gauge, "Receivers sent the lower composite encoding (their bandwidth estimate is low).", [("", "\(hosted.reduce(0) { $0 + $1.room.receivers(of: .low) })")]),
            PrometheusMetric("tessera_video_low_frames_encoded", .gauge, "Composite frames the open rooms' lower encodings encoded.", [("", "\(hosted.reduce(0) { $0 + $1.framesEncoded(.low) })")]),
            PrometheusMetric("tessera_video_receivers", .gauge, "Receivers of the composite by the encoding they are sent; paused: their feedback is under 60 kbit/s, so they get no video until it recovers.", CompositeEncoding.Kind.allCases.map { kind in ("encoding=\"\(kind.rawValue)\"", "\(hosted.reduce(0) { $0 + $1.room.receivers(of: kind) })") } + [("encoding=\"paused\"", "\(hosted.reduce(0) { $0 + $1.room.pausedReceivers })")]),
            PrometheusMetric("tessera_echo_sessions", .gauge, "Sessions of POST /v1/echo.", [("", "\(echoSessions)")]),
            PrometheusMetric("tessera_peers", .gauge, "Transports on the media port.", [("", "\(port.peerCount)")]),
            PrometheusMetric("tessera_datagrams_total", .counter, "UDP datagrams on the media port.", [("direction=\"in\"", "\(counters.datagramsIn)"), ("direction=\"out\"", "\(counters.datagramsOut)")]),
            PrometheusMetric("tessera_bytes_total", .counter, "UDP payload bytes on the media port.", [("direction=\"in\"", "\(counters.bytesIn)"), ("direction=\"out\"", "\(counters.bytesOut)")]),
            PrometheusMetric("tessera_datagrams_unroutable_total", .counter, "Datagrams from unknown addresses that named no peer.", [("", "\(counters.unroutable)")]),
            PrometheusMetric("tessera_datagrams_dropped_total", .counter, "Datagrams on the media port dropped, by why: from an address that named no peer; not STUN, DTLS, RTP or RTCP; a check ICE refused (wrong ufrag or integrity); DTLS or SRTP from an address no valid check came from; SRTP that failed authentication or replay checks or came before keys; DTLS records the handshake could not use.", [
                ("reason=\"unroutable\"", "\(counters.unroutable)"), ("reason=\"unknown_kind\"", "\(drops.unknownKind)"),
                ("reason=\"stun_rejected\"", "\(drops.stunRejected)"), ("reason=\"unknown_address\"", "\(drops.unknownAddress)"),
                ("reason=\"srtp_rejected\"", "\(drops.srtpRejected)"), ("reason=\"dtls_rejected\"", "\(drops.dtlsRejected)"),
            ]),
            PrometheusMetric("tessera_tcp_connections", .gauge, "ICE-TCP connections open on the media TCP port.", [("", "\(port.tcpConnectionCount)")]),
            PrometheusMetric("tessera_joins_expired_total", .counter, "Joins dropped for not connecting (ICE and DTLS) within 20 s of their answer.", [("", "\(expiredJoins)")]),
            PrometheusMetric("tessera_tcp_connections_total", .counter, "ICE-TCP connections accepted, and refused (over the limit, or naming no peer within 10 s).", [("result=\"accepted\"", "\(counters.tcpAccepted)"), ("result=\"refused\"", "\(counters.tcpRefused)")]),
            PrometheusMetric("tessera_start_failures_total", .counter, "Codecs, renderers and recorders that failed to start (each kind logged once with its reason).", StartFailures.components.map { ("component=\"\($0)\"", "\(failures[$0] ?? 0)") }),
        ]
    }

    /// The host process's CPU, memory, open files and threads, under the names Prometheus's own
    /// clients give them (so dashboards made for other processes read them too). A figure that
    /// cannot be read is left out rather than given as 0.
    static func processMetrics() -> [PrometheusMetric] {
        var metrics = [PrometheusMetric("process_cpu_seconds_total", .counter, "User and system CPU time the host process has used.",
                                        [("", "\(ProcessCPU.seconds())")])]
        let readings: [(String, String, Int?)] = [
            ("process_resident_memory_bytes", "Resident memory of the host process, bytes.", ProcessResources.residentBytes()),
            ("process_open_fds", "Open file descriptors of the host process (sockets included).", ProcessResources.openFileDescriptors()),
            ("process_max_fds", "The host process's limit on open file descriptors (RLIMIT_NOFILE, systemd's LimitNOFILE).",
             ProcessResources.maxFileDescriptors()),
            ("process_threads", "Threads of the host process (one per HTTP connection, one per running encoder, one per running decode worker, the media loop).",
             ProcessResources.threads()),
        ]
        for (name, help, value) in readings {
            if let value { metrics.append(PrometheusMetric(name, .gauge, help, [("", "\(value)")])) }
        }
        return metrics
    }

    /// The text `GET /metrics` answers: HELP and TYPE, then the samples, for each metric.
    var prometheusText: String { Self.prometheusText(metrics) }

    static func prometheusText(_ metrics: [PrometheusMetric]) -> String {
        var lines: [String] = []
        for metric in metrics {
            lines.append("# HELP \(metric.name) \(metric.help)")
            lines.append("# TYPE \(metric.name) \(metric.kind.rawValue)")
            for sample in metric.samples {
                lines.append(sample.labels.isEmpty ? "\(metric.name) \(sample.value)" : "\(metric.name){\(sample.labels)} \(sample.value)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
