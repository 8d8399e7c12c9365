import Testing
@testable import Media

/// The receiver's pending audio keeps silence as a count: what it plays out must be the same
/// samples, in the same order, as if the zeros had been written.
@Suite struct PendingAudioTests {
    private let zeros = { (count: Int) in [Int16](repeating: 0, count: count) }

    @Test func samplesAndSilencePlayOutInOrderWhateverTheCut() {
        var pending = PendingAudio()
        pending.append(.samples([1, 2, 3]))
        pending.append(.silence(4))
        pending.append(.samples([5, 6]))
        pending.append(.silence(3))
        #expect(pending.count == 12)
        var played: [Int16] = []
        for n in [2, 5, 1, 4] { played += pending.removeFirst(n, zeros: zeros) }
        #expect(played == [1, 2, 3, 0, 0, 0, 0, 5, 6, 0, 0, 0])
        #expect(pending.count == 0)
    }

    @Test func silenceAloneIsHandedOutAsTheKeptZeros() {
        var pending = PendingAudio()
        pending.append(.silence(960))
        pending.append(.silence(960))
        let kept = [Int16](repeating: 0, count: 960)
        var handedOut = 0
        let tick = pending.removeFirst(960) { count in handedOut += 1; return count == 960 ? kept : [Int16](repeating: 0, count: count) }
        #expect(tick == kept && handedOut == 1 && pending.count == 960)
    }

    @Test func aStretchSeesTheSilenceWrittenOut() {
        var pending = PendingAudio()
        pending.append(.samples([7]))
        pending.append(.silence(2))
        let seen = pending.withSamples { samples -> [Int16] in
            defer { samples.removeLast() }
            return samples
        }
        #expect(seen == [7, 0, 0])
        #expect(pending.removeFirst(2, zeros: zeros) == [7, 0] && pending.count == 0)
    }
}
