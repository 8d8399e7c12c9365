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

    /// Starts the host. Its log lines go to `logSink` (standard error unless a test captures them).
    public init(config: HostConfig, logSink: @escaping HostLog.Sink = HostLog.standardError) throws {
        self.config = config
        let log = HostLog(format: config.log.format, level: config.log.level, sink: logSink)
        self.log = log
        let listen = try TransportAddress(parsing: config.http.listen)  // before the media loop starts
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
                          recordingsFolder: config.recordings.folder, faults: config.testing.faults, log: log)
        self.api = api
        do {
            http = try HTTPServer(listen: listen, maxBodyBytes: config.http.maxBodyBytes,
                                  connectionLimit: config.http.connectionLimit, connectionsPerAddress: config.http.connectionsPerAddress,
                                  tls: try config.tlsIdentity()) { api.handle($0) }
        } catch {
            media.stop()
            throw error
        }
        log.info("started", [
            "http": "\(http.scheme)://\(http.address)",
            "media": media.mediaAddress.map(\.description),  // UDP
            "mediaTCP": media.tcpAddress.map(\.description) ?? "off",
            "announce": media.candidateAddresses.filter { !$0.isTCP }.map(\.address).joined(separator: ","),
            "auth": config.auth.secret == nil ? "off" : "on",
            "recordings": config.recordings.folder,
        ])
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
        media.stop()
        log.info("stopped")
    }
}
