import Testing
import Wire
import WireTesting

/// RFC 4571 framing as ICE-TCP uses it: whole messages out of a stream cut anywhere.
@Suite struct StreamFramingTests {
    @Test func messagesComeOutWholeHoweverTheStreamIsCut() throws {
        let messages: [[UInt8]] = [[1], Array(repeating: 7, count: 300), [], [9, 9, 9], Array(repeating: 3, count: 65_535)]
        var stream: [UInt8] = []
        for message in messages { stream += try #require(StreamFraming.frame(message)) }
        for cut in [1, 2, 3, 7, 1000, stream.count] {
            var framing = StreamFraming()
            var out: [[UInt8]] = []
            var index = 0
            while index < stream.count {
                out += framing.append(Array(stream[index..<min(stream.count, index + cut)]))
                index += cut
            }
            #expect(out == messages.filter { !$0.isEmpty }, "cut every \(cut) bytes")
            #expect(framing.buffered == 0)
        }
        #expect(StreamFraming.frame(Array(repeating: 0, count: 65_536)) == nil, "too long for a frame")
    }

    /// Mutated and truncated streams never trap, never yield a message longer than a frame can
    /// say, and never hold more than one frame's worth of bytes.
    @Test func mutatedAndTruncatedStreamsAreHarmless() {
        var mutator = Mutator(seed: 5)
        let frame = StreamFraming.frame(Array(repeating: 0x80, count: 200)) ?? []
        for round in 0..<2_000 {
            var framing = StreamFraming()
            let bytes = mutator.mutate(frame + frame)
            let out = framing.append(Array(bytes.prefix(round % (bytes.count + 1)))) + framing.append(Array(bytes.dropFirst(round % (bytes.count + 1))))
            #expect(out.allSatisfy { $0.count <= 65_535 && !$0.isEmpty })
            #expect(framing.buffered <= 65_537)
        }
    }
}
