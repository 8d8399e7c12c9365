import Foundation
import Media

/// 20 ms of a sine at `frequency`, continuing from frame `index`.
public func toneFrame(_ frequency: Double, frame index: Int, amplitude: Double = 8000) -> AudioFrame {
    AudioFrame(channels: 1, samples: (0..<AudioFrame.samplesPer20ms).map { offset in
        let t = Double(index * AudioFrame.samplesPer20ms + offset) / 48_000
        return Int16(amplitude * sin(2 * Double.pi * frequency * t))
    })
}

/// The three test tones and which member sends which.
public let roomTones: [String: Double] = ["a": 440, "b": 660, "c": 880]
