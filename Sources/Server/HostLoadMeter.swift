import Foundation
import Sockets
import Wire

/// The share of the machine's cores the host's process (every thread: the media loop, the
/// encoders, HTTP) used over the last second or so, for the rooms' encoder speed
/// (`CompositeEncoderSpeed`). One per host, read by every room on the media loop; it samples
/// the process's CPU time (`getrusage`, no file read) at most once a second.
final class HostLoadMeter {
    private var last: (at: Instant, cpu: Double)?
    /// The last second's load, 1 = every core busy; nil before two samples.
    private(set) var load: Double?
    /// The machine's cores.
    let cores: Int
    /// The rooms open on the host (kept by `RoomDirectory`): a room alone keeps its canvas.
    var roomsOpen = 0

    init(cores: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.cores = max(1, cores)
    }

    /// The load, sampled anew when a second has passed since the last sample.
    func sample(now: Instant, cpuSeconds: () -> Double = ProcessCPU.seconds) -> Double? {
        if let last, now - last.at < .seconds(1) { return load }
        let cpu = cpuSeconds()
        if let last { load = max(0, cpu - last.cpu) / (now - last.at).seconds / Double(cores) }
        last = (now, cpu)
        return load
    }
}
