import RTP
import Testing
import WireTesting

/// The rid header extensions (RFC 8852): rid syntax only (RFC 8851 §10), zero padding allowed
/// after it, anything else refused; mutated and truncated values never trap.
@Suite struct RTPStreamIDTests {
    @Test func ridsReadAndWrite() throws {
        #expect(try RTPStreamID(extensionData: Array("h".utf8)[...], id: 4).value == "h")
        #expect(try RTPStreamID(extensionData: Array("layer_2-x".utf8)[...] + [0, 0], id: 4).value == "layer_2-x")
        #expect(try RepairedRTPStreamID(extensionData: Array("q".utf8)[...], id: 5).value == "q")
        #expect(RTPStreamID("f").extensionData == Array("f".utf8))
        for bad: [UInt8] in [[], [0], Array("a b".utf8), Array("ü".utf8), Array("a;b".utf8), Array(repeating: 0x61, count: 256)] {
            #expect(throws: RTPParseError.self) { try RTPStreamID(extensionData: bad[...], id: 4) }
        }
    }

    @Test func mutatedAndTruncatedRidsNeverTrap() throws {
        var mutator = Mutator(seed: 0x21D)
        let original = Array("rid_Layer-3".utf8)
        for input in Mutator.truncations(of: original) + (0..<5_000).map({ _ in mutator.mutate(original) }) {
            if let rid = try? RTPStreamID(extensionData: input[...], id: 4) {
                #expect(try RTPStreamID(extensionData: rid.extensionData[...], id: 4) == rid)
            }
        }
    }
}
