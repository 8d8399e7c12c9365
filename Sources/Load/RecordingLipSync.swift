import Compositing
import Media
import Wire

/// Lip sync in a recording, as someone playing the file sees it: for each tone onset a speaker
/// sent while the recording ran, where the tone starts in the file's audio (to the sample) and
/// when the camera frame captured with it first shows in the speaker's tile; the offset is the
/// second less the first, less how far apart the two were captured (positive: lips late).
struct RecordingLipSync {
    /// A speaker's tone onset: its capture, in seconds from the recording's start on the
    /// sender's clock.
    struct Onset: Equatable {
        var speaker: Int
        var captured: Double
    }

    /// A camera frame a speaker sent: its capture (as above) and its frame code.
    struct Picture: Equatable {
        var captured: Double
        var code: Int
    }

    /// What the file gave: each measured onset's offset (ms) with the onset's capture, and how
    /// many onsets it did not find (its tone or its picture missing from the file).
    struct Result {
        var offsets: [(captured: Double, milliseconds: Double)] = []
        var unmatched = 0
        /// Of the unmatched: whose tone onset the file's audio did not show.
        var toneMissing = 0
        var offsetsMilliseconds: [Double] { offsets.map(\.milliseconds) }
    }

    /// Where in the layout each speaker's camera is, and the cameras' size.
    let tiles: [Int: TemplateDescription.Position]
    /// Every frame each speaker's camera sent while the recording ran.
    let pictures: [Int: [Picture]]
    let cameraSize: (width: Int, height: Int)
    let cameraFramesPerSecond: Int
    let frequencies: [Double]

    /// Searching for an onset: from a little before its capture (the file's start is only known
    /// to within a round trip) to what any latency would be.
    static let searchBefore = 0.1, searchAfter = 0.8
    /// Audio packets' times may stray from the samples before them by this much (10 ms).
    static let timingSlack = 480

    func measure(path: String, onsets: [Onset]) throws -> Result {
        let reader = try MediaFileReader(path: path)
        guard let video = reader.video, let audioInfo = reader.audio else { throw MediaContainerError.corrupt("the recording lacks a video or an audio track") }
        let opus = try OpusDecoder(channels: audioInfo.channels)
        let vp8 = try VP8Decoder()
        // The audio as one timeline from `audioStart`, mono; each packet placed at its time.
        var audio: [Int16] = []
        var audioStart: Double?
        // Per speaker, the frame codes its tile shows, with when each frame shows.
        var shown: [Int: [(at: Double, code: Int)]] = [:]
        let canvas = VideoSize(width: video.width, height: video.height)
        while let packet = try reader.nextPacket() {
            let at = packet.timestamp.seconds
            switch packet.kind {
            case .audio:
                guard let frame = try? opus.decode(packet.data) else { continue }
                let start = audioStart ?? at
                audioStart = start
                // WebM times are whole milliseconds: packets follow one another unless their
                // times say a real gap (more than 10 ms), which is silence.
                let position = Int(((at - start) * Double(AudioFrame.sampleRate)).rounded())
                guard position > audio.count - Self.timingSlack else { continue }  // out of order: not a timeline
                if position > audio.count + Self.timingSlack { audio += [Int16](repeating: 0, count: position - audio.count) }
                audio += audioInfo.channels == 2 ? Self.mono(frame.samples) : frame.samples
            case .video:
                guard let decoded = try? vp8.decode(packet.data), let picture = decoded as I420Frame?,
                      picture.width == video.width, picture.height == video.height else { continue }
                for (speaker, tile) in tiles {
                    let placement = TilePlacement(tile: tile.rect.pixels(in: canvas), source: cameraSize, contentMode: tile.contentMode)
                    guard let code = FrameCode.read({ u, v in placement.point(u, v).map { picture.pixel(x: $0.x, y: $0.y).y } }) else { continue }
                    if shown[speaker]?.last?.code != code { shown[speaker, default: []].append((at, code)) }
                }
            }
        }
        var result = Result()
        guard let audioStart else {
            result.unmatched = onsets.count
            return result
        }
        for onset in onsets {
            guard let heard = toneStart(of: onset.speaker, near: onset.captured, in: audio, from: audioStart) else {
                result.unmatched += 1
                result.toneMissing += 1
                continue
            }
            guard let (shownAt, captured) = firstPicture(of: onset.speaker, from: onset.captured, shownNear: heard, in: shown[onset.speaker] ?? []) else {
                result.unmatched += 1
                continue
            }
            result.offsets.append((onset.captured, (shownAt - heard - (captured - onset.captured)) * 1000))
        }
        return result
    }

    /// The first of `speaker`'s frames captured with the onset or after it (within half a frame)
    /// that shows in the file, near when the onset is heard: when it shows, and its capture. A
    /// frame code repeats (the camera's loop, restarted by key frame requests), so each shown
    /// code is taken for the frame of that code captured nearest the onset.
    private func firstPicture(of speaker: Int, from captured: Double, shownNear heard: Double,
                              in shown: [(at: Double, code: Int)]) -> (at: Double, captured: Double)? {
        let sent = pictures[speaker] ?? []
        let halfFrame = 0.5 / Double(max(1, cameraFramesPerSecond))
        for frame in shown where abs(frame.at - heard) <= Self.pictureWindow {
            // Of that code, the frame captured nearest the onset, and before it shows.
            let candidates = sent.filter { $0.code == frame.code && abs($0.captured - captured) <= Self.pictureWindow && $0.captured < frame.at }
            guard let picture = candidates.min(by: { abs($0.captured - captured) < abs($1.captured - captured) }) else { continue }
            if picture.captured >= captured - halfFrame { return (frame.at, picture.captured) }
        }
        return nil
    }

    /// Interleaved stereo as its channels' mean.
    private static func mono(_ samples: [Int16]) -> [Int16] {
        stride(from: 0, to: samples.count - 1, by: 2).map { index -> Int16 in
            let sum = Int(samples[index]) + Int(samples[index + 1])
            return Int16(sum / 2)
        }
    }

    /// How far from its onset a picture is looked for: under half the camera loop's restarts
    /// (9 frames at the least, 300 ms), over any offset a viewer would accept.
    static let pictureWindow = 0.14

    /// Where `speaker`'s tone starts (seconds in the file) after a quiet stretch, searched from
    /// just before `captured` in 20 ms windows 10 ms apart; nil when it does not.
    private func toneStart(of speaker: Int, near captured: Double, in audio: [Int16], from audioStart: Double) -> Double? {
        let frame = AudioFrame.samplesPer20ms, hop = frame / 2
        let meter = ToneMeter(frequencies: frequencies)
        var position = max(frame, Int(((captured - Self.searchBefore - audioStart) * Double(AudioFrame.sampleRate)).rounded()))
        let end = min(audio.count, Int(((captured + Self.searchAfter - audioStart) * Double(AudioFrame.sampleRate)).rounded()))
        var quiet = 0, tries = 0
        while position + frame <= end {
            let current = Array(audio[position..<(position + frame)])
            let (level, fractions) = meter.measure(current)
            let fraction = fractions[speaker]
            let isQuiet = fraction < 0.01 || level <= LoadParticipant.judgedLevel
            if quiet >= Self.quietWindows, !isQuiet {
                // After the quiet, the tone rises: find where, in this window or the next two.
                if fraction > 0.05, let sample = ToneOnset.locate(frequency: frequencies[speaker], previous: Array(audio[(position - frame)..<position]),
                                                                  current: current) {
                    return audioStart + Double(position + sample) / Double(AudioFrame.sampleRate)
                }
                tries += 1
                if tries < 3 {
                    position += hop
                    continue
                }
            }
            quiet = isQuiet ? quiet + 1 : 0
            tries = 0
            position += hop
        }
        return nil
    }

    /// Windows without the tone before its onset: 40 ms of quiet at least. The sender's 100 ms
    /// is often shortened by the host (it takes spare delay out of quiet first): at 5 % loss a
    /// rule of 50 ms found no onset at all. The cost: where the real onset is missed, a dropout
    /// in the tone (Opus concealing a lost packet of a pure tone) may pass for one.
    static let quietWindows = 3
}
