import Compositing
import Conference
import Wire

/// `POST …/participants/{pid}/subscriptions` and `DELETE …/subscriptions/{participant}/{source}`:
/// one participant's camera or screen forwarded on an m-line of another's session (seed 003).
extension HostAPI {
    /// Binds the named track to the subscriber's first free recvonly video m-line (or the one
    /// that carries it already: the count goes up). `200` with participant, source, mid, count;
    /// `404` for no such track; `409` when no m-line is free.
    func addSubscription(room: String, id: String, _ request: HTTPRequest) -> HTTPResponse {
        let wanted: SubscriptionRequest
        do { wanted = try SubscriptionRequest(json: request.body) } catch {
            return .error(400, "bad JSON", detail: "\(error); expected {\"participant\": \"bob\", \"source\": \"camera\"}")
        }
        guard let source = VideoSource(rawValue: wanted.source) else {
            return .error(400, "bad source", detail: "source is camera or screen, not \(wanted.source.prefix(64))")
        }
        let rooms = self.rooms
        return onLoop { () -> Result<SubscriptionState, HTTPResponseError> in
            guard let hosted = rooms.value.hosting(room: room, id: id) else {
                return .failure(HTTPResponseError(404, "not found", "no participant \(id) in room \(room)"))
            }
            do throws(SubscriptionError) { return .success(try hosted.subscribe(id, to: wanted.participant, source: source)) } catch {
                return .failure(error.httpError)
            }
        }
        .response { .json(200, $0) }
    }

    /// One subscription fewer (`?all=1`: every one); `200` `{"participant", "source", "count"}`,
    /// the stream stopped at 0; `404` when it holds none.
    func removeSubscription(room: String, id: String, publisher: String, source name: String, _ request: HTTPRequest) -> HTTPResponse {
        guard let source = VideoSource(rawValue: name) else {
            return .error(404, "not found", detail: "source is camera or screen, not \(name.prefix(64))")
        }
        let all = request.query["all"].map { $0 == "1" || $0 == "true" } ?? false
        let rooms = self.rooms
        return onLoop { () -> Result<Int, HTTPResponseError> in
            guard let hosted = rooms.value.hosting(room: room, id: id) else {
                return .failure(HTTPResponseError(404, "not found", "no participant \(id) in room \(room)"))
            }
            do throws(SubscriptionError) { return .success(try hosted.unsubscribe(id, from: publisher, source: source, all: all)) } catch {
                return .failure(error.httpError)
            }
        }
        .response { count in
            struct Left: Encodable { let participant: String; let source: VideoSource; let count: Int }
            return .json(200, Left(participant: publisher, source: source, count: count))
        }
    }
}

extension SubscriptionError {
    /// The contract's answer: 404 for a track or subscription that is not there, 409 for no free m-line.
    var httpError: HTTPResponseError {
        switch self {
        case .noSuchTrack(let detail), .notSubscribed(let detail): HTTPResponseError(404, "not found", detail)
        case .noFreeMLine(let detail): HTTPResponseError(409, "no free m-line", detail)
        }
    }
}

/// The body of `POST …/subscriptions`.
struct SubscriptionRequest: Decodable {
    var participant: String
    var source: String

    init(json body: [UInt8]) throws(JSONDocumentError) {
        self = try StrictJSON.decode(Self.self, from: body, shape: .object(["participant": .string, "source": .string]))
    }
}
