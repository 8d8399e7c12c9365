import Foundation
import Synchronization

/// Codec, renderer and recorder start-up failures. Each is counted (`tessera_start_failures` in
/// /metrics) and logged once per component with its reason; the caller then ends what depended
/// on it (a track, an encoding) instead of retrying on every packet or picture.
final class StartFailures: Sendable {
    /// The host process's one count: a failure to start a codec is a fact about the machine
    /// (memory, a library), not about one room.
    static let shared = StartFailures()

    private let counts = Mutex<[String: Int]>([:])

    /// Counts a failure of `component` ("vp8-encoder", "opus-decoder", …); the first of each
    /// kind is logged to `log` with its reason (`startFailed`), the rest only counted, so that a
    /// machine out of memory does not fill the log with one line per packet.
    func record(_ component: String, _ error: any Error, log: HostLog, room: String? = nil) {
        let first = counts.withLock { counts -> Bool in
            counts[component, default: 0] += 1
            return counts[component] == 1
        }
        if first { log.error("startFailed", room: room, ["component": component, "reason": "\(error)"]) }
    }

    /// The components whose failures are counted.
    static let components = ["opus-decoder", "opus-encoder", "vp8-decoder", "vp8-encoder", "text-renderer", "recorder"]

    /// Failures so far, by component.
    var snapshot: [String: Int] { counts.withLock { $0 } }
}
