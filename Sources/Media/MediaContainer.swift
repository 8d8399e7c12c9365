#if canImport(Glibc)
import Glibc
#endif
import Wire

/// What an encoded packet in a recording holds. Tessera records and reads only VP8 and Opus.
public enum PacketKind: String, Sendable, Hashable, CustomStringConvertible {
    case video  // VP8
    case audio  // Opus, 48 kHz

    public var description: String { rawValue }
}

/// One encoded frame (VP8) or packet (Opus) with its time in the recording.
public struct EncodedPacket: Sendable, Equatable {
    public var kind: PacketKind
    public var data: [UInt8]
    /// Presentation time since the recording's start. An Opus stream's first packet may begin
    /// slightly before zero: by its pre-skip, the encoder's look-ahead that decoders discard.
    public var timestamp: Duration
    /// A VP8 key frame; every Opus packet is one.
    public var isKeyFrame: Bool

    public init(kind: PacketKind, data: [UInt8], timestamp: Duration, isKeyFrame: Bool) {
        self.kind = kind
        self.data = data
        self.timestamp = timestamp
        self.isKeyFrame = isKeyFrame
    }
}

/// Why a recording could not be written or a media file could not be read. Nothing in the
/// container code traps on bad input or a failing disk: it throws one of these.
public enum MediaContainerError: Error, Equatable, CustomStringConvertible {
    /// The file to read does not exist (or is not readable).
    case fileNotFound(path: String)
    /// The file is a container other than WebM/Matroska, IVF or Ogg (named by its first bytes
    /// when they are a common one's).
    case unsupportedFormat(String)
    /// The file holds neither a VP8 nor an Opus stream (the codecs it does hold).
    case unsupportedCodec(String)
    /// The bytes are not a valid container: the parser's reason.
    case corrupt(String)
    /// A writer asked for something WebM or Tessera cannot record (no stream, a size out of range).
    case invalidConfiguration(String)
    /// A packet of a kind the recording has no stream for.
    case noSuchStream(PacketKind)
    /// An empty packet: neither VP8 nor Opus has one.
    case emptyPacket(PacketKind)
    /// A video recording must start with a key frame, or its first seconds cannot be decoded.
    case firstVideoFrameIsNotKey
    /// A packet earlier than the one before it in the same stream (or before the recording's
    /// start). The packet is refused and the file stays valid; the caller may go on writing.
    case timestampWentBackwards(PacketKind, previous: Duration, given: Duration)
    /// Written to after `finish()`.
    case finished
    /// A file operation failed: which, its errno and `strerror`'s text.
    case io(operation: String, code: Int32, message: String)

    public var description: String {
        switch self {
        case .fileNotFound(let path): "no such media file: \(path)"
        case .unsupportedFormat(let name): "unsupported container \(name): Tessera reads WebM, IVF and Ogg"
        case .unsupportedCodec(let codecs): "no VP8 or Opus stream (found: \(codecs))"
        case .corrupt(let reason): "corrupt media file: \(reason)"
        case .invalidConfiguration(let reason): "cannot record: \(reason)"
        case .noSuchStream(let kind): "the recording has no \(kind) stream"
        case .emptyPacket(let kind): "empty \(kind) packet"
        case .firstVideoFrameIsNotKey: "a recording's first video frame must be a key frame"
        case .timestampWentBackwards(let kind, let previous, let given):
            "\(kind) timestamp \(given) is before the previous one, \(previous)"
        case .finished: "the recording is already finished"
        case .io(let operation, let code, let message): "\(operation) failed: \(message) (\(code))"
        }
    }
}

extension MediaContainerError {
    /// A file operation that failed with `code` (an errno): a missing, unreadable or directory
    /// path opened for reading is `.fileNotFound`, anything else `.io` with `strerror`'s text.
    static func file(_ operation: String, path: String, code: Int32 = errno, opening: Bool = false) -> MediaContainerError {
        if opening, [ENOENT, EACCES, EISDIR, ENOTDIR].contains(code) { return .fileNotFound(path: path) }
        return .io(operation: "\(operation) \(path)", code: code, message: String(cString: strerror(code)))
    }
}
