private import CLinux

/// The calling thread's scheduling priority (its nice value: Linux keeps one per thread).
public enum ThreadPriority {
    /// Makes the calling thread `delta` nicer than it is (at most 19), so that under contention
    /// the threads that must keep time (the media loop) run first. The new nice value, or nil
    /// when the system refused.
    @discardableResult
    public static func reniceCurrentThread(by delta: Int) -> Int? {
        var nice: Int32 = 0
        return tessera_renice_current_thread(Int32(clamping: delta), &nice) == 0 ? Int(nice) : nil
    }
}
