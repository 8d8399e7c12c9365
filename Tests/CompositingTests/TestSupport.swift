import Compositing
import Foundation
import Media
import Testing
import Wire

/// Solid colours that stay far apart through scaling and chroma subsampling.
enum Palette {
    static let red = YUVColor(red: 220, green: 30, blue: 30)
    static let green = YUVColor(red: 30, green: 200, blue: 60)
    static let blue = YUVColor(red: 30, green: 60, blue: 220)
    static let yellow = YUVColor(red: 230, green: 220, blue: 40)
    static let magenta = YUVColor(red: 200, green: 40, blue: 200)
    static let background = YUVColor(hex: "#101010")!
}

/// A tone of `frequency` Hz at `amplitude` (fraction of full scale), 20 ms frames, continuous
/// in phase from frame to frame.
struct ToneSource {
    let frequency: Double
    let amplitude: Double
    private var sample = 0

    init(frequency: Double, amplitude: Double = 0.25) {
        self.frequency = frequency
        self.amplitude = amplitude
    }

    mutating func nextFrame(timestamp: Instant = Instant(nanoseconds: 0)) -> AudioFrame {
        var samples = [Int16](repeating: 0, count: AudioFrame.samplesPer20ms)
        for index in samples.indices {
            let phase = 2 * Double.pi * frequency * Double(sample + index) / Double(AudioFrame.sampleRate)
            samples[index] = Int16((amplitude * 32_767 * sin(phase)).rounded())
        }
        sample += AudioFrame.samplesPer20ms
        return AudioFrame(samples: samples, timestamp: timestamp)
    }
}

/// The amplitude (fraction of full scale) of `frequency` in `samples` (Goertzel over a Hann
/// window, so that a 20 ms frame's other tones do not leak into the bin).
func toneLevel(_ frequency: Double, in samples: [Int16]) -> Double {
    let n = samples.count
    let coefficient = 2 * cos(2 * Double.pi * frequency / Double(AudioFrame.sampleRate))
    var (previous, beforePrevious) = (0.0, 0.0)
    for (index, sample) in samples.enumerated() {
        let window = 0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(n - 1))
        let value = window * Double(sample) / 32_768 + coefficient * previous - beforePrevious
        beforePrevious = previous
        previous = value
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return 2 * sqrt(max(0, power)) / (Double(n - 1) / 2)  // the window's sum
}

/// A `width` × `height` picture of one colour.
func solidFrame(_ color: YUVColor, width: Int = 320, height: Int = 240) -> I420Frame {
    I420Frame(width: width, height: height, color: color)
}

/// A label renderer that remembers what it was asked to draw.
final class RecordingLabelRenderer: TileLabelRenderer {
    var labels: [(text: String, kind: TileLabelKind, tile: PixelRect)] = []

    func drawLabel(_ text: String, kind: TileLabelKind, in tile: PixelRect, on canvas: inout I420Frame) {
        labels.append((text, kind, tile))
    }
}

extension AudioTrackReader {
    /// The next 20 ms frame, or a test failure when none is waiting.
    mutating func next() throws -> AudioFrame {
        let frame = nextFrame()
        return try #require(frame)
    }
}
