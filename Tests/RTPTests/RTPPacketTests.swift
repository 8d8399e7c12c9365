import RTP
import Testing
import Wire

@Suite struct RTPPacketTests {
    @Test func parsesTheFixedHeaderFields() throws {
        let packet = try RTPPacket.parse(Fixtures.plainRTP)
        #expect(packet.marker)
        #expect(packet.payloadType == 96)
        #expect(packet.sequenceNumber == 0x1234)
        #expect(packet.timestamp == 0xDEAD_BEEF)
        #expect(packet.ssrc == 0x1122_3344)
        #expect(packet.csrcs.isEmpty)
        #expect(packet.extensions.isEmpty)
        #expect(Array(packet.payload) == [1, 2, 3])
        #expect(try packet.serialized() == Fixtures.plainRTP)
    }

    @Test func stripsPaddingReportsItsLengthAndWritesItBack() throws {
        let packet = try RTPPacket.parse(Fixtures.rtpWithEverything)
        #expect(packet.paddingLength == 4)
        #expect(Array(packet.payload) == [0xAA, 0xBB])
        #expect(packet.csrcs == [10, 11])
        #expect(packet.payloadType == 111)
        #expect(!packet.marker)
        let bytes = try packet.serialized()
        #expect(bytes.suffix(4) == [0, 0, 0, 4])
        #expect(try RTPPacket.parse(bytes) == packet)
    }

    @Test func oneByteExtensionsSkipPaddingBetweenElements() throws {
        let packet = try RTPPacket.parse(Fixtures.rtpWithEverything)
        #expect(packet.extensions.map(\.id) == [1, 2, 3])
        #expect(packet.extensions.map { Array($0.data) } == [[0x30], [0x95], [0x01, 0x02]])
    }

    @Test func twoByteExtensionsAllowLargeIDsAndEmptyData() throws {
        let packet = try RTPPacket.parse(Fixtures.rtpTwoByteExtensions)
        #expect(packet.extensions.map(\.id) == [20, 1])
        #expect(packet.extensions.map { Array($0.data) } == [[0x12, 0x34], []])
        #expect(try packet.serialized() == Fixtures.rtpTwoByteExtensions)
        #expect(Array(packet.payload) == [0x55])
    }

    @Test func serializationPicksTheOneByteFormWhenEveryElementFits() throws {
        var packet = RTPPacket(payloadType: 100, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [9])
        packet.extensions = [RTPHeaderExtension(id: 14, data: Array(repeating: 7, count: 16))]
        let bytes = try packet.serialized()
        #expect(bytes[12] == 0xBE && bytes[13] == 0xDE)
        #expect(bytes[16] == 0xEF)  // id 14, length 16 - 1
        #expect(try RTPPacket.parse(bytes) == packet)

        packet.extensions.append(RTPHeaderExtension(id: 3, data: Array(repeating: 1, count: 17)))
        let twoByte = try packet.serialized()
        #expect(twoByte[12] == 0x10 && twoByte[13] == 0x00)
        #expect(try RTPPacket.parse(twoByte) == packet)
    }

    @Test func oneByteIDFifteenStopsParsing() throws {
        let bytes: [UInt8] = [
            0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2,
            0xBE, 0xDE, 0x00, 0x02, 0x10, 0x41, 0xF3, 0x20, 0xAA, 0x00, 0x00, 0x00,
        ]
        let packet = try RTPPacket.parse(bytes)
        #expect(packet.extensions == [RTPHeaderExtension(id: 1, data: [0x41])])
    }

    @Test func extensionElementRunningPastItsBlockIsAnError() {
        let bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xBE, 0xDE, 0x00, 0x01, 0x13, 0x01, 0x02, 0x03]
        #expect(throws: RTPParseError.headerExtensionOverrun(id: 1)) { try RTPPacket.parse(bytes) }
    }

    @Test func otherProfileExtensionBlocksAreKeptAsReceived() throws {
        let bytes: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0x12, 0x34, 0x00, 0x01, 1, 2, 3, 4, 0xEE]
        let packet = try RTPPacket.parse(bytes)
        #expect(packet.otherProfileExtension == RTPOtherProfileExtension(profile: 0x1234, data: [1, 2, 3, 4]))
        #expect(try packet.serialized() == bytes)
    }

    @Test func malformedHeadersGiveTypedErrors() {
        #expect(throws: RTPParseError.truncated(Truncated(needed: 12, offset: 0))) { try RTPPacket.parse([0x80, 0x60]) }
        #expect(throws: RTPParseError.unsupportedVersion(1)) {
            try RTPPacket.parse([0x40] + Array(Fixtures.plainRTP.dropFirst()))
        }
        // Padding count larger than what follows the header.
        #expect(throws: RTPParseError.invalidPadding(9)) {
            try RTPPacket.parse([0xA0] + Array(Fixtures.plainRTP.dropFirst().dropLast()) + [9])
        }
        // Padding count of zero.
        #expect(throws: RTPParseError.invalidPadding(0)) {
            try RTPPacket.parse([0xA0] + Array(Fixtures.plainRTP.dropFirst().dropLast()) + [0])
        }
        // CSRC count beyond the bytes.
        #expect(throws: RTPParseError.truncated(Truncated(needed: 60, offset: 12))) {
            try RTPPacket.parse([0x8F] + Array(Fixtures.plainRTP.dropFirst()))
        }
    }

    @Test func invalidValuesRefuseToSerialize() {
        var packet = RTPPacket(payloadType: 128, sequenceNumber: 0, timestamp: 0, ssrc: 0)
        #expect(throws: RTPSerializeError.invalidPayloadType(128)) { try packet.serialized() }
        packet.payloadType = 0
        packet.csrcs = Array(repeating: 1, count: 16)
        #expect(throws: RTPSerializeError.tooManyCSRCs(16)) { try packet.serialized() }
        packet.csrcs = []
        packet.extensions = [RTPHeaderExtension(id: 0, data: [1])]
        #expect(throws: RTPSerializeError.invalidHeaderExtensionID(0)) { try packet.serialized() }
        packet.extensions = [RTPHeaderExtension(id: 1, data: Array(repeating: 0, count: 256))]
        #expect(throws: RTPSerializeError.headerExtensionTooLong(id: 1)) { try packet.serialized() }
    }

    @Test func typedExtensionsReadAndWriteUnderTheNegotiatedIDs() throws {
        let map = HeaderExtensionMap([.mid: 1, .audioLevel: 2, .transportSequenceNumber: 3, .absoluteSendTime: 4,
                                      .videoOrientation: 5])
        let parsed = try RTPPacket.parse(Fixtures.rtpWithEverything)
        #expect(try parsed.headerExtension(MediaIdentification.self, in: map) == MediaIdentification("0"))
        #expect(try parsed.headerExtension(AudioLevel.self, in: map) == AudioLevel(voiceActivity: true, level: 21))
        #expect(try parsed.headerExtension(TransportSequenceNumber.self, in: map) == TransportSequenceNumber(0x0102))
        #expect(try parsed.headerExtension(AbsoluteSendTime.self, in: map) == nil)

        var packet = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1)
        packet.setHeaderExtension(AbsoluteSendTime(rawValue: 0x12_3456), in: map)
        packet.setHeaderExtension(VideoOrientation(backFacingCamera: true, horizontalFlip: false, rotation: .degrees270),
                                  in: map)
        packet.setHeaderExtension(MediaIdentification("video-1"), in: map)
        packet.setHeaderExtension(TransportSequenceNumber(7), in: map)
        packet.setHeaderExtension(TransportSequenceNumber(8), in: map)  // replaces
        let setWithoutNegotiation = packet.setHeaderExtension(AudioLevel(voiceActivity: false, level: 3), in: HeaderExtensionMap())
        #expect(!setWithoutNegotiation)
        let reparsed = try RTPPacket.parse(try packet.serialized())
        #expect(try reparsed.headerExtension(AbsoluteSendTime.self, in: map)?.rawValue == 0x12_3456)
        #expect(try reparsed.headerExtension(VideoOrientation.self, in: map)?.rotation.degrees == 270)
        #expect(try reparsed.headerExtension(VideoOrientation.self, in: map)?.backFacingCamera == true)
        #expect(try reparsed.headerExtension(MediaIdentification.self, in: map)?.value == "video-1")
        #expect(try reparsed.headerExtension(TransportSequenceNumber.self, in: map)?.value == 8)
        #expect(reparsed.extensions.count == 4)
    }

    @Test func typedExtensionsRejectWrongShapes() {
        let map = HeaderExtensionMap([.transportSequenceNumber: 3, .mid: 1])
        var packet = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1)
        packet.setHeaderExtensionData(id: 3, [1, 2, 3])
        packet.setHeaderExtensionData(id: 1, [0xFF, 0xFE])
        #expect(throws: RTPParseError.invalidHeaderExtensionValue(id: 3)) {
            try packet.headerExtension(TransportSequenceNumber.self, in: map)
        }
        #expect(throws: RTPParseError.invalidHeaderExtensionValue(id: 1)) {
            try packet.headerExtension(MediaIdentification.self, in: map)
        }
    }

    @Test func absoluteSendTimeIsSixPointEighteenFixedPoint() {
        #expect(AbsoluteSendTime(microseconds: 1_500_000).rawValue == 0x06_0000)
        #expect(AbsoluteSendTime(microseconds: 65_000_000).rawValue == 1 << 18)  // wraps at 64 s
        #expect(AbsoluteSendTime(ntpTimestamp: 0x0000_0002_8000_0000).seconds == 2.5)
    }

    @Test func headerExtensionMapFindsStandardAndCustomURIs() {
        var map = HeaderExtensionMap([.mid: 4, "urn:example:custom": 9])
        #expect(map.midID == 4)
        #expect(map.id(for: "urn:example:custom") == 9)
        #expect(map.uri(for: 9) == "urn:example:custom")
        map.set(.mid, id: 0)
        #expect(map.id(for: .mid) == nil)
    }

    @Test func muxedRTCPIsToldFromRTPBySecondByte() {
        #expect(MuxedPacketKind.classify(Fixtures.plainRTP) == .rtp)
        for fixture in Fixtures.rtcp { #expect(MuxedPacketKind.classify(fixture) == .rtcp) }
        #expect(MuxedPacketKind.classify([0x80, 0x7F, 0, 0]) == .rtp)  // PT 127
        #expect(MuxedPacketKind.classify([0x00, 0x01, 0, 0]) == nil)  // STUN
        #expect(MuxedPacketKind.classify([0x80]) == nil)
    }
}
