import RTP
import Testing

@Suite struct UnwrapperTests {
    @Test func sequenceNumbersCountOnAcrossTheWrap() {
        var unwrapper = SequenceUnwrapper()
        #expect(unwrapper.unwrap(65_534) == 65_534)
        #expect(unwrapper.unwrap(65_535) == 65_535)
        #expect(unwrapper.unwrap(0) == 65_536)
        #expect(unwrapper.unwrap(1) == 65_537)
    }

    @Test func reorderingAcrossTheWrapLandsBeforeTheWrap() {
        var unwrapper = SequenceUnwrapper()
        #expect(unwrapper.unwrap(65_535) == 65_535)
        #expect(unwrapper.unwrap(2) == 65_538)
        #expect(unwrapper.unwrap(65_534) == 65_534)  // late packet from before the wrap
        #expect(unwrapper.unwrap(1) == 65_537)
        #expect(unwrapper.unwrap(3) == 65_539)
    }

    @Test func backwardJumpsBeforeTheFirstNumberGoNegative() {
        var unwrapper = SequenceUnwrapper()
        #expect(unwrapper.unwrap(2) == 2)
        #expect(unwrapper.unwrap(65_535) == -1)
        #expect(unwrapper.peek(5) == 5)
        #expect(unwrapper.lastUnwrapped == -1)
    }

    @Test func manyWrapsAccumulate() {
        var unwrapper = SequenceUnwrapper()
        var last: Int64 = 0
        for step in 0..<300_000 {
            last = unwrapper.unwrap(UInt16(truncatingIfNeeded: step * 7))
        }
        #expect(last == Int64(299_999 * 7))
    }

    @Test func timestampsCountOnAcrossTheWrapAndReorder() {
        var unwrapper = TimestampUnwrapper()
        #expect(unwrapper.unwrap(0xFFFF_F000) == 0xFFFF_F000)
        #expect(unwrapper.unwrap(0x0000_0BB8) == 0x1_0000_0BB8)
        #expect(unwrapper.unwrap(0xFFFF_FF00) == 0xFFFF_FF00)
        #expect(unwrapper.unwrap(0x0000_2000) == 0x1_0000_2000)
        #expect(unwrapper.unwrap(0x8000_2000) == 0x8000_2000)  // exactly half back counts as backward
    }
}
