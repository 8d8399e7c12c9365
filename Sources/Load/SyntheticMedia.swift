import Foundation
import Compositing
import Media
import RTP
import Wire

/// What a synthetic participant sends, from its index alone, so that every receiver knows what
/// to expect of every sender.
public enum SyntheticSignal {
    /// The most speakers whose tones are told apart.
    public static let mostSpeakers = 50

    /// A speaker's tone: 150 Hz apart from 400 Hz, to 7.75 kHz for 50 (Goertzel over 20 ms with a
    /// Hann window keeps neighbours 3 bins apart, below -30 dB; Opus at the host's 32 kbit/s
    /// keeps them all, `fiftySpeakersTonesAreToldApartThroughOpus`). Closer tones are not told
    /// apart through Opus: at 100 Hz, two tones' sum is heard at the one between them.
    public static func toneFrequency(index: Int) -> Double { 400 + 150 * Double(index % mostSpeakers) }

    /// A camera's colour: 16 hues around the U/V circle at radius 90, on two luma levels (the
    /// second ring's hues offset by half a step), repeating after 32.
    public static func colour(index: Int) -> YUVColor {
        let ring = (index / 16) % 2
        let angle = (Double(index % 16) + 0.5 * Double(ring)) * 2 * Double.pi / 16
        return YUVColor(y: ring == 0 ? 96 : 168, u: UInt8(128 + 90 * cos(angle)), v: UInt8(128 + 90 * sin(angle)))
    }

    /// Where a receiver samples the camera's colour, as fractions of the source picture: above the
    /// frame code and the moving square, away from where the host draws a name (bottom left).
    public static let colourPoint = (x: 0.5, y: 0.28)

    /// Frames in a picture loop: the frame code holds the index in the loop, so a receiver can
    /// tell which frame it sees; latencies up to the loop's length are unambiguous.
    public static let pictureLoopLength = 32
}

/// The frame code: the index of a frame in its loop drawn as 6 black or white blocks across the
/// middle of the picture (5 bits, most significant first, then even parity), big enough to read
/// after the host scales the picture into a small tile.
public enum FrameCode {
    static let bits = 6
    /// The blocks span x 0.30-0.70 (so a "fill" crop to a tall tile keeps them) and y 0.45-0.60.
    static let left = 0.30, right = 0.70, top = 0.45, bottom = 0.60
    static let white = YUVColor(y: 235, u: 128, v: 128)

    static func blockCentre(_ bit: Int) -> (x: Double, y: Double) {
        let width = (right - left) / Double(bits)
        return (left + width * (Double(bit) + 0.5), (top + bottom) / 2)
    }

    /// Draws `index` (0..<32) into `frame`.
    static func draw(_ index: Int, on frame: inout I420Frame) {
        let value = index & 0x1F
        let parity = value.nonzeroBitCount & 1
        let word = value << 1 | parity
        let blockWidth = Int(Double(frame.width) * (right - left) / Double(bits))
        for bit in 0..<bits {
            let on = (word >> (bits - 1 - bit)) & 1 == 1
            let x = Int(Double(frame.width) * left) + bit * blockWidth
            let rect = PixelRect(x: x & ~1, y: Int(Double(frame.height) * top) & ~1, width: blockWidth & ~1,
                                 height: Int(Double(frame.height) * (bottom - top)) & ~1)
            frame.fill(rect, with: on ? white : .black)
        }
    }

    /// Reads the code through `lumaAt`, which maps a point of the source picture to the luma the
    /// receiver sees there (nil where the tile crops it away). Nil when a block is unreadable or
    /// the parity does not hold (a picture caught between frames, or no code at all).
    static func read(_ lumaAt: (Double, Double) -> UInt8?) -> Int? {
        var word = 0
        for bit in 0..<bits {
            let centre = blockCentre(bit)
            guard let luma = lumaAt(centre.x, centre.y) else { return nil }
            // Between the two levels lies a blend: no clear bit.
            guard luma < 90 || luma > 160 else { return nil }
            word = word << 1 | (luma > 160 ? 1 : 0)
        }
        let value = word >> 1
        guard value.nonzeroBitCount & 1 == word & 1 else { return nil }
        return value
    }
}

/// A speaker's second of sound as Opus packets, encoded once and sent in a loop: 100 ms of
/// silence, then 900 ms of its tone. The tone's onset (packet `onsetPacket`) is what receivers
/// time for the audio latency.
public final class ToneLoop {
    public static let packetsPerLoop = 50
    static let onsetPacket = 5
    public let frequency: Double
    public let packets: [[UInt8]]
    /// Each packet's RFC 6464 level, sent with it as browsers do.
    public let levels: [AudioLevel]

    public init(frequency: Double) throws {
        self.frequency = frequency
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        var packets: [[UInt8]] = []
        var levels: [AudioLevel] = []
        for index in 0..<Self.packetsPerLoop {
            let samples: [Int16]
            if index < Self.onsetPacket {
                samples = [Int16](repeating: 0, count: AudioFrame.samplesPer20ms)
            } else {
                samples = (0..<AudioFrame.samplesPer20ms).map { offset in
                    let n = Double(index * AudioFrame.samplesPer20ms + offset)
                    return Int16(8000 * sin(2 * Double.pi * frequency * n / Double(AudioFrame.sampleRate)))
                }
            }
            let frame = AudioFrame(samples: samples)
            packets.append(try encoder.encode(frame))
            levels.append(AudioLevel(of: frame))
        }
        self.packets = packets
        self.levels = levels
    }

    /// The level sent with silence.
    public static let silentLevel = AudioLevel(voiceActivity: false, level: 127)

    /// Silence, for participants that do not speak: Opus's own encoding of digital zero.
    public static func silence() throws -> [UInt8] {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        var packet: [UInt8] = []
        // The first packets carry the encoder's start-up; the fifth is steady silence.
        for _ in 0..<5 { packet = try encoder.encode(.silence()) }
        return packet
    }
}

/// A camera's loop of pictures, encoded once and sent over and over: the participant's colour, a
/// white square that moves across the bottom (so inter frames carry change, as a camera's do),
/// and the frame code. Frame 0 is a key frame: a key frame request restarts the loop there.
final class PictureLoop {
    let frames: [EncodedVideoFrame]
    let colour: YUVColor

    init(colour: YUVColor, format: LoadOptions.VideoFormat) throws {
        self.colour = colour
        let bitrate = max(150_000, format.width * format.height * format.framesPerSecond / 15)
        let encoder = try VP8Encoder(.init(width: format.width, height: format.height, framesPerSecond: format.framesPerSecond,
                                           bitrate: bitrate, cpuUsed: -8, keyFrameInterval: 100_000))
        var frames: [EncodedVideoFrame] = []
        let length = SyntheticSignal.pictureLoopLength
        let square = max(8, format.height / 6) & ~1
        for index in 0..<length {
            var picture = I420Frame(width: format.width, height: format.height, color: colour)
            let travel = format.width - square
            let x = (travel * (index < length / 2 ? index : length - index) / (length / 2)) & ~1
            picture.fill(PixelRect(x: x, y: Int(Double(format.height) * 0.70) & ~1, width: square, height: square), with: FrameCode.white)
            FrameCode.draw(index, on: &picture)
            if index == 0 { encoder.requestKeyFrame() }
            let encoded = try encoder.encode(picture)
            guard let frame = encoded.last else { throw LoadSetupError.encoderGaveNoFrame(index) }
            frames.append(frame)
        }
        self.frames = frames
        let bytes = frames.reduce(0) { $0 + $1.data.count }
        bitsPerSecond = bytes * 8 * format.framesPerSecond / max(1, frames.count)
    }

    /// The loop's rate as sent (bit/s).
    let bitsPerSecond: Int
}

enum LoadSetupError: Error, CustomStringConvertible {
    case encoderGaveNoFrame(Int)
    var description: String {
        switch self {
        case .encoderGaveNoFrame(let index): "the VP8 encoder gave no frame for picture \(index) of a loop"
        }
    }
}

/// The level of chosen frequencies in 20 ms of sound: Goertzel with a Hann window, each as a
/// fraction of the frame's energy (1 for a pure tone at that frequency, about 1/k for each of k
/// equal tones), and the frame's RMS in dBFS.
struct ToneMeter {
    let frequencies: [Double]
    private let coefficients: [Double]
    private let window: [Double]
    private let normalization: Double

    init(frequencies: [Double], samples: Int = AudioFrame.samplesPer20ms) {
        self.frequencies = frequencies
        coefficients = frequencies.map { 2 * cos(2 * Double.pi * $0 / Double(AudioFrame.sampleRate)) }
        window = (0..<samples).map { 0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(samples - 1)) }
        let sum = window.reduce(0, +), sumOfSquares = window.reduce(0) { $0 + $1 * $1 }
        // For x = A cos(wn): |X|^2 ~ (A sum(w) / 2)^2 and sum((wx)^2) ~ A^2 sum(w^2) / 2.
        normalization = 2 * sumOfSquares / (sum * sum)
    }

    /// (dBFS, fraction of the energy at each frequency).
    func measure(_ samples: [Int16]) -> (level: Double, fractions: [Double]) {
        let count = min(samples.count, window.count)
        guard count > 0 else { return (-120, frequencies.map { _ in 0 }) }
        var windowed = [Double](repeating: 0, count: count)
        var energy = 0.0, raw = 0.0
        for index in 0..<count {
            let value = Double(samples[index]) / 32768
            raw += value * value
            windowed[index] = value * window[index]
            energy += windowed[index] * windowed[index]
        }
        let level = 10 * log10(max(raw / Double(count), 1e-12))
        guard energy > 1e-12 else { return (level, frequencies.map { _ in 0 }) }
        let fractions = coefficients.map { coefficient -> Double in
            var previous = 0.0, beforePrevious = 0.0
            for value in windowed {
                let current = value + coefficient * previous - beforePrevious
                beforePrevious = previous
                previous = current
            }
            let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
            return power * normalization / energy
        }
        return (level, fractions)
    }
}

/// Where a tone starts within two consecutive frames of sound, to the sample: the timing of a
/// tone onset is finer than the 20 ms frame it shows in.
///
/// The sound is shifted down by the tone's frequency (complex demodulation) and averaged over
/// one period of the speakers' 150 Hz spacing, which cancels every other speaker's tone; what
/// is left is the tone's envelope. A step's moving average crosses half its height where the
/// step is, so the onset is the first sample where the envelope reaches half of what it is at
/// the end of the second frame.
enum ToneOnset {
    /// The averaging length: one period of the 150 Hz between speakers' tones.
    static let window = AudioFrame.sampleRate / 150

    /// The onset's sample in `current`, counted from its start (negative: in `previous`); nil
    /// when the tone is not there at the end of `current` or rises nowhere.
    static func locate(frequency: Double, previous: [Int16], current: [Int16]) -> Int? {
        let samples = previous + current
        guard samples.count > 2 * window else { return nil }
        let step = 2 * Double.pi * frequency / Double(AudioFrame.sampleRate)
        var inPhase = [Double](repeating: 0, count: samples.count + 1)
        var quadrature = [Double](repeating: 0, count: samples.count + 1)
        for (n, sample) in samples.enumerated() {
            let value = Double(sample)
            inPhase[n + 1] = inPhase[n] + value * cos(step * Double(n))
            quadrature[n + 1] = quadrature[n] + value * sin(step * Double(n))
        }
        // The envelope of the window centred on `centre`.
        func envelope(_ centre: Int) -> Double {
            let start = centre - window / 2, end = start + window
            let i = inPhase[end] - inPhase[start], q = quadrature[end] - quadrature[start]
            return (i * i + q * q).squareRoot()
        }
        let last = samples.count - window / 2
        let full = envelope(last)
        // A tone of 1 % of full scale at least: below that it is Opus's noise.
        guard full > 0.01 * 32768 * Double(window) / 2 else { return nil }
        guard let onset = (window / 2...last).first(where: { envelope($0) >= full / 2 }), onset > window / 2 else { return nil }
        return onset - previous.count
    }
}
