import Cluster
import Foundation
import Sockets
import Wire

/// Set by SIGUSR1 or `POST /v1/drain`: this host opens no new room (in a cluster, placement
/// skips it); its open rooms go on. Read from any thread.
final class DrainState: @unchecked Sendable {
    private let lock = NSLock()
    private var on = false
    var isDraining: Bool { lock.withLock { on } }
    /// True the first time.
    func start() -> Bool { lock.withLock { defer { on = true }; return !on } }
}

/// The cluster's part of the API (docs/api.md, "Many hosts"): redirects to a room's owner, the
/// cluster-wide room list, drain.
extension HostAPI {
    /// Nil when the request is this host's to serve (the room is open here, was placed here, or
    /// nobody owns it and the call does not open rooms); else the answer: 307 to the owner, or
    /// 503 when the owner cannot be known. An HTTP thread waits here (at most the coordinator's
    /// request timeout), never the media loop.
    /// With `edgeViewer` (a composite viewer's join at an edge host), a room owned elsewhere
    /// is served here from the owner's stream (`joinAtEdge`) rather than redirected.
    func clusterAnswer(_ cluster: ClusterCoordinator, _ request: HTTPRequest, room: String, places: Bool, edgeViewer: Bool = false) -> HTTPResponse? {
        switch cluster.resolve(room: room, place: places) {
        case .here, .unowned:
            return nil
        case .elsewhere(_, let url) where edgeViewer:
            return joinAtEdge(room: room, ownerURL: url, request)
        case .elsewhere(let node, let url):
            let location = url + request.path + Self.queryString(request.query)
            return HTTPResponse.json(307, ["error": "elsewhere", "detail": "room \(room) is on host \(node): repeat the request (same method and body) at Location",
                                          "node": node])
                .adding(header: "Location", location)
        case .noPlacement(let detail):
            return HTTPResponse.error(503, "no host to place", detail: detail).adding(header: "Retry-After", "5")
        case .unavailable(let detail):
            log.debug("clusterUnavailable", room: room, ["detail": detail])
            return HTTPResponse.error(503, "cluster unavailable", detail: "cannot tell which host has room \(room): \(detail)")
                .adding(header: "Retry-After", "2")
        }
    }

    /// `?a=b&c=d` from the parsed query, sorted by name, each part percent-encoded (RFC 3986
    /// unreserved characters kept); "" for none.
    static func queryString(_ query: [String: String]) -> String {
        guard !query.isEmpty else { return "" }
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return "?" + query.sorted { $0.key < $1.key }.map { "\(encode($0.key))=\(encode($0.value))" }.joined(separator: "&")
    }

    /// `GET /v1/rooms` in a cluster: every node's rooms, from their records (at most a second
    /// old), each with its node.
    func listClusterRooms(_ cluster: ClusterCoordinator) -> HTTPResponse {
        struct Room: Encodable { let name: String; let participants: Int; let viewers: Int; let node: String; let url: String }
        switch cluster.nodes() {
        case .success(let nodes):
            let rooms = nodes.flatMap { node in
                node.rooms.map { Room(name: $0.name, participants: $0.participants, viewers: $0.viewers, node: node.name, url: node.url) }
            }
            return .json(200, ClusterRooms(rooms: rooms.sorted { ($0.name, $0.node) < ($1.name, $1.node) },
                                           nodes: nodes.map { ClusterRooms.Node(name: $0.name, url: $0.url, draining: $0.draining,
                                                                                 rooms: $0.rooms.count, spare: ($0.spare * 100).rounded() / 100) }))
        case .failure(let failure):
            return .error(503, "cluster unavailable", detail: "cannot read the cluster's rooms: \(failure.reason)")
        }
        struct ClusterRooms: Encodable {
            struct Node: Encodable { let name: String; let url: String; let draining: Bool; let rooms: Int; let spare: Double }
            let rooms: [Room]
            let nodes: [Node]
        }
    }

    /// `POST /v1/drain`.
    func startDraining() -> HTTPResponse {
        if drain.start() {
            cluster?.setDraining(true)
            log.info("draining", ["detail": "no new room opens here; the open ones go on"])
        }
        let rooms = self.rooms
        let open = (try? media.runOnLoop { rooms.value.rooms.count }) ?? 0
        return .json(200, DrainAnswer(draining: true, rooms: open))
    }

    /// Open rooms, for `--exit-when-drained`; nil when the loop did not answer.
    func openRoomCount() -> Int? {
        let rooms = self.rooms
        return try? media.runOnLoop { rooms.value.rooms.count }
    }

    /// The cluster's lines of `/metrics`.
    func clusterMetrics() -> [PrometheusMetric] {
        var metrics = [PrometheusMetric("tessera_cluster_draining", .gauge, "1 while the host drains (SIGUSR1 or POST /v1/drain): it opens no new room and placement skips it.",
                                        [("", drain.isDraining ? "1" : "0")])]
        if let cluster {
            metrics.append(PrometheusMetric("tessera_cluster_redis_up", .gauge, "1 while the cluster's Redis answers the host, 0 while it does not (rooms open here go on; others answer 503).",
                                            [("", cluster.isRedisReachable == true ? "1" : "0")]))
        }
        return metrics
    }
}

private struct DrainAnswer: Encodable {
    let draining: Bool
    let rooms: Int
}

extension HTTPResponse {
    func adding(header name: String, _ value: String) -> HTTPResponse {
        var response = self
        response.headers.append((name, value))
        return response
    }
}
