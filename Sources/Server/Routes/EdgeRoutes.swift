import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// An edge host's part of the API (docs/cluster.md, "Viewers at edge hosts"): a composite
/// viewer of a room another host owns is answered here and fed from this host's one pull of
/// the room from its owner.
extension HostAPI {
    /// `POST /v1/rooms/{room}/viewers` at an edge host for a room owned at `ownerURL`: the same
    /// WHEP answer as at the owner (the composite on the first video section, the whole mix on
    /// the first audio section); the session's `Location` is on this host.
    func joinAtEdge(room: String, ownerURL: String, _ request: HTTPRequest) -> HTTPResponse {
        guard let edges else { return .error(500, "not an edge", detail: "this host is not an edge host") }
        guard Self.isValidName(room) else { return .error(400, "bad room name", detail: "use 1 to 64 of A-Z a-z 0-9 - _ .") }
        guard request.contentType == "application/sdp" else {
            return .error(415, "wrong content type", detail: "send the SDP offer as application/sdp")
        }
        let accepted: AcceptedOffer
        do {
            accepted = try AcceptedOffer(offer: request.body, host: media, feedback: AcceptedOffer.feedback, sending: .firstOfEachKind)
        } catch {
            return error.response
        }
        // The pull is a viewer at the owner: with auth on, this host signs its token (every
        // host of a cluster shares the secret, docs/cluster.md).
        let token = secret.map { JoinToken(room: room, identity: "edge-" + (cluster?.settings.node ?? "host"),
                                           expires: Int64(Date().timeIntervalSince1970) + 24 * 3600).signed(secret: $0) }
        let media = self.media, log = self.log
        return onLoop { () -> Result<String, HTTPResponseError> in
            guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
            let transport: PeerTransport
            do { transport = try accepted.makeTransport(host: media, now: media.loop.clock.now()) } catch {
                return .failure(HTTPResponseError(500, "transport", "\(error)"))
            }
            let directory = edges.value
            let relay = directory.relay(room: room, ownerURL: ownerURL) {
                EdgeRelay(room: room, ownerURL: ownerURL, media: media, port: port, log: log, token: token, directory: directory)
            }
            return .success(relay.join(accepted: accepted, transport: transport))
        }
        .response { id in
            HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"),
                                                ("Location", (cluster?.settings.url ?? "") + "/v1/rooms/\(room)/viewers/\(id)")],
                         body: accepted.negotiated.answer.serializedBytes())
        }
    }

    /// `DELETE /v1/rooms/{room}/viewers/{id}` of a viewer this edge serves; nil when it is not one.
    func leaveEdgeViewer(room: String, id: String) -> HTTPResponse? {
        guard let edges else { return nil }
        let found = (try? media.runOnLoop { () -> Bool in
            guard let relay = edges.value.relay(holding: id), relay.room == room else { return false }
            relay.leave(id)
            return true
        }) ?? false
        return found ? HTTPResponse(status: 204) : nil
    }

    /// The host stops: every relay's pull is DELETEd at its owner.
    func stopEdgeRelays() {
        guard let edges else { return }
        _ = try? media.runOnLoop { edges.value.stopAll() }
    }

    /// An edge's relays as `/metrics` shows them: local viewers, and rooms pulled now.
    func edgeMetrics() -> [PrometheusMetric] {
        guard let edges else { return [] }
        let counts = (try? media.runOnLoop { () -> (viewers: Int, pulls: Int) in
            (edges.value.viewerCount, edges.value.relays.values.count { $0.isPulling })
        }) ?? (viewers: 0, pulls: 0)
        return [
            PrometheusMetric("tessera_edge_viewers", .gauge, "Composite viewers this edge host serves of rooms other hosts own.", [("", "\(counts.viewers)")]),
            PrometheusMetric("tessera_edge_pulls", .gauge, "Rooms this edge host pulls from their owners now (one WHEP viewer at each owner).",
                             [("", "\(counts.pulls)")]),
        ]
    }
}
