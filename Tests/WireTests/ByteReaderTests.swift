import Testing
import Wire

@Suite struct ByteReaderTests {
    @Test func readsNetworkOrderIntegers() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A])
        #expect(try reader.u8() == 0x01)
        #expect(try reader.u16() == 0x0203)
        #expect(try reader.u24() == 0x04_0506)
        #expect(try reader.u32() == 0x0708_090A)
        #expect(reader.isAtEnd)
    }

    @Test func readPastTheEndThrowsAndKeepsTheCursor() throws {
        var reader = ByteReader([0xAA, 0xBB, 0xCC])
        _ = try reader.u8()
        #expect(throws: Truncated(needed: 4, offset: 1)) { try reader.u32() }
        #expect(reader.offset == 1)
        #expect(throws: Truncated(needed: -1, offset: 1)) { try reader.bytes(-1) }
        #expect(try reader.u16() == 0xBBCC)
    }

    @Test func subReaderStopsAtItsEnd() throws {
        var reader = ByteReader([1, 2, 3, 4, 5])
        var inner = try reader.subReader(2)
        #expect(try inner.u16() == 0x0102)
        #expect(throws: Truncated.self) { try inner.u8() }
        #expect(try reader.u8() == 3)
    }

    @Test func writerRoundTripsWhatTheReaderReads() throws {
        var writer = ByteWriter()
        writer.u8(0xFE)
        writer.u16(0xBEEF)
        writer.u24(0x12_3456)
        writer.u32(0xDEAD_BEEF)
        writer.u64(0x0102_0304_0506_0708)
        writer.pad(to: 4)
        #expect(writer.count % 4 == 0)
        var reader = ByteReader(writer.bytes)
        #expect(try reader.u8() == 0xFE)
        #expect(try reader.u16() == 0xBEEF)
        #expect(try reader.u24() == 0x12_3456)
        #expect(try reader.u32() == 0xDEAD_BEEF)
        #expect(try reader.u64() == 0x0102_0304_0506_0708)
    }
}
