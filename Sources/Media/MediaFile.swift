#if canImport(Glibc)
import Glibc
#endif

/// A media file opened for reading, through stdio's buffer: the byte source of the IVF and Ogg
/// demuxers, and the first bytes that tell a container.
final class MediaFile {
    private var stream: UnsafeMutablePointer<FILE>?
    let path: String

    /// Opens `path` for reading; a missing, unreadable or directory path is `.fileNotFound`.
    init(path: String) throws(MediaContainerError) {
        self.path = path
        guard let stream = fopen(path, "rb") else { throw .file("open", path: path, opening: true) }
        var status = stat()
        guard fstat(fileno(stream), &status) == 0, status.st_mode & S_IFMT != S_IFDIR else {
            fclose(stream)
            throw .fileNotFound(path: path)
        }
        self.stream = stream
    }

    deinit { close() }

    func close() {
        if let stream { fclose(stream) }
        stream = nil
    }

    /// Up to `count` bytes; fewer only at the end of the file.
    func read(count: Int) throws(MediaContainerError) -> [UInt8] {
        guard let stream, count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { fread($0.baseAddress, 1, count, stream) }
        if read < count {
            if ferror(stream) != 0 { throw .file("read", path: path, code: EIO) }
            bytes.removeLast(count - read)
        }
        return bytes
    }

    /// Reads into `buffer` up to its size; the count read, 0 at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaContainerError) -> Int {
        guard let stream, let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let read = fread(base, 1, buffer.count, stream)
        if read == 0, ferror(stream) != 0 { throw .file("read", path: path, code: EIO) }
        return read
    }

    func seek(to offset: Int) throws(MediaContainerError) {
        guard let stream, fseeko(stream, off_t(offset), SEEK_SET) == 0 else { throw .file("seek", path: path) }
    }
}
