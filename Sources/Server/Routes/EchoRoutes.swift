import Compositing
import Conference
import Foundation
import SDP
import Sockets
import Transport
import Wire

/// `POST /v1/echo` and `DELETE /v1/echo/{id}`: a loopback for checking a WebRTC peer.
extension HostAPI {
    func startEcho(_ request: HTTPRequest) -> HTTPResponse {
        guard request.contentType == "application/sdp" else {
            return .error(415, "wrong content type", detail: "send the SDP offer as application/sdp")
        }
        let accepted: AcceptedOffer
        do {
            accepted = try AcceptedOffer(offer: request.body, host: media, feedback: AcceptedOffer.echoFeedback,
                                         headerExtensions: AcceptedOffer.echoHeaderExtensions, sending: .everySection)
        } catch {
            return error.response
        }
        let media = self.media, echoes = self.echoes
        return onLoop { () -> Result<String, HTTPResponseError> in
            guard let port = media.port else { return .failure(HTTPResponseError(503, "host stopping", "the host is shutting down")) }
            guard echoes.value.count < Self.maxEchoSessions else {
                return .failure(HTTPResponseError(503, "host full", "at most \(Self.maxEchoSessions) echo sessions at once"))
            }
            let transport: PeerTransport
            do { transport = try accepted.makeTransport(host: media, now: media.loop.clock.now()) } catch {
                return .failure(HTTPResponseError(500, "transport", "\(error)"))
            }
            let id = UUID().uuidString.lowercased()
            let session = EchoSession(id: id, negotiated: accepted.negotiated, port: port) { echoes.value[$0] = nil }
            echoes.value[id] = session
            session.attach(transport, localUfrag: accepted.localICE.ufrag)
            return .success(id)
        }
        .response { id in
            HTTPResponse(status: 201, headers: [("Content-Type", "application/sdp"), ("Location", "/v1/echo/\(id)")],
                         body: accepted.negotiated.answer.serializedBytes())
        }
    }

    func stopEcho(_ id: String) -> HTTPResponse {
        let echoes = self.echoes
        let found = (try? media.runOnLoop { () -> Bool in
            guard let session = echoes.value[id] else { return false }
            session.end()
            return true
        }) ?? false
        return found ? HTTPResponse(status: 204) : .error(404, "not found", detail: "no echo session \(id)")
    }
}
