private import CLinux
import Foundation

/// Starts a thread that carries `name` where operators look (`top -H`, `ps -L`, `perf`,
/// `/proc/PID/task/TID/comm`): Foundation's `Thread.name` set before `start()` did not reach the
/// kernel here, so every thread of the host showed as "tessera". Linux keeps 15 bytes of it.
public func startNamedThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
    let kernelName = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
    let thread = Thread {
        _ = tessera_name_this_thread(kernelName)
        body()
    }
    thread.name = kernelName
    thread.start()
}
