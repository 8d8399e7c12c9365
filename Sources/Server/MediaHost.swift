import Sockets
import Foundation
import SDP
import Transport
import Wire

/// The media side of a running host: one event-loop thread, the shared UDP port, the DTLS
/// certificate, and the sessions on that port. Everything but `runOnLoop` is touched only on the
/// loop thread.
public final class MediaHost: @unchecked Sendable {
    public let loop: EventLoop
    public let certificate: DTLSCertificate
    let dtlsContext: DTLSContext
    /// Host candidates announced in answers (docs/api.md: one per announced address, the media port).
    let candidateAddresses: [HostCandidateAddress]
    private(set) var port: MediaPort?
    private let thread: EventLoopThread

    /// Media on `listen` (UDP) and, with `tcpListen`, ICE-TCP there; each announced address
    /// is a UDP candidate and, with TCP on, a passive TCP candidate after it.
    public init(listen: TransportAddress, tcpListen: TransportAddress? = nil, announce: [String], impairment: NetworkImpairment? = nil,
                seed: UInt64 = 1) throws {
        loop = try EventLoop()
        certificate = try DTLSCertificate()
        dtlsContext = try DTLSContext(certificate: certificate)
        let port = try MediaPort(loop: loop, bind: listen, tcpBind: tcpListen, impairment: impairment, seed: seed)
        self.port = port
        let announced = announce.isEmpty ? [Self.hostText(listen)] : announce
        candidateAddresses = announced.map { HostCandidateAddress(address: $0, port: port.socket.localAddress.port) }
            + announced.compactMap { address in port.tcpListener.map { HostCandidateAddress(address: address, port: $0.localAddress.port, isTCP: true) } }
        thread = EventLoopThread(loop, name: "tessera-media")
    }

    /// The bound media address (its port is the real one after asking for 0).
    public var mediaAddress: TransportAddress? { port?.socket.localAddress }
    /// The bound ICE-TCP address, nil when `media.tcpListen` is off.
    public var tcpAddress: TransportAddress? { port?.tcpListener?.localAddress }

    /// Runs `body` on the loop thread and waits for its result (from an HTTP thread); throws
    /// `EventLoop.CallError` on the loop thread itself, once the host has stopped, or after 10 s.
    public func runOnLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try loop.call(body)
    }

    /// Stops the loop and waits for its thread to end.
    public func stop() {
        thread.stop()
    }

    private static func hostText(_ address: TransportAddress) -> String {
        let text = address.description
        guard let colon = text.lastIndex(of: ":") else { return text }
        return String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    }
}
