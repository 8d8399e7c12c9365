import RTP
import Testing
import Wire
import WireTesting

@Suite struct VP8PayloadTests {
    @Test func minimalDescriptorIsOneByte() throws {
        let (descriptor, length) = try VP8PayloadDescriptor.parse(Fixtures.vp8Payloads[0][...])
        #expect(length == 1)
        #expect(descriptor == VP8PayloadDescriptor(startOfPartition: true))
        #expect(descriptor.isStartOfFrame)
        #expect(descriptor.serialized() == [0x10])
    }

    @Test func descriptorWithEveryOptionalField() throws {
        let payload = Fixtures.vp8Payloads[1]
        let (descriptor, length) = try VP8PayloadDescriptor.parse(payload[...])
        #expect(length == 6)
        #expect(descriptor == VP8PayloadDescriptor(
            nonReference: true, startOfPartition: true, partitionIndex: 0, pictureID: .long(0x0123),
            tl0PictureIndex: 0x45, temporalLayer: VP8TemporalLayer(index: 2, layerSync: true), keyIndex: 7))
        #expect(descriptor.serialized() == Array(payload.prefix(6)))
    }

    @Test func sevenBitPictureIDAndKeyIndexWithoutTemporalLayer() throws {
        let bytes: [UInt8] = [0x81, 0x90, 0x7F, 0x1F, 0xEE]
        let (descriptor, length) = try VP8PayloadDescriptor.parse(bytes[...])
        #expect(length == 4)
        #expect(descriptor.pictureID == .short(127) && descriptor.keyIndex == 31 && descriptor.temporalLayer == nil)
        #expect(descriptor.partitionIndex == 1 && !descriptor.isStartOfFrame)
        #expect(descriptor.serialized() == Array(bytes.prefix(4)))
    }

    @Test func truncatedDescriptorsAreTypedErrors() {
        #expect(throws: VP8ParseError.truncated(Truncated(needed: 1, offset: 0))) { try VP8PayloadDescriptor.parse([]) }
        #expect(throws: VP8ParseError.truncated(Truncated(needed: 1, offset: 3))) {
            try VP8PayloadDescriptor.parse([0x80, 0x80, 0x80])
        }
    }

    @Test func keyFrameHeaderGivesSizeAndScale() throws {
        let header = try VP8FrameHeader.parse(Fixtures.keyFrameStart[...])
        #expect(header.isKeyFrame && header.showFrame && header.firstPartitionSize == 1000)
        #expect(header.keyFrameSize == VP8KeyFrameSize(width: 640, height: 480))
        // 1280×720 with scale codes 1 and 2, by hand: tag 0x10 (key, shown, size 0).
        let bytes: [UInt8] = [0x10, 0x00, 0x00, 0x9D, 0x01, 0x2A, 0x00, 0x45, 0xD0, 0x82]
        let scaled = try VP8FrameHeader.parse(bytes[...])
        #expect(scaled.keyFrameSize == VP8KeyFrameSize(width: 1280, height: 720, horizontalScale: 1, verticalScale: 2))
        #expect(scaled.serialized() == bytes)
    }

    @Test func deltaFramesHaveThePBitSetAndNoSize() throws {
        let header = try VP8FrameHeader.parse([0x31, 0x02, 0x00])
        #expect(!header.isKeyFrame && header.keyFrameSize == nil && header.firstPartitionSize == 0x11)
        #expect(!VP8FrameHeader.isKeyFrame(firstByte: 0x31))
    }

    @Test func keyFrameWithoutStartCodeIsAnError() {
        #expect(throws: VP8ParseError.invalidKeyFrameStartCode) {
            try VP8FrameHeader.parse([0x10, 0, 0, 0x9D, 0x01, 0x2B, 0, 0, 0, 0])
        }
        #expect(throws: VP8ParseError.truncated(Truncated(needed: 7, offset: 3))) { try VP8FrameHeader.parse([0x10, 0, 0]) }
    }

    @Test func packetizerKeepsTheBudgetBalancesSizesAndCarriesPictureID() throws {
        let tooSmall = VP8Packetizer(maxPayloadSize: 4)
        #expect(tooSmall == nil)
        guard var packetizer = VP8Packetizer(maxPayloadSize: 100, firstPictureID: 0x7FFF) else {
            Issue.record("no packetizer")
            return
        }
        let frame = Fixtures.frame(size: 1000, key: true, seed: 1)
        let payloads = packetizer.packetize(frame)
        #expect(payloads.count == 11)  // 1000 bytes / 96 per packet
        #expect(payloads.allSatisfy { $0.count <= 100 })
        let sizes = payloads.map(\.count)
        #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1)
        var rebuilt: [UInt8] = []
        for (index, payload) in payloads.enumerated() {
            let (descriptor, length) = try VP8PayloadDescriptor.parse(payload[...])
            #expect(descriptor.isStartOfFrame == (index == 0))
            #expect(descriptor.pictureID == .long(0x7FFF))
            rebuilt += payload[length...]
        }
        #expect(rebuilt == frame)
        let next = packetizer.packetize([0x01, 0x02])
        #expect(try VP8PayloadDescriptor.parse(next[0][...]).0.pictureID == .long(0))  // wraps at 15 bits
        let none = packetizer.packetize([])
        #expect(none.isEmpty)
    }
}

@Suite struct VP8FrameAssemblerTests {
    static let frames: [[UInt8]] = (0..<12).map { index in
        Fixtures.frame(size: 150 + 97 * index, key: index == 0 || index == 8, seed: UInt64(index))
    }

    static func assemble(_ packets: [RTPPacket], limits: VP8FrameAssembler.Limits = .init()) -> (VP8FrameAssembler, [VP8Frame]) {
        var assembler = VP8FrameAssembler(limits: limits)
        var out: [VP8Frame] = []
        for packet in packets {
            assembler.insert(packet)
            while let frame = assembler.popFrame() { out.append(frame) }
        }
        return (assembler, out)
    }

    @Test func inOrderPacketsGiveBackEveryFrame() {
        let (assembler, out) = Self.assemble(Fixtures.rtpPackets(frames: Self.frames))
        #expect(out.map(\.data) == Self.frames)
        #expect(out.map(\.isKeyFrame) == Self.frames.indices.map { $0 == 0 || $0 == 8 })
        #expect(!assembler.needsKeyFrame)
        #expect(assembler.statistics.framesAssembled == 12 && assembler.statistics.framesLost == 0)
        #expect(out[1].timestamp == 0xFFFF_F000 &+ 3000)
        #expect(out[0].firstSequenceNumber == 65_530)
    }

    /// `packets` reordered so that none moves more than `window - 1` places.
    static func locallyShuffled(_ packets: [RTPPacket], window: Int, seed: UInt64) -> [RTPPacket] {
        var generator = SeededGenerator(seed: seed)
        let keys = packets.indices.map { $0 + Int.random(in: 0..<window, using: &generator) }
        return packets.indices.sorted { (keys[$0], $0) < (keys[$1], $1) }.map { packets[$0] }
    }

    @Test func locallyReorderedPacketsGiveBackEveryFrameInOrder() {
        for seed in 0..<50 as Range<UInt64> {
            let packets = Self.locallyShuffled(Fixtures.rtpPackets(frames: Self.frames), window: 6, seed: seed)
            let (assembler, out) = Self.assemble(packets)
            let same = out.map(\.data) == Self.frames
            #expect(same, "seed \(seed): \(out.count) frames")
            #expect(assembler.statistics.framesLost == 0 && !assembler.needsKeyFrame, "seed \(seed)")
        }
    }

    @Test func fullyShuffledPacketsOfAKeyFrameAndItsDeltaFramesGiveBackTheSameFrames() {
        let frames = Array(Self.frames.prefix(8))
        for seed in 0..<50 as Range<UInt64> {
            var generator = SeededGenerator(seed: seed)
            let packets = Fixtures.rtpPackets(frames: frames).shuffled(using: &generator)
            let (assembler, out) = Self.assemble(packets)
            let same = out.map(\.data) == frames
            #expect(same, "seed \(seed): \(out.count) frames")
            #expect(assembler.statistics.framesLost == 0, "seed \(seed)")
        }
    }

    @Test func duplicatesAndLatePacketsAreIgnored() {
        let packets = Fixtures.rtpPackets(frames: Array(Self.frames.prefix(3)))
        var assembler = VP8FrameAssembler()
        #expect(assembler.insert(packets[0]) == .accepted)
        #expect(assembler.insert(packets[0]) == .duplicate)
        for packet in packets.dropFirst() { assembler.insert(packet) }
        #expect(assembler.insert(packets[1]) == .late)
        #expect(assembler.readyFrameCount == 3)
        #expect(assembler.statistics.packetsIgnored == 2)
    }

    @Test func lossAsksForAKeyFrameDropsDeltaFramesAndRecoversOnTheNextKeyFrame() {
        var packets = Fixtures.rtpPackets(frames: Self.frames)
        // Lose the second packet of frame 2.
        let frame2 = packets.indices.filter { packets[$0].timestamp == 0xFFFF_F000 &+ 6000 }
        packets.remove(at: frame2[1])
        var assembler = VP8FrameAssembler()
        var out: [VP8Frame] = []
        var askedForKeyFrame = false
        for packet in packets {
            assembler.insert(packet)
            if packet.timestamp == 0xFFFF_F000 &+ 15_000, packet.marker {
                // Frames 3-4 wait behind the gap; the caller's NACK timer runs out.
                #expect(!assembler.needsKeyFrame)
                assembler.abandonIncompleteFrames()
            }
            askedForKeyFrame = askedForKeyFrame || assembler.needsKeyFrame
            while let frame = assembler.popFrame() { out.append(frame) }
        }
        #expect(askedForKeyFrame)
        #expect(!assembler.needsKeyFrame)  // the key frame at index 8 arrived
        #expect(out.map(\.data) == [Self.frames[0], Self.frames[1]] + Self.frames[8...])
        #expect(assembler.statistics.framesLost == 1)
        #expect(assembler.statistics.framesDiscarded == 5)  // frames 3-7 depend on the lost one
    }

    @Test func aCompleteLaterKeyFrameEndsTheWait() {
        var packets = Fixtures.rtpPackets(frames: Self.frames)
        packets.removeAll { $0.timestamp == 0xFFFF_F000 &+ 18_000 && !$0.marker }  // frame 6 loses its start
        let (assembler, out) = Self.assemble(packets)
        #expect(out.map(\.data) == Array(Self.frames[0..<6] + Self.frames[8...]))
        #expect(!assembler.needsKeyFrame)
        #expect(assembler.statistics.framesLost >= 1)
    }

    @Test func aFrameThatCanNeverCompleteIsLostAtOnce() {
        var packets = Fixtures.rtpPackets(frames: Array(Self.frames.prefix(4)))
        // Corrupt the descriptor of a packet in frame 1: its frame can never be whole.
        let index = packets.firstIndex { $0.timestamp == 0xFFFF_F000 &+ 3000 } ?? 0
        packets[index].payload = [0x80]
        var assembler = VP8FrameAssembler()
        var results: [VP8FrameAssembler.InsertResult] = []
        for packet in packets { results.append(assembler.insert(packet)) }
        #expect(results.contains(.malformed(.truncated(Truncated(needed: 1, offset: 1)))))
        #expect(assembler.needsKeyFrame)
        #expect(assembler.statistics.framesLost == 1)
        #expect(assembler.readyFrameCount == 1)  // frame 0 only; 2 and 3 need a key frame
    }

    @Test func memoryStaysBoundedWhenFramesNeverComplete() {
        var assembler = VP8FrameAssembler(limits: .init(maxFrames: 8, maxPackets: 64, maxBytes: 10_000))
        var sequenceNumber: UInt16 = 0
        for frame in 0..<1000 {
            // Every frame's second packet is lost.
            let payloads: [[UInt8]] = [[0x10, 0x01, 0, 0] + Array(repeating: 1, count: 100), [0x00, 2], [0x00, 3]]
            for (index, payload) in payloads.enumerated() where index != 1 {
                assembler.insert(sequenceNumber: sequenceNumber &+ UInt16(index), timestamp: UInt32(frame) * 3000,
                                 marker: index == 2, payload: payload[...])
            }
            sequenceNumber &+= 3
        }
        #expect(assembler.readyFrameCount == 0)
        #expect(assembler.statistics.framesLost >= 990)
        #expect(assembler.needsKeyFrame)
    }
}
