import Cluster
import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// A running `tessera serve`: the HTTP API and the media port.
public final class ConferenceHost: Sendable {
    public let config: HostConfig
    public let http: HTTPServer
    public let media: MediaHost
    /// The host's log, in the config's `log` format and level.
    public let log: HostLog
    private let api: HostAPI
    /// In a cluster: this host's record, its rooms' leases and the answers about other rooms.
    public let cluster: ClusterCoordinator?

    /// Starts the host. Its log lines go to `logSink` (standard error unless a test captures them).
    public init(config: HostConfig, logSink: @escaping HostLog.Sink = HostLog.standardError) throws {
        self.config = config
        let log = HostLog(format: config.log.format, level: config.log.level, sink: logSink)
        self.log = log
        let listen = try TransportAddress(parsing: config.http.listen)  // before the media loop starts
        var cluster: ClusterCoordinator?
        if let settings = config.cluster {
            // `validate()` has checked the URL; a config built in code is checked here.
            var coordinator = ClusterCoordinator.Settings(redis: try RedisURL(parsing: settings.redis), node: settings.node, url: settings.url)
            coordinator.maxRooms = config.limits.maxRooms
            cluster = ClusterCoordinator(settings: coordinator) { warning, event, fields in
                log.log(warning ? .warning : .info, event, fields: fields)
            }
            // The recordings already in the folder (an earlier run's, or a crashed one's): a GET
            // of one at another host is sent here.
            let files = (try? FileManager.default.contentsOfDirectory(atPath: config.recordings.folder)) ?? []
            cluster?.holdRecordings(files.filter { $0.hasSuffix(".webm") && !$0.hasPrefix(".") })
        }
        self.cluster = cluster
        media = try MediaHost(listen: TransportAddress(parsing: config.media.listen),
                              tcpListen: config.media.tcpAddress.map { text in try TransportAddress(parsing: text) },
                              announce: config.media.announce,
                              impairment: config.testing.impair?.networkImpairment, seed: config.testing.impair?.seed ?? 1)
        if let impair = config.testing.impair {
            log.warning("testingImpair", ["detail": "the media socket is impaired for tests: \(impair.networkImpairment)"])
        }
        if SRTPSession.crypto != .openssl {  // slower SRTP (libsrtp2's own crypto), by choice or failure
            log.warning("srtpCrypto", ["detail": SRTPSession.crypto.summary])
        }
        if !config.testing.faults.isEmpty {
            log.warning("testingFaults", ["detail": "deliberate faults for tests are on: \(config.testing.faults.map(\.rawValue).sorted().joined(separator: ", "))"])
        }
        let api = HostAPI(media: media, limits: config.limits, secret: config.auth.secret, video: config.video,
                          recordingsFolder: config.recordings.folder, faults: config.testing.faults, cluster: cluster,
                          edge: config.cluster?.edge ?? false, log: log)
        self.api = api
        do {
            http = try HTTPServer(listen: listen, maxBodyBytes: config.http.maxBodyBytes,
                                  connectionLimit: config.http.connectionLimit, connectionsPerAddress: config.http.connectionsPerAddress,
                                  tls: try config.tlsIdentity()) { api.handle($0) }
        } catch {
            media.stop()
            throw error
        }
        cluster?.start()
        log.info("started", [
            "http": "\(http.scheme)://\(http.address)",
            "media": media.mediaAddress.map(\.description),  // UDP
            "mediaTCP": media.tcpAddress.map(\.description) ?? "off",
            "announce": media.candidateAddresses.filter { !$0.isTCP }.map(\.address).joined(separator: ","),
            "auth": config.auth.secret == nil ? "off" : "on",
            "recordings": config.recordings.folder,
            "cluster": config.cluster.map { "node \($0.node) at \($0.url), Redis \($0.redis)" } ?? "off",
        ])
    }

    /// SIGUSR1 or `POST /v1/drain`: no new room opens here (placement skips the host); the open
    /// rooms go on.
    public func drain() {
        _ = api.startDraining()
    }

    public var isDraining: Bool { api.drain.isDraining }

    /// Draining with no room open: what `--exit-when-drained` waits for. False while the loop
    /// does not answer.
    public var isDrainedAndEmpty: Bool {
        api.drain.isDraining && api.openRoomCount() == 0
    }

    /// The line `tessera serve` prints once it accepts requests.
    public var readyLine: String { "tessera: listening on \(http.scheme)://\(http.address)" }

    /// Ends the event streams, stops taking requests, finishes the recordings, then stops the
    /// media loop. `reason` (the signal) is logged.
    public func stop(reason: String? = nil) {
        log.info("stopping", ["reason": reason])
        api.events.closeAll()
        http.stop()
        api.finishRecordings()
        api.stopEdgeRelays()  // their pulls are DELETEd at the owners
        cluster?.stop()  // the record and the leases go now, so the rooms can be re-placed at once
        media.stop()
        log.info("stopped")
    }
}
