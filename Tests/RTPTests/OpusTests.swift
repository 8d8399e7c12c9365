import RTP
import Testing
import Wire

@Suite struct OpusTests {
    @Test func tocGivesModeBandwidthAndDurationAtFortyEightKilohertz() throws {
        let celt = try OpusPacketInfo.parse(Fixtures.opusPackets[0])
        #expect(celt.config == 31 && celt.mode == .celt && celt.bandwidth == .fullband && !celt.isStereo)
        #expect(celt.frameCount == 1 && celt.durationSamples == 960)

        #expect(try OpusPacketInfo.parse(Fixtures.opusPackets[1]).durationSamples == 1920)
        #expect(try OpusPacketInfo.parse(Fixtures.opusPackets[2]).frameCount == 2)
        #expect(try OpusPacketInfo.parse(Fixtures.opusPackets[3]).durationSamples == 2880)
        let silk = try OpusPacketInfo.parse(Fixtures.opusPackets[4])
        #expect(silk.mode == .silk && silk.bandwidth == .wideband && silk.frameCount == 3)
        #expect(silk.durationSamples == 2880)
    }

    @Test func everyConfigHasTheFrameSizeOfRFC6716Table2() throws {
        let expected = [480, 960, 1920, 2880, 480, 960, 1920, 2880, 480, 960, 1920, 2880, 480, 960, 480, 960,
                        120, 240, 480, 960, 120, 240, 480, 960, 120, 240, 480, 960, 120, 240, 480, 960]
        for config in 0..<32 {
            let info = try OpusPacketInfo.parse([UInt8(config) << 3 | 0x04, 0xAA])
            #expect(info.samplesPerFrame == expected[config], "config \(config)")
            #expect(info.isStereo)
        }
    }

    @Test func malformedPacketsGiveTypedErrors() {
        #expect(throws: OpusParseError.truncated(Truncated(needed: 1, offset: 0))) { try OpusPacketInfo.parse([]) }
        #expect(throws: OpusParseError.unequalFramesOfOddLength(3)) { try OpusPacketInfo.parse([0xF9, 1, 2, 3]) }
        #expect(throws: OpusParseError.frameLengthsExceedPacket) { try OpusPacketInfo.parse([0xFA, 9, 1, 2]) }
        #expect(throws: OpusParseError.truncated(Truncated(needed: 1, offset: 1))) { try OpusPacketInfo.parse([0xFB]) }
        #expect(throws: OpusParseError.zeroFrameCount) { try OpusPacketInfo.parse([0xFB, 0x00]) }
        // 60 ms SILK frames × 3 = 180 ms > 120 ms.
        #expect(throws: OpusParseError.durationTooLong(samples: 8640)) { try OpusPacketInfo.parse([0x1B, 0x03, 0, 0, 0]) }
        #expect(throws: OpusParseError.unevenConstantBitrateFrames) { try OpusPacketInfo.parse([0xFB, 0x02, 1, 2, 3]) }
        #expect(throws: OpusParseError.paddingExceedsPacket) { try OpusPacketInfo.parse([0xFB, 0x41, 0x05, 1]) }
        #expect(throws: OpusParseError.frameTooLong(1300)) {
            try OpusPacketInfo.parse([0xF8] + Array(repeating: 0, count: 1300))
        }
        #expect(throws: OpusParseError.frameLengthsExceedPacket) { try OpusPacketInfo.parse([0xFB, 0x82, 0x05, 1, 2]) }
    }

    @Test func twoByteFrameLengthsAndLongPaddingChains() throws {
        // Code 2 with a first frame of 4 * 2 + 252 = 260 bytes.
        let code2: [UInt8] = [0xFA, 252, 2] + Array(repeating: 0, count: 260 + 10)
        #expect(try OpusPacketInfo.parse(code2).frameCount == 2)
        // Code 3 CBR, one frame, padding 254 + 10 bytes.
        let padded: [UInt8] = [0xFB, 0x41, 255, 10] + Array(repeating: 0, count: 4 + 264)
        #expect(try OpusPacketInfo.parse(padded).frameCount == 1)
    }

    @Test func packetizerPassesThePacketAndAdvancesTheTimestamp() throws {
        var packetizer = OpusPacketizer(firstTimestamp: 0xFFFF_FE00)
        let first = try packetizer.packetize(Fixtures.opusPackets[0])
        #expect(first.payload == Fixtures.opusPackets[0] && first.timestamp == 0xFFFF_FE00)
        let second = try packetizer.packetize(Fixtures.opusPackets[3])
        #expect(second.timestamp == 0xFFFF_FE00 &+ 960)
        #expect(packetizer.nextTimestamp == 0xFFFF_FE00 &+ 960 &+ 2880)
        #expect(throws: OpusParseError.self) { try packetizer.packetize([]) }
        #expect(packetizer.nextTimestamp == 0xFFFF_FE00 &+ 3840)
    }
}
