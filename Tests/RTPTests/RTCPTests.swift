import RTP
import Testing
import Wire

@Suite struct RTCPTests {
    @Test func senderReportWithBlockAndSDESCNAME() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.senderReportAndSDES)
        #expect(packets.count == 2)
        guard case .senderReport(let report) = packets[0], case .sourceDescription(let sdes) = packets[1] else {
            Issue.record("unexpected \(packets)")
            return
        }
        #expect(report.ssrc == 0x1122_3344)
        #expect(report.ntpTimestamp == 0xE72B_8C00_8000_0000)
        #expect(report.rtpTimestamp == 90_000)
        #expect(report.packetCount == 100 && report.octetCount == 10_000)
        #expect(report.reports == [ReceptionReport(
            ssrc: 0x5566_7788, fractionLost: 16, cumulativeLost: -2, extendedHighestSequenceNumber: 0x1_0005,
            jitter: 32, lastSenderReport: 0x8C00_8000, delaySinceLastSenderReport: 0x1_0000)])
        #expect(sdes.chunks.count == 1)
        #expect(sdes.chunks[0].cname == "user@host")
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.senderReportAndSDES)
    }

    @Test func receiverReportAndGoodbyeWithReason() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.receiverReportAndGoodbye)
        #expect(packets == [
            .receiverReport(ReceiverReport(ssrc: 1)),
            .goodbye(Goodbye(sources: [1], reasonText: "bye")),
        ])
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.receiverReportAndGoodbye)
    }

    @Test func sdesChunksArePaddedToThirtyTwoBits() throws {
        let sdes = SourceDescription(chunks: [
            SDESChunk(source: 1, cname: "abc"),  // 4 + 5 + 1 null = 10 -> 12
            SDESChunk(source: 2, items: [SDESItem(type: .cname, text: "ab"), SDESItem(type: .tool, text: "x")]),
        ])
        let bytes = try RTCPPacket.sourceDescription(sdes).serialized()
        #expect(bytes.count % 4 == 0)
        #expect(Array(bytes[4..<16]) == [0, 0, 0, 1, 1, 3, 0x61, 0x62, 0x63, 0, 0, 0])
        #expect(try RTCPPacket.parseCompound(bytes) == [.sourceDescription(sdes)])
    }

    @Test func nackExpandsIntoLostSequenceNumbers() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.nack)
        guard case .nack(let nack) = packets.first else {
            Issue.record("not a NACK: \(packets)")
            return
        }
        #expect(nack.senderSSRC == 1 && nack.mediaSSRC == 2)
        #expect(nack.pairs == [NACKPair(packetID: 100, lostBitmask: 0b101)])
        #expect(nack.lostSequenceNumbers == [100, 101, 103])
        let built = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [100, 101, 103])
        #expect(try RTCPPacket.nack(built).serialized() == Fixtures.nack)
    }

    @Test func nackBuiltFromLostNumbersAcrossTheWrapGroupsBySixteen() {
        let lost: [UInt16] = [65_530, 65_535, 0, 9, 10, 30]
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: lost)
        #expect(nack.pairs.map(\.packetID) == [65_530, 30])
        #expect(nack.lostSequenceNumbers == lost)
    }

    @Test func pliAndFIRWithSequenceNumber() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.pliAndFIR)
        #expect(packets == [
            .pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 2)),
            .fullIntraRequest(FullIntraRequest(senderSSRC: 1, entries: [FIREntry(ssrc: 2, sequenceNumber: 7)])),
        ])
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.pliAndFIR)
    }

    @Test func rembFromChromeCaptureReadsBitrateAndSSRCs() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.chromeREMB)
        #expect(packets == [.receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(
            senderSSRC: 1, bitrate: 8_927_168, ssrcs: [1_215_622_422]))])
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.chromeREMB)
    }

    @Test func rembRoundsLargeBitratesDownToEighteenBitMantissa() throws {
        let remb = ReceiverEstimatedMaximumBitrate(senderSSRC: 1, bitrate: 1_000_000_007, ssrcs: [5, 6])
        guard case .receiverEstimatedMaximumBitrate(let parsed) = try RTCPPacket.parseCompound(
            try RTCPPacket.receiverEstimatedMaximumBitrate(remb).serialized()).first
        else {
            Issue.record("not a REMB")
            return
        }
        #expect(parsed.bitrate <= 1_000_000_007 && parsed.bitrate > 999_990_000)
        #expect(parsed.ssrcs == [5, 6])
    }

    @Test func rembWhoseMantissaOverflowsIsAnError() {
        var bytes = Fixtures.chromeREMB
        bytes[17] = 0xFF  // exponent 63
        #expect(throws: RTCPParseError.bitrateOverflow) { try RTCPPacket.parseCompound(bytes) }
    }

    @Test func transportCCWithRunLengthAndBothStatusVectors() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.transportCC)
        guard case .transportCC(let feedback) = packets.first else {
            Issue.record("not transport-cc: \(packets)")
            return
        }
        #expect(feedback.baseSequenceNumber == 100)
        #expect(feedback.referenceTimeMilliseconds == 1024)
        #expect(feedback.feedbackPacketCount == 5)
        let expected: [Int16?] = [4, 4, 4, 4, 4, 4, 4, -16, nil, 8, nil, nil, 0, 256, 4, 4]
        #expect(feedback.receiveDeltas == expected)
        #expect(feedback.packets[8] == TransportCCPacketStatus(sequenceNumber: 108, receiveDelta: nil))
        #expect(feedback.packets[7].receiveDeltaMicroseconds == -4000)
        // The greedy chunker picks the same chunks as the fixture, padding included.
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.transportCC)
    }

    @Test func transportCCBuiltFromPacketListFillsGapsAsLost() throws {
        let statuses = [
            TransportCCPacketStatus(sequenceNumber: 65_534, receiveDelta: 10),
            TransportCCPacketStatus(sequenceNumber: 1, receiveDelta: 300),
            TransportCCPacketStatus(sequenceNumber: 20, receiveDelta: -1),
        ]
        let feedback = TransportCCFeedback(
            senderSSRC: 1, mediaSSRC: 2, referenceTime: 7, feedbackPacketCount: 1, packets: statuses)
        #expect(feedback.baseSequenceNumber == 65_534)
        #expect(feedback.receiveDeltas.count == 23)
        #expect(feedback.packets.filter(\.isReceived) == statuses)
        let reparsed = try RTCPPacket.parseCompound(try RTCPPacket.transportCC(feedback).serialized())
        #expect(reparsed == [.transportCC(feedback)])
    }

    @Test func transportCCLongRunsUseRunLengthChunks() throws {
        var deltas = [Int16?](repeating: nil, count: 9000)
        deltas[8999] = 1000
        let feedback = TransportCCFeedback(
            senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 0, referenceTime: 0, feedbackPacketCount: 0,
            receiveDeltas: deltas)
        let bytes = try RTCPPacket.transportCC(feedback).serialized()
        #expect(bytes.count <= 40)
        #expect(try RTCPPacket.parseCompound(bytes) == [.transportCC(feedback)])
    }

    @Test func transportCCReservedSymbolIsAnError() {
        var bytes = Fixtures.transportCC
        bytes[20] = 0x60  // run length chunk with symbol 3
        #expect(throws: RTCPParseError.reservedPacketStatusSymbol) { try RTCPPacket.parseCompound(bytes) }
    }

    @Test func unknownTypesAndFormatsAreKeptNotRejected() throws {
        let packets = try RTCPPacket.parseCompound(Fixtures.applicationDefined + Fixtures.nack)
        #expect(packets.first == .unknown(type: 204, format: 0, body: [0, 0, 0, 1, 0x6E, 0x61, 0x6D, 0x65]))
        #expect(packets.count == 2)
        #expect(try RTCPPacket.serializeCompound(packets) == Fixtures.applicationDefined + Fixtures.nack)

        var rtpfb = Fixtures.nack
        rtpfb[0] = 0x83  // FMT 3: TMMBR, not interpreted
        #expect(try RTCPPacket.parseCompound(rtpfb) == [.unknown(type: 205, format: 3, body: Array(rtpfb[4...]))])
        var afb = Fixtures.chromeREMB
        afb[12] = 0x58  // not 'REMB'
        #expect(try RTCPPacket.parseCompound(afb) == [.unknown(type: 206, format: 15, body: Array(afb[4...]))])
    }

    @Test func lengthPastTheDatagramVersionAndCountsAreTypedErrors() {
        var long = Fixtures.nack
        long[3] = 0x04
        #expect(throws: RTCPParseError.lengthExceedsDatagram(offset: 0, declared: 20, available: 16)) {
            try RTCPPacket.parseCompound(long)
        }
        var version = Fixtures.nack
        version[0] = 0x41
        #expect(throws: RTCPParseError.unsupportedVersion(1)) { try RTCPPacket.parseCompound(version) }
        var count = Fixtures.receiverReportAndGoodbye
        count[0] = 0x82  // RR claims two blocks in one word
        #expect(throws: RTCPParseError.countExceedsLength(packetType: 201, count: 2)) {
            try RTCPPacket.parseCompound(count)
        }
        var bye = Fixtures.receiverReportAndGoodbye
        bye[8] = 0x83  // BYE claims three sources
        #expect(throws: RTCPParseError.countExceedsLength(packetType: 203, count: 3)) {
            try RTCPPacket.parseCompound(bye)
        }
        #expect(throws: RTCPParseError.truncated(Truncated(needed: 4, offset: 0))) { try RTCPPacket.parseCompound([]) }
        #expect(throws: RTCPParseError.truncated(Truncated(needed: 4, offset: 16))) {
            try RTCPPacket.parseCompound(Fixtures.nack + [0x80])
        }
    }

    @Test func paddedPacketsHaveTheirPaddingStripped() throws {
        // RR with 4 bytes of padding (P bit), then a PLI.
        let bytes: [UInt8] = [0xA0, 0xC9, 0x00, 0x02, 0, 0, 0, 9, 0, 0, 0, 4] + Fixtures.pliAndFIR.prefix(12)
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets.first == .receiverReport(ReceiverReport(ssrc: 9)))
        #expect(packets.count == 2)
        var bad = bytes
        bad[11] = 9
        #expect(throws: RTCPParseError.invalidPadding(9)) { try RTCPPacket.parseCompound(bad) }
    }

    @Test func everyPacketTypeRoundTrips() throws {
        let block = ReceptionReport(ssrc: 3, fractionLost: 1, cumulativeLost: -8_388_608, extendedHighestSequenceNumber: 2,
                                    jitter: 3, lastSenderReport: 4, delaySinceLastSenderReport: 5)
        let packets: [RTCPPacket] = [
            .senderReport(SenderReport(ssrc: 1, ntpTimestamp: 2, rtpTimestamp: 3, packetCount: 4, octetCount: 5,
                                       reports: [block, block], profileExtension: [1, 2, 3])),
            .receiverReport(ReceiverReport(ssrc: 1, reports: [block])),
            .sourceDescription(SourceDescription(chunks: [SDESChunk(source: 1, items: [
                SDESItem(type: .cname, text: "c"), SDESItem(type: .name, text: "Åsa"), SDESItem(type: .privateExtension, value: [0xFF]),
            ])])),
            .goodbye(Goodbye(sources: [1, 2, 3])),
            .goodbye(Goodbye(sources: [], reason: [])),
            .nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [1, 17, 18, 40])),
            .pictureLossIndication(PictureLossIndication(senderSSRC: 5, mediaSSRC: 6)),
            .fullIntraRequest(FullIntraRequest(senderSSRC: 1, entries: [FIREntry(ssrc: 2, sequenceNumber: 255),
                                                                      FIREntry(ssrc: 3, sequenceNumber: 0)])),
            .receiverEstimatedMaximumBitrate(ReceiverEstimatedMaximumBitrate(senderSSRC: 1, bitrate: 262_143, ssrcs: [])),
            .transportCC(TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequenceNumber: 9, referenceTime: 0xFF_FFFF,
                                             feedbackPacketCount: 255, receiveDeltas: [nil, 255, 256, -32_768, 0])),
            .unknown(type: 207, format: 31, body: [1, 2, 3, 4, 5]),
        ]
        let bytes = try RTCPPacket.serializeCompound(packets)
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == packets)
        for packet in packets {
            #expect(try RTCPPacket.parseCompound(try packet.serialized()) == [packet])
        }
    }

    @Test func oversizedCountsRefuseToSerialize() {
        let goodbye = RTCPPacket.goodbye(Goodbye(sources: Array(repeating: 1, count: 32)))
        #expect(throws: RTCPSerializeError.countTooLarge(packetType: 203, count: 32)) { try goodbye.serialized() }
        let item = RTCPPacket.sourceDescription(SourceDescription(chunks: [SDESChunk(source: 1, items: [
            SDESItem(type: .note, value: Array(repeating: 0x41, count: 256)),
        ])]))
        #expect(throws: RTCPSerializeError.textTooLong(256)) { try item.serialized() }
    }
}
