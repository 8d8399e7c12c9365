import Foundation

/// Every recording this host has made, by room: running, finished, or stopped by a failure
/// (`GET /v1/rooms/{room}/recordings`). Kept after the room closes, for as long as the host runs.
/// Touched only on the media loop thread.
final class RecordingLog {
    enum State: String, Encodable, Sendable {
        case recording, finished, failed
    }

    struct Entry: Sendable {
        let id: String
        let room: String
        let file: String
        let path: String
        let start: Date
        var end: Date?
        var state = State.recording
        var reason: String?
    }

    /// At most this many entries are kept (the oldest finished ones go first): a host that runs
    /// for months does not grow without bound.
    static let capacity = 10_000
    private(set) var entries: [Entry] = []

    func started(id: String, room: String, file: String, path: String, at start: Date) {
        entries.append(Entry(id: id, room: room, file: file, path: path, start: start))
        if entries.count > Self.capacity, let oldest = entries.firstIndex(where: { $0.state != .recording }) { entries.remove(at: oldest) }
    }

    /// The recording ended: its file is complete (`finished`), or it stopped on `failure`.
    func ended(id: String, at end: Date, failure: String? = nil) {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return }
        entries[index].end = end
        entries[index].state = failure == nil ? .finished : .failed
        entries[index].reason = failure
    }

    /// Whether `file` is being written now.
    func isRecording(file: String) -> Bool { entries.contains { $0.file == file && $0.state == .recording } }

    /// A recording as the API lists it: its size read from the file now, its duration so far.
    struct Listed: Encodable, Sendable {
        let id: String
        let file: String
        let start: String
        let duration: Double
        let size: Int
        let state: State
        let reason: String?
    }

    func list(room: String, now: Date) -> [Listed] {
        entries.filter { $0.room == room }.map { entry in
            let attributes = try? FileManager.default.attributesOfItem(atPath: entry.path)
            let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
            let duration = max(0, (entry.end ?? now).timeIntervalSince(entry.start))
            return Listed(id: entry.id, file: entry.file, start: HostAPI.timestamp(entry.start),
                          duration: (duration * 1000).rounded() / 1000, size: size, state: entry.state, reason: entry.reason)
        }
    }
}
