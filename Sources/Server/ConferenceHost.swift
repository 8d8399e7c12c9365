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
    private let api: HostAPI

    public init(config: HostConfig) throws {
        self.config = config
        let listen = try TransportAddress(parsing: config.http.listen)  // before the media loop starts
        media = try MediaHost(listen: TransportAddress(parsing: config.media.listen),
                              tcpListen: config.media.tcpAddress.map { text in try TransportAddress(parsing: text) },
                              announce: config.media.announce,
                              impairment: config.testing.impair?.networkImpairment, seed: config.testing.impair?.seed ?? 1)
        if let impair = config.testing.impair {
            FileHandle.standardError.write(Data("tessera: WARNING: the media socket is impaired for tests: \(impair.networkImpairment)\n".utf8))
        }
        if !config.testing.faults.isEmpty {
            FileHandle.standardError.write(Data("tessera: WARNING: deliberate faults for tests are on: \(config.testing.faults.map(\.rawValue).sorted())\n".utf8))
        }
        let api = HostAPI(media: media, limits: config.limits, secret: config.auth.secret, video: config.video,
                          recordingsFolder: config.recordings.folder, faults: config.testing.faults)
        self.api = api
        do {
            http = try HTTPServer(listen: listen, maxBodyBytes: config.http.maxBodyBytes,
                                  connectionLimit: config.http.connectionLimit, connectionsPerAddress: config.http.connectionsPerAddress,
                                  tls: try config.tlsIdentity()) { api.handle($0) }
        } catch {
            media.stop()
            throw error
        }
    }

    /// The line `tessera serve` prints once it accepts requests.
    public var readyLine: String { "tessera: listening on \(http.scheme)://\(http.address)" }

    /// Ends the event streams, stops taking requests, then stops the media loop.
    public func stop() {
        api.events.closeAll()
        http.stop()
        api.finishRecordings()
        media.stop()
    }
}
