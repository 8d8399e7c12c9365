import Media
import Testing
import Wire
@testable import Load

/// Decode once, check many: participants whose mix packets are the same bytes share one decode;
/// a stream that parts from the others goes on from the right decoder state.
@Suite struct SharedMixDecodingTests {
    static let frequencies = [400.0, 700.0]

    /// `count` packets of an Opus stream of `frequencies`, from its own encoder.
    static func stream(_ frequencies: [Double], count: Int, from start: Int = 0) throws -> [[UInt8]] {
        let encoder = try OpusEncoder(.init(channels: 1, bitrate: 32_000, complexity: 5))
        return try (start..<(start + count)).map { try encoder.encode(AudioFrame(samples: ToneMeterTests.tone(frequencies, frame: $0))) }
    }

    @Test func aCopiedDecoderGoesOnExactlyAsTheOriginal() throws {
        let packets = try Self.stream([440], count: 20)
        let original = try OpusDecoder(channels: 1)
        for packet in packets[..<10] { _ = try original.decode(packet) }
        let copy = try original.copy()
        for packet in packets[10...] {
            #expect(try copy.decode(packet).samples == original.decode(packet).samples)
        }
    }

    @Test func identicalStreamsShareOneDecodeAndAPartedStreamGoesOnFromItsPast() throws {
        let decoding = SharedMixDecoding(frequencies: Self.frequencies)
        // Everyone hears 400 Hz for 10 packets; then a and b stay on that encoder while c is
        // moved to another, which mixes 400 and 700 Hz (as the host moves a listener).
        let common = try Self.stream([400], count: 20)
        let other = try Self.stream([400, 700], count: 10, from: 10)
        var streams: [String: SharedMixDecoding.Key?] = ["a": nil, "b": nil, "c": nil]
        var heard: [String: [SharedMixDecoding.Heard]] = [:]
        let start = Instant(nanoseconds: 1_000_000_000)
        for index in 0..<20 {
            let now = start + .milliseconds(20 * index)
            for name in ["a", "b", "c"] {
                let payload = name == "c" && index >= 10 ? other[index - 10] : common[index]
                let result = try #require(decoding.hear(payload, after: streams[name] ?? nil, now: now))
                streams[name] = result.key
                heard[name, default: []].append(result.heard)
            }
        }
        // 20 packets of the common stream and 10 of c's: each decoded once.
        #expect(decoding.decodes == 30)
        #expect(decoding.shared == 30)
        // c hears what a decoder of its own whole stream hears.
        let own = try OpusDecoder(channels: 1)
        let meter = ToneMeter(frequencies: Self.frequencies)
        for (index, packet) in (common[..<10] + other).enumerated() {
            let (level, fractions) = meter.measure(try own.decode(packet).samples)
            let shared = try #require(heard["c"]?[index])
            #expect(shared.level == level && shared.fractions == fractions, "packet \(index)")
        }
        #expect((heard["c"]?.last?.fractions[1] ?? 0) > 0.2, "c hears 700 Hz")
        #expect((heard["a"]?.last?.fractions[1] ?? 1) < 0.01, "a does not")
    }

    @Test func undecodablePacketsAreRefusedAndForgotten() throws {
        let decoding = SharedMixDecoding(frequencies: Self.frequencies)
        #expect(decoding.hear([], after: nil, now: Instant(nanoseconds: 0)) == nil)
        let packets = try Self.stream([400], count: 3)
        #expect(decoding.hear(packets[0], after: nil, now: Instant(nanoseconds: 0)) != nil)
    }
}
