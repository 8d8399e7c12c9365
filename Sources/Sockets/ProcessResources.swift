import Foundation

/// What this process holds of the machine now, from `/proc/self` (Linux), for `/metrics`: what a
/// long-running host could leak, and the open-file limit a busy one could reach (each peer on
/// ICE-TCP and each HTTP connection is a descriptor). Nil where `/proc` cannot be read.
public enum ProcessResources {
    /// Resident memory in bytes: `/proc/self/statm`'s second field, in pages.
    public static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Open file descriptors (sockets included): the entries of `/proc/self/fd`, less the one
    /// this reading opens.
    public static func openFileDescriptors() -> Int? {
        entries(of: "/proc/self/fd").map { max(0, $0 - 1) }
    }

    /// The soft limit on open file descriptors (`RLIMIT_NOFILE`, systemd's `LimitNOFILE`).
    public static func maxFileDescriptors() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        // RLIM_INFINITY is all ones (Glibc's macro does not import as a Swift constant).
        return limit.rlim_cur == rlim_t.max ? nil : Int(clamping: limit.rlim_cur)
    }

    /// Threads: the entries of `/proc/self/task`.
    public static func threads() -> Int? {
        entries(of: "/proc/self/task")
    }

    /// The names in a directory, `.` and `..` left out.
    private static func entries(of path: String) -> Int? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDots = withUnsafeBytes(of: entry.pointee.d_name) { name in
                name.first == UInt8(ascii: ".") && (name[1] == 0 || (name[1] == UInt8(ascii: ".") && name[2] == 0))
            }
            if !isDots { count += 1 }
        }
        return count
    }
}
