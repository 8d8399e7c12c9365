import Wire

/// The tests' seeded generator: the same seed gives the same run everywhere, so a failing
/// mutation can be reproduced from its seed and index.
public typealias SeededGenerator = SplitMix64

/// Makes hostile variants of valid messages for robustness tests: bit flips, byte overwrites with
/// boundary values, truncations, insertions, deletions, duplicated spans and length-field abuse.
public struct Mutator: Sendable {
    public var generator: SeededGenerator
    public init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    private static let interesting: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0x40, 0x20, 0x10]

    public mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var bytes = input
        let rounds = Int.random(in: 1...4, using: &generator)
        for _ in 0..<rounds { mutateOnce(&bytes) }
        return bytes
    }

    private mutating func mutateOnce(_ bytes: inout [UInt8]) {
        guard !bytes.isEmpty else {
            bytes.append(UInt8.random(in: 0...255, using: &generator))
            return
        }
        let at = Int.random(in: 0..<bytes.count, using: &generator)
        switch Int.random(in: 0..<8, using: &generator) {
        case 0: bytes[at] ^= 1 << UInt8.random(in: 0...7, using: &generator)
        case 1: bytes[at] = Self.interesting.randomElement(using: &generator) ?? 0
        case 2: bytes[at] = UInt8.random(in: 0...255, using: &generator)
        case 3: bytes.removeLast(Int.random(in: 1...bytes.count, using: &generator))  // truncate
        case 4: bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: at)
        case 5: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...8, using: &generator)))
        case 6:  // duplicate a span: repeats attributes, extensions, RTCP blocks, SDP lines
            let end = min(bytes.count, at + Int.random(in: 1...64, using: &generator))
            bytes.insert(contentsOf: bytes[at..<end], at: Int.random(in: 0...bytes.count, using: &generator))
        default:  // a 16-bit big-endian field set to a boundary value: lengths and counts
            guard at + 1 < bytes.count else { return }
            let value: UInt16 = [0, 1, 0x7FFF, 0x8000, 0xFFFF, UInt16(bytes.count), UInt16(bytes.count &+ 4)]
                .randomElement(using: &generator) ?? 0
            bytes[at] = UInt8(value >> 8)
            bytes[at + 1] = UInt8(value & 0xFF)
        }
    }

    /// Every prefix of `input`, shortest first: the truncations a parser must refuse cleanly.
    public static func truncations(of input: [UInt8]) -> [[UInt8]] {
        (0..<input.count).map { Array(input[..<$0]) }
    }
}
