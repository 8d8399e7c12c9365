import Compositing
import Foundation
import Media
import Wire

/// `tessera compose`: recordings composed offline into one WebM. Each input file is decoded into
/// a video and an audio track, named by its file name without extension (`alice` for
/// `alice.webm`); the template's positions name them as participants. The same VideoCompositor,
/// AudioCompositor and TrackRecorder the host uses run on a manual clock, as fast as the CPU
/// allows. The output holds the composed video and the mix of every input's audio.
public final class OfflineComposer {
    public enum ComposeError: Error, CustomStringConvertible {
        case template(String)
        case input(path: String, MediaContainerError)
        case decoder(String)
        case recording(RecordingError)

        public var description: String {
            switch self {
            case .template(let why): "layout: \(why)"
            case .input(let path, let error): "\(path): \(error)"
            case .decoder(let why): "decoder: \(why)"
            case .recording(let error): "\(error)"
            }
        }
    }

    /// What a composition produced.
    public struct Summary: Sendable {
        public var duration: Duration
        public var videoFramesComposed: Int
        public var audioPacketsWritten: Int
        public var inputFramesDecoded: Int
        /// Wall time spent.
        public var elapsed: Duration
        /// The part of it spent decoding VP8 and in the recorder (encoding VP8 and Opus, muxing):
        /// what the codecs cost, against the compositing itself.
        public var codecTime: Duration
        /// Damage met in the inputs, one line each: an input damaged past reading on ended there,
        /// one damaged inside lost the cluster (at most a second) the damage was in. The output
        /// is whole either way.
        public var warnings: [String] = []
    }

    /// One input file: its reader, decoders and the tracks it feeds.
    private final class Input {
        let name: String
        let path: String
        let reader: MediaFileReader
        var videoDecoder: VP8Decoder?
        var audioDecoder: OpusDecoder?
        let videoTrack: VideoTrack
        let audioTrack: AudioTrack
        var pending: EncodedPacket?
        var finished = false
        /// The time of the last packet read.
        var lastTime = Duration.zero

        init(path: String) throws(ComposeError) {
            self.path = path
            name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            do { reader = try MediaFileReader(path: path) } catch { throw .input(path: path, error) }
            videoTrack = VideoTrack(id: "\(name)/camera")
            audioTrack = AudioTrack(id: "\(name)/microphone")
            do {
                if reader.video != nil { videoDecoder = try VP8Decoder() }
                if let audio = reader.audio { audioDecoder = try OpusDecoder(channels: audio.channels) }
            } catch { throw .decoder("\(path): \(error)") }
        }
    }

    private let description: TemplateDescription
    private let inputs: [Input]
    private let outputPath: String

    /// The canvas a preset composes on (a template names its own).
    public static let presetCanvas = TemplateDescription.Canvas(width: 1280, height: 720, fps: 30)

    /// Reads the layout (the same JSON as `PUT /v1/rooms/{room}/layout`: a template, or a preset
    /// applied to the inputs in the order given) and opens every input; nothing is written yet.
    public init(templateJSON: Data, inputPaths: [String], outputPath: String) throws(ComposeError) {
        let request: LayoutRequest
        do { request = try LayoutRequest(json: Array(templateJSON)) } catch { throw .template(error.description) }
        guard !inputPaths.isEmpty else { throw .template("no input files") }
        var inputs: [Input] = []
        for path in inputPaths { inputs.append(try Input(path: path)) }
        var participants: [String] = []
        for input in inputs where !participants.contains(input.name) { participants.append(input.name) }
        description = request.template(participants: participants, canvas: Self.presetCanvas)
        let names = Set(participants)
        for (index, position) in description.positions.enumerated() where !names.contains(position.participant) {
            throw .template("`positions[\(index)].participant`: \"\(position.participant)\" names no input (inputs: \(names.sorted().joined(separator: ", ")))")
        }
        self.inputs = inputs
        self.outputPath = outputPath
    }

    /// Composes the whole of the inputs into the output file: as fast as the CPU allows, or, with
    /// `realtime`, no faster than the media plays (for watching a file grow, or testing a cut).
    public func run(realtime: Bool = false) throws(ComposeError) -> Summary {
        let wallClock = ContinuousClock()
        let began = wallClock.now
        var codecTime = Duration.zero
        let clock = ManualClock(start: .milliseconds(1_000))
        let start = clock.now()
        let canvas = description.canvas
        let video = VideoCompositor(id: "compose", canvasSize: canvas.size, fps: canvas.fps,
                                    background: canvas.backgroundColor ?? .black)
        let audio = AudioCompositor(id: "compose")
        audio.autoOutputSilentBuffer = true
        video.start()
        audio.start()
        for input in inputs { audio.addTrack(input.audioTrack) }
        // A participant may come as one WebM or as an IVF (video) and an Ogg (audio) of one name.
        let positions = description.positions.compactMap { position -> VideoTrackPositionInfo? in
            let named = inputs.filter { $0.name == position.participant }
            guard let input = named.first(where: { $0.videoDecoder != nil }) ?? named.first else { return nil }
            return VideoTrackPositionInfo(track: input.videoTrack, normalizedRect: position.rect, contentMode: position.contentMode,
                                          mirror: position.mirror ?? false, rotation: position.videoRotation, label: input.name,
                                          debugOverlay: description.showsDebugOverlay(position))
        }
        video.setTemplate(CompositeTemplate(positions: positions))
        guard let videoOutput = video.outputTrack, let audioOutput = audio.outputTrack else {
            throw .decoder("the compositors made no output tracks")
        }
        let recorder: TrackRecorder
        do {
            recorder = try TrackRecorder(path: outputPath, videoTrack: videoOutput, audioTrack: audioOutput,
                                         configuration: .init(width: canvas.width, height: canvas.height, framesPerSecond: canvas.fps),
                                         now: start)
        } catch { throw .recording(error) }

        var nextVideo = start, nextAudio = start
        var framesDecoded = 0
        var lastMediaTime = Duration.zero
        var warnings: [String] = []
        while true {
            let now = min(nextVideo, nextAudio)
            clock.set(now)
            if realtime {
                let ahead = (now - start) - (wallClock.now - began)
                if ahead > .zero { Thread.sleep(forTimeInterval: ahead.seconds) }
            }
            // Feed every packet due by now into its track, timed by the file's clock.
            var anyLeft = false
            for input in inputs where !input.finished {
                anyLeft = true
                while true {
                    if input.pending == nil {
                        do {
                            input.pending = try input.reader.nextPacket()
                        } catch .corrupt(let why) {
                            // Damage nothing readable follows: the input ends here, the others go on.
                            warnings.append("\(input.path): \(why): the input ends at \(input.lastTime)")
                        } catch {
                            throw .input(path: input.path, error)
                        }
                        if input.pending == nil { input.finished = true; break }
                    }
                    guard let packet = input.pending, start + packet.timestamp <= now else { break }
                    input.pending = nil
                    input.lastTime = packet.timestamp
                    lastMediaTime = max(lastMediaTime, packet.timestamp)
                    let at = start + packet.timestamp
                    switch packet.kind {
                    case .video:
                        // The picture stays in the decoder's buffer, lent to the track, and is
                        // drawn from there at the next tick: this loop decodes and draws in turn.
                        guard let decoder = input.videoDecoder else { break }
                        let began = wallClock.now
                        let decoded = (try? decoder.decodeLending(packet.data, timestamp: at)) ?? false
                        codecTime += wallClock.now - began
                        if decoded {
                            input.videoTrack.pushLent(by: decoder, now: at)
                            framesDecoded += 1
                        }
                    case .audio:
                        if let frame = try? input.audioDecoder?.decode(packet.data, timestamp: at) { input.audioTrack.push(frame, now: at) }
                    }
                }
            }
            if now == nextAudio {
                audio.tick(now: now)
                nextAudio = nextAudio + AudioCompositor.tickInterval
            }
            if now == nextVideo {
                video.tick(now: now)
                nextVideo = nextVideo + video.tickInterval
            }
            let began = wallClock.now
            recorder.tick(now: now)
            codecTime += wallClock.now - began
            // Done once every input is read and its last moment has been composed.
            if !anyLeft && now - start > lastMediaTime + video.tickInterval { break }
        }
        do { try recorder.stop() } catch { throw .recording(error) }
        return Summary(duration: clock.now() - start, videoFramesComposed: recorder.videoFramesWritten,
                       audioPacketsWritten: recorder.audioPacketsWritten, inputFramesDecoded: framesDecoded,
                       elapsed: wallClock.now - began, codecTime: codecTime,
                       warnings: warnings + inputs.compactMap { input in input.reader.skippedDamage.map { "\(input.path): \($0)" } })
    }
}
