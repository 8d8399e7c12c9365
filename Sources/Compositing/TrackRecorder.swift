import Foundation
import Media
import Observation
import Wire

/// Why a recording could not start or go on.
public enum RecordingError: Error, Equatable, CustomStringConvertible {
    case nothingToRecord
    case container(MediaContainerError)
    case video(VP8CodecError)
    case audio(OpusCodecError)
    /// The file is no longer where it was written (it, or its folder, was removed or replaced):
    /// what would be written next could never be found.
    case fileRemoved(String)

    public var description: String {
        switch self {
        case .nothingToRecord: "a recording needs a video track, an audio track, or both"
        case .container(let error): "recording file: \(error)"
        case .video(let error): "recording video: \(error)"
        case .audio(let error): "recording audio: \(error)"
        case .fileRemoved(let path): "\(path) was removed (or its folder) while recording"
        }
    }

    /// The file could not be written.
    var isContainerError: Bool {
        switch self {
        case .container, .fileRemoved: true
        default: false
        }
    }
}

/// Records a video track and an audio track into one WebM file (VP8 + Opus), as the seed's
/// `TrackRecorder` does: made for its tracks, `startRecording(fileName:)` opens the file and
/// `stopRecording()` finishes it (`isRunning` between, observable); `init(path:…)` does both
/// first steps at once. Call `tick(now:)` at least as often as the video frame rate (the host's
/// loop, or a manual clock when composing offline): the library keeps no time of its own.
///
/// Time: video frames carry their capture time on the host's clock, so a frame's position in the
/// file is its time since the recording began; audio is placed from the instant its first frame
/// was mixed by the samples read since (48 kHz), which is the audio track's own clock. So they
/// stay in sync while the tracks do. The file is written in clusters of at most a second, so one
/// cut short by a crash plays up to about its last second.
///
/// A recorder records the tracks it was given: after a compositor restarts, its old output track
/// has ended, this recorder finishes, and a new one must be made for the new output.
///
/// A recorder made with `init(encodedVideo:audioTrack:)` encodes no video: it writes the VP8
/// frames it is given (`recordEncodedVideo`), from an encoder the caller runs anyway (the host's
/// composite encoder), so a recording costs no second encode.
public final class TrackRecorder: Observable {
    public struct Configuration: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var framesPerSecond: Int
        public var videoBitrate: Int
        public var audioBitrate: Int
        public var audioChannels: Int

        public init(width: Int = 1280, height: Int = 720, framesPerSecond: Int = 30, videoBitrate: Int = 2_000_000,
                    audioBitrate: Int = 64_000, audioChannels: Int = 1) {
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.videoBitrate = videoBitrate
            self.audioBitrate = audioBitrate
            self.audioChannels = audioChannels
        }
    }

    public let configuration: Configuration
    /// The file being written (or last written); nil before `startRecording`.
    public var path: String? { file?.path }
    /// Between `startRecording` and `stopRecording` (or the end of a track, or a file that
    /// could not be written). Observable: its changes notify (Observation).
    public private(set) var isRunning: Bool {
        get {
            observation.access(self, keyPath: \.isRunning)
            return running
        }
        set { observation.withMutation(of: self, keyPath: \.isRunning) { running = newValue } }
    }
    private var running = false
    private let observation = ObservationRegistrar()
    /// `isRunning`, by the name the host uses.
    public var isRecording: Bool { isRunning }
    public var videoFramesWritten: Int { file?.videoFramesWritten ?? 0 }
    public var audioPacketsWritten: Int { file?.audioPacketsWritten ?? 0 }
    /// Writes that failed (a frame or packet lost, the recording goes on).
    public var errors: [RecordingError] { file?.errors ?? [] }
    /// The instant the file's time zero stands for; nil before `startRecording`.
    public var start: Instant? { file?.start }

    private weak var videoTrack: VideoTrack?
    private weak var audioTrack: AudioTrack?
    /// Where its video comes from: a track of pictures it encodes, frames encoded elsewhere, or
    /// none. A track of these that is gone has ended.
    private let videoInput: VideoInput
    private let recordsAudio: Bool
    enum VideoInput { case none, track, encoded }
    private var file: FileRecording?

    /// A recorder of `videoTrack` and `audioTrack` (either may be nil, not both), not yet
    /// recording (seed 004). The tracks are held weakly: a freed one counts as ended.
    public init(videoTrack: VideoTrack?, audioTrack: AudioTrack?, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.videoTrack = videoTrack
        self.audioTrack = audioTrack
        videoInput = videoTrack != nil ? .track : .none
        recordsAudio = audioTrack != nil
    }

    /// A recorder of VP8 frames encoded elsewhere at `configuration`'s size (given by
    /// `recordEncodedVideo`) and of `audioTrack`, not yet recording.
    public init(encodedVideo configuration: Configuration, audioTrack: AudioTrack?) {
        self.configuration = configuration
        self.audioTrack = audioTrack
        videoInput = .encoded
        recordsAudio = audioTrack != nil
    }

    /// Whether it still waits for the key frame its encoded video must begin with.
    public var waitsForKeyFrame: Bool { isRunning && videoInput == .encoded && (file?.waitingForKeyFrame ?? false) }

    /// A recorder that records into `path` from `now` at once.
    public convenience init(path: String, videoTrack: VideoTrack?, audioTrack: AudioTrack?, configuration: Configuration = Configuration(),
                            now: Instant) throws(RecordingError) {
        self.init(videoTrack: videoTrack, audioTrack: audioTrack, configuration: configuration)
        try startRecording(fileName: path, now: now)
    }

    deinit { try? file?.writer.finish() }

    /// Opens `fileName` (a path; WebM whatever its extension) and records from `now` on (by
    /// default the monotonic clock's now: the clock the caller's ticks must then use too). A
    /// recorder records one file: it must be made again for another.
    public func startRecording(fileName: String, now: Instant = MonotonicClock().now()) throws(RecordingError) {
        guard file == nil else { return }
        guard videoInput != .none || recordsAudio else { throw .nothingToRecord }
        if videoInput == .track, (videoTrack?.readyState ?? .ended) == .ended { throw .nothingToRecord }
        if recordsAudio, (audioTrack?.readyState ?? .ended) == .ended { throw .nothingToRecord }
        file = try FileRecording(path: fileName, video: videoInput, audioReader: audioTrack?.makeReader(),
                                 configuration: configuration, now: now)
        isRunning = true
    }

    /// Encodes and writes what the tracks have produced since the last tick.
    public func tick(now: Instant) {
        guard isRunning, let file else { return }
        // A track ended, or freed by its owner (as a compositor's old output is when it starts
        // again), ends the recording: nothing more can come of it.
        if videoInput == .track, (videoTrack?.readyState ?? .ended) == .ended { return finishQuietly() }
        if recordsAudio, (audioTrack?.readyState ?? .ended) == .ended { return finishQuietly() }
        file.checkFileIsThere(now: now)
        if let videoTrack { file.recordVideo(videoTrack, now: now) }
        file.recordAudio(now: now)
        // The file cannot be written (a full disk, a failed device): it ends here, as complete as
        // it got, and `errors` says why; the tracks go on without it.
        if file.errors.contains(where: \.isContainerError) { finishQuietly() }
    }

    /// Writes one VP8 frame of a recorder made with `init(encodedVideo:audioTrack:)`: from the
    /// first key frame on (the caller asks its encoder for one when the recording starts), at the
    /// capture time of the picture it codes since the start (as its RTP timestamp is), so that it
    /// plays with the audio mixed at that instant. A frame of another size (the caller's encoder
    /// restarted at a new canvas, which begins at a key frame) goes on in the same file: a VP8
    /// key frame carries its size, and players (ffmpeg, browsers) follow it; the track's header
    /// keeps the size the recording began at. One of a new size that is not a key frame waits
    /// for one (`waitsForKeyFrame`).
    public func recordEncodedVideo(_ frame: EncodedVideoFrame) {
        guard isRunning, videoInput == .encoded, let file else { return }
        file.writeEncodedVideo(frame)
        if file.errors.contains(where: \.isContainerError) { finishQuietly() }
    }

    /// Finishes the file (cues and duration written). Idempotent.
    public func stopRecording() throws(RecordingError) {
        guard isRunning, let file else { return }
        isRunning = false
        do { try file.writer.finish() } catch { throw .container(error) }
    }

    /// `stopRecording()`, by the name the host uses.
    public func stop() throws(RecordingError) { try stopRecording() }

    private func finishQuietly() {
        do { try stopRecording() } catch { file?.errors.append(error) }
    }
}

/// One file being written: its encoders, the WebM writer, and where each track has got to.
private final class FileRecording {
    let path: String
    let configuration: TrackRecorder.Configuration
    let writer: WebMWriter
    private let videoEncoder: VP8Encoder?
    private let audioEncoder: OpusEncoder?
    private var audioReader: AudioTrackReader?
    /// The instant the file's time zero stands for.
    let start: Instant
    var videoFramesWritten = 0
    var audioPacketsWritten = 0
    var errors: [RecordingError] = []
    private var lastVideoTime: Instant?
    private var audioSamplesWritten: Int64 = 0
    /// Where the first audio frame is placed: the instant it was mixed, since the start.
    private var audioOrigin: Duration?
    /// Samples read but not yet encoded (less than a frame between ticks; interleaved).
    private var pendingAudio: [Int16] = []
    private(set) var waitingForKeyFrame = true
    /// The size of the last frame written of those encoded elsewhere.
    private var lastEncodedSize: VideoSize?
    /// The file as it was made (device and inode), and when it was last looked for.
    private var fileIdentity: (device: UInt64, inode: UInt64)?
    private var fileCheckedAt: Instant?

    init(path: String, video: TrackRecorder.VideoInput, audioReader: AudioTrackReader?, configuration: TrackRecorder.Configuration,
         now: Instant) throws(RecordingError) {
        self.path = path
        self.configuration = configuration
        self.audioReader = audioReader
        start = now
        if video == .track {
            do {
                videoEncoder = try VP8Encoder(VP8Encoder.Configuration(width: configuration.width, height: configuration.height,
                                                                       framesPerSecond: configuration.framesPerSecond,
                                                                       bitrate: configuration.videoBitrate, skipsSettledBlocks: true))
            } catch { throw .video(error) }
        } else {
            videoEncoder = nil
        }
        if audioReader != nil {
            do {
                // A file loses nothing: no in-band FEC. With it, libopus leans to its SILK and hybrid
                // modes to carry redundancy no player of a file uses, and took twice the CPU here
                // (`tessera compose` of 4 inputs: 14 % of the run in libopus, 6.7 % without).
                audioEncoder = try OpusEncoder(OpusEncoder.Configuration(channels: configuration.audioChannels, application: .audio,
                                                                         bitrate: configuration.audioBitrate, inbandFEC: false,
                                                                         expectedPacketLossPercent: 0))
            } catch { throw .audio(error) }
        } else {
            audioEncoder = nil
        }
        do {
            writer = try WebMWriter(
                path: path,
                video: video != .none ? WebMWriter.VideoTrack(width: configuration.width, height: configuration.height) : nil,
                audio: audioReader.map { _ in WebMWriter.AudioTrack(channels: configuration.audioChannels) })
        } catch { throw .container(error) }
        fileIdentity = Self.identity(of: path)
    }

    /// Once a second: the file still at its path. Writes to a file whose folder was removed
    /// succeed (the inode lives on) and are lost; the recording ends instead, and says why.
    func checkFileIsThere(now: Instant) {
        guard let fileIdentity, fileCheckedAt.map({ now - $0 >= .seconds(1) }) ?? true else { return }
        fileCheckedAt = now
        guard let current = Self.identity(of: path), current == fileIdentity else {
            return errors.append(.fileRemoved(path))
        }
    }

    private static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    func recordVideo(_ track: VideoTrack, now: Instant) {
        guard let videoEncoder, let frame = track.latestFrame(now: now) else { return }
        // A frame is written once, and only if it is newer than the last.
        if let lastVideoTime, frame.timestamp <= lastVideoTime { return }
        guard frame.timestamp >= start else { return }
        lastVideoTime = frame.timestamp
        let picture = frame.width == configuration.width && frame.height == configuration.height
            ? frame : frame.scaled(width: configuration.width, height: configuration.height)
        if waitingForKeyFrame { videoEncoder.requestKeyFrame() }
        do {
            for encoded in try videoEncoder.encode(picture) {
                if waitingForKeyFrame && !encoded.isKeyFrame { continue }
                waitingForKeyFrame = false
                try writer.writeVideo(encoded.data, isKeyFrame: encoded.isKeyFrame, timestamp: frame.timestamp - start)
                videoFramesWritten += 1
            }
        } catch let error as VP8CodecError {
            errors.append(.video(error))
        } catch let error as MediaContainerError {
            errors.append(.container(error))
        } catch {
            return
        }
    }

    /// A frame encoded elsewhere: written once, in capture order, from a key frame on (and from
    /// a key frame on again where the size changes: an inter frame of a new size would be
    /// decoded against a reference of the old one).
    func writeEncodedVideo(_ frame: EncodedVideoFrame) {
        guard frame.captureTime >= start, lastVideoTime.map({ frame.captureTime > $0 }) ?? true else { return }
        if let size = lastEncodedSize, size != VideoSize(width: frame.width, height: frame.height), !frame.isKeyFrame { waitingForKeyFrame = true }
        if waitingForKeyFrame && !frame.isKeyFrame { return }
        waitingForKeyFrame = false
        lastVideoTime = frame.captureTime
        lastEncodedSize = VideoSize(width: frame.width, height: frame.height)
        do {
            try writer.writeVideo(frame.data, isKeyFrame: frame.isKeyFrame, timestamp: frame.captureTime - start)
            videoFramesWritten += 1
        } catch {
            errors.append(.container(error))
        }
    }

    private func duration(ofSamples samples: Int64) -> Duration { .microseconds(samples * 1_000_000 / Int64(AudioFrame.sampleRate)) }

    /// The audio read at each tick, placed where it was mixed: from the instant the first frame
    /// was mixed on, each sample follows the one before, and where mixing stopped for a while
    /// (the host's loop stalled and its audio clock skipped ticks, its grid restarting off the
    /// old one) exactly the silence heard goes in, to the sample, or the audio would play early
    /// from there on (a stall of 125 ms once left it 25 ms early for good). Samples go through
    /// `pendingAudio` and leave it as 20 ms Opus frames.
    func recordAudio(now: Instant) {
        guard let audioEncoder, audioReader != nil else { return }
        var frames: [AudioFrame] = []
        while let frame = audioReader?.nextFrame(channels: configuration.audioChannels) { frames.append(frame) }
        guard let first = frames.first else { return }
        let channels = configuration.audioChannels, frameSamples = first.samplesPerChannel
        let reading = Int64(frames.count) * Int64(frameSamples)
        // Where the frames read now start: the last was mixed for `now`.
        let begin = now - start + duration(ofSamples: Int64(frameSamples)) - duration(ofSamples: reading)
        if audioOrigin == nil { audioOrigin = max(.zero, begin) }
        let placed = audioSamplesWritten + Int64(pendingAudio.count / channels)
        let due = Int64(((begin - (audioOrigin ?? .zero)).seconds * Double(AudioFrame.sampleRate)).rounded())
        if due > placed { pendingAudio += [Int16](repeating: 0, count: Int(due - placed) * channels) }
        for frame in frames { pendingAudio += frame.samples }
        let frameLength = frameSamples * channels
        while pendingAudio.count >= frameLength {
            let frame = AudioFrame(channels: channels, samples: Array(pendingAudio.prefix(frameLength)))
            pendingAudio.removeFirst(frameLength)
            let timestamp = (audioOrigin ?? .zero) + duration(ofSamples: audioSamplesWritten)
            audioSamplesWritten += Int64(frameSamples)
            do {
                try writer.writeAudio(try audioEncoder.encode(frame), timestamp: timestamp)
                audioPacketsWritten += 1
            } catch let error as OpusCodecError {
                errors.append(.audio(error))
            } catch let error as MediaContainerError {
                errors.append(.container(error))
            } catch {
                return
            }
        }
    }
}
