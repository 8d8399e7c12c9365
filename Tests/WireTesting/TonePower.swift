import Foundation

/// The power of `frequency` in `samples` (Goertzel), normalized by length.
public func tonePower(_ samples: [Int16], frequency: Double, sampleRate: Double = 48_000) -> Double {
    let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
    var previous = 0.0, beforePrevious = 0.0
    for sample in samples {
        let current = Double(sample) + coefficient * previous - beforePrevious
        beforePrevious = previous
        previous = current
    }
    let power = previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious
    return power / Double(max(1, samples.count))
}
