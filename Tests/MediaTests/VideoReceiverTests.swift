import Media
import RTP
import Testing
import Wire
import WireTesting

@Suite struct VideoReceiverTests {
    static let width = 320, height = 180
    static let background = YUVColor(red: 40, green: 120, blue: 200)
    static let bar = YUVColor(red: 250, green: 200, blue: 20)
    static let check = YUVColor(red: 200, green: 60, blue: 90)
    /// Small enough that every frame spans several packets.
    static let maxPayloadSize = 160

    /// Where frame `index`'s 40-pixel bar starts: it moves 8 pixels a frame.
    static func barX(_ index: Int) -> Int { (index * 8) % (width - 40) }

    /// Frame `index` of the moving picture, captured at `time(index)`.
    static func picture(_ index: Int) -> I420Frame {
        var frame = I420Frame(width: width, height: height, color: background, timestamp: time(index))
        // A checkered band above and below, so that the moving bar costs the encoder some bits.
        for y in stride(from: 0, to: height, by: 10) where y < 50 || y >= 130 {
            for x in stride(from: (y / 10) % 2 * 10, to: width, by: 20) {
                frame.fill(PixelRect(x: x, y: y, width: 10, height: 10), with: check)
            }
        }
        frame.fill(PixelRect(x: barX(index), y: 0, width: 40, height: height), with: bar)
        return frame
    }

    /// 30 frames per second, on a clock that starts at 1 s.
    static func time(_ index: Int) -> Instant { .milliseconds(1000 + UInt64(index) * 33) }

    static func encoder() throws -> VP8Encoder {
        try VP8Encoder(.init(width: width, height: height, bitrate: 300_000))
    }

    static func sender() throws -> VideoSender {
        try #require(VideoSender(payloadType: 96, ssrc: 0x1234_5678, maxPayloadSize: maxPayloadSize,
                                 firstSequenceNumber: 65_500, timestampOffset: 0xFFFF_0000, firstPictureID: 0x7FF0))
    }

    /// Frame `index` as the receiver should show it: its size, the bar where frame `index` has
    /// it (its leading columns are new in this frame), the background where the bar just left.
    static func shows(_ decoded: I420Frame, frame index: Int) -> Bool {
        let x = barX(index), y = height / 2
        guard decoded.width == width, decoded.height == height else { return false }
        let barShown = decoded.pixel(x: x + 36, y: y).isClose(to: bar, tolerance: 20)
            && decoded.pixel(x: x + 4, y: y).isClose(to: bar, tolerance: 20)
        let vacated = x >= 8 ? decoded.pixel(x: x - 4, y: y).isClose(to: background, tolerance: 20) : true
        let beyond = decoded.pixel(x: x + 48, y: y).isClose(to: background, tolerance: 20)
        return barShown && vacated && beyond && meanLumaDifference(decoded, picture(index)) < 2.5  // 1.6 shown, 3.5 if a frame were skipped
    }

    static func meanLumaDifference(_ a: I420Frame, _ b: I420Frame) -> Double {
        var sum = 0
        for index in 0..<a.lumaSize { sum += abs(Int(a.data[index]) - Int(b.data[index])) }
        return Double(sum) / Double(a.lumaSize)
    }

    /// The moving picture encoded and packetized: each frame's packets.
    static func stream(frames: Int = 30) throws -> [[RTPPacket]] {
        let encoder = try encoder()
        var sender = try sender()
        return try (0..<frames).map { index in
            try encoder.encode(picture(index)).flatMap { sender.packetize($0) }
        }
    }

    @Test func framesShuffledWithinAWindowAllDecodeWithTheirSizeAndColours() throws {
        let frames = try Self.stream()
        #expect(frames[0].count >= 4, "the key frame spans \(frames[0].count) packets")
        #expect(frames.filter { $0.count >= 2 }.count == frames.count)
        // Shuffle within windows of 5 packets, and send one packet twice: what a network does.
        var packets = frames.flatMap { $0 }
        var generator = SeededGenerator(seed: 11)
        for start in stride(from: 0, to: packets.count, by: 5) {
            packets[start..<min(packets.count, start + 5)].shuffle(using: &generator)
        }
        packets.insert(packets[7], at: 12)

        var requests = 0
        let receiver = try VideoReceiver(onKeyFrameNeeded: { requests += 1 })
        var shown: [I420Frame] = []
        var now = Self.time(0)
        for packet in packets {
            shown += receiver.receive(packet, now: now)
            now = now + .milliseconds(2)
        }
        #expect(shown.count == 30)
        for (index, picture) in shown.enumerated() {
            #expect(Self.shows(picture, frame: index), "frame \(index): \(Self.meanLumaDifference(picture, Self.picture(index)))")
        }
        #expect(zip(shown, shown.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        #expect(requests == 0)
        #expect(!receiver.isWaitingForKeyFrame)
        let statistics = receiver.statistics
        #expect(statistics.framesDecoded == 30 && statistics.keyFramesDecoded == 1)
        #expect(statistics.framesDroppedWaitingForKeyFrame == 0 && statistics.framesLost == 0)
        #expect(receiver.assemblerStatistics.packetsIgnored == 1)  // the duplicate
        #expect(receiver.frameSize?.width == Self.width && receiver.frameSize?.height == Self.height)
    }

    @Test func aLostPacketStopsThePictureUntilTheKeyFrameItAskedFor() throws {
        let encoder = try Self.encoder()
        var sender = try Self.sender()
        var requests: [Int] = []
        var index = 0
        // The transport's answer to a PLI: the encoder makes its next frame a key frame.
        let receiver = try VideoReceiver(onKeyFrameNeeded: {
            requests.append(index)
            encoder.requestKeyFrame()
        })
        var shown: [(index: Int, picture: I420Frame)] = []
        var keyFrames: [Int] = []
        while index < 30 {
            var packets = try encoder.encode(Self.picture(index)).flatMap { frame in
                if frame.isKeyFrame { keyFrames.append(index) }
                return sender.packetize(frame)
            }
            if index == 9 {
                try #require(packets.count >= 3)
                packets.remove(at: 1)  // a middle packet of a delta frame
            }
            for packet in packets {
                shown += receiver.receive(packet, now: Self.time(index)).map { (index, $0) }
            }
            // The NACK timer runs every 100 ms: frames 10 and 11 arrive before the loss is
            // given up at frame 11, a burst the receiver asks about once.
            if index % 3 == 2 {
                shown += receiver.abandonIncompleteFrames(now: Self.time(index) + .milliseconds(20)).map { (index, $0) }
            }
            index += 1
        }
        #expect(requests == [11])
        #expect(keyFrames == [0, 12])
        // Nothing from the lost frame to the key frame; every picture shown is its frame's.
        #expect(shown.map(\.index) == Array(0...8) + Array(12...29))
        for (index, picture) in shown {
            #expect(Self.shows(picture, frame: index), "frame \(index)")
        }
        let statistics = receiver.statistics
        #expect(statistics.framesLost == 1)
        #expect(statistics.framesDroppedWaitingForKeyFrame == 2)
        #expect(statistics.keyFrameRequests == 1)
        #expect(statistics.keyFramesDecoded == 2)
        #expect(!receiver.isWaitingForKeyFrame)
    }

    @Test func whileNoKeyFrameComesTheRequestIsRepeatedEvery300Milliseconds() throws {
        let frames = try Self.stream(frames: 30)
        var now = Self.time(0)
        var requests: [Instant] = []
        let receiver = try VideoReceiver()
        receiver.onKeyFrameNeeded = { requests.append(now) }
        for (index, packets) in frames.enumerated() {
            now = Self.time(index)
            // Every frame from 5 on loses its first packet: a sender that ignores PLIs.
            for packet in index >= 5 ? Array(packets.dropFirst()) : packets {
                _ = receiver.receive(packet, now: now)
            }
            now = now + .milliseconds(20)
            let released = receiver.abandonIncompleteFrames(now: now)
            #expect(released.isEmpty)
        }
        // Asked when frame 5 was given up, then again each time 300 ms had passed (the ticks
        // are 33 ms apart, the timer 20 ms after each), never more often.
        #expect(requests.first == Self.time(5) + .milliseconds(20))
        let gaps = zip(requests, requests.dropFirst()).map { $1 - $0 }
        #expect(requests.count == 3)
        #expect(gaps.allSatisfy { $0 >= .milliseconds(300) && $0 < .milliseconds(340) }, "\(gaps)")
        #expect(receiver.statistics.keyFrameRequests == requests.count)
        #expect(receiver.statistics.framesDecoded == 5)
        #expect(receiver.isWaitingForKeyFrame)
    }

    /// The first key frame is lost whole: the delta frames behind it can never decode. Once
    /// abandoned they are given up and a key frame is asked for, and the next one shows.
    @Test func aLostFirstKeyFrameIsAskedForAgainAndTheNextOneShows() throws {
        let encoder = try Self.encoder()
        var sender = try Self.sender()
        let frames = try (0..<30).map { index in
            if index == 15 { encoder.requestKeyFrame() }  // the answer to the request
            return try encoder.encode(Self.picture(index)).flatMap { sender.packetize($0) }
        }
        var requests = 0
        let receiver = try VideoReceiver()
        receiver.onKeyFrameNeeded = { requests += 1 }
        var shown: [Int] = []
        for (index, packets) in frames.enumerated() where index > 0 {
            for packet in packets { shown += receiver.receive(packet, now: Self.time(index)).map { _ in index } }
            if index == 4 {
                #expect(requests == 0 && shown.isEmpty)  // the key frame may still be on the way
                _ = receiver.abandonIncompleteFrames(now: Self.time(index) + .milliseconds(150))
                #expect(requests == 1, "the stall asks for a key frame")
            }
        }
        #expect(shown.first == 15, "the next key frame shows: \(shown)")
        #expect(shown == Array(15..<30))
    }

    @Test func hostilePayloadsNeverTrapAndACleanKeyFrameStillDecodes() throws {
        let frames = try Self.stream(frames: 30)
        let packets = frames.flatMap { $0 }
        var mutator = Mutator(seed: 0x5EED_0F_F8)
        var generator = SeededGenerator(seed: 3)
        let receiver = try VideoReceiver(maximumPixels: 640 * 480, limits: .init(maxFrames: 32, maxPackets: 512))
        var mutated = 0
        var pass = 0
        // Each pass replays the stream under new sequence numbers and timestamps, two packets in
        // three with a mangled VP8 descriptor or frame, some with their marker bit flipped.
        while mutated < 3000 {
            for (offset, packet) in packets.enumerated() {
                var hostile = packet
                hostile.sequenceNumber = packet.sequenceNumber &+ UInt16(truncatingIfNeeded: pass * packets.count)
                hostile.timestamp = packet.timestamp &+ UInt32(pass) &* 3_000_000
                if Int.random(in: 0..<3, using: &generator) > 0 {
                    hostile.payload = mutator.mutate(Array(packet.payload))[...]
                    mutated += 1
                }
                if Int.random(in: 0..<20, using: &generator) == 0 { hostile.marker.toggle() }
                _ = receiver.receive(hostile, now: Self.time(pass * 30 + offset / 10))
            }
            receiver.abandonIncompleteFrames(now: Self.time(pass * 30 + 29))
            pass += 1
        }
        // The sender's next clean key frame (and what follows) shows again.
        var shown: [I420Frame] = []
        for packet in packets {
            var clean = packet
            clean.sequenceNumber = packet.sequenceNumber &+ UInt16(truncatingIfNeeded: pass * packets.count)
            clean.timestamp = packet.timestamp &+ UInt32(pass) &* 3_000_000
            shown += receiver.receive(clean, now: Self.time(pass * 30 + 30))
        }
        #expect(shown.count == 30)
        if let last = shown.last { #expect(Self.shows(last, frame: 29)) }
        #expect(receiver.assemblerStatistics.packetsMalformed > 0)
    }

    @Test func theSenderNumbersPacketsAndMarksTheLastOfEachFrame() throws {
        let encoder = try Self.encoder()
        var sender = try Self.sender()
        let encoded = try (0..<3).flatMap { try encoder.encode(Self.picture($0)) }
        let frames = encoded.map { sender.packetize($0) }
        let packets = frames.flatMap { $0 }
        // Sequence numbers run on from 65500 across the wrap.
        #expect(packets.map(\.sequenceNumber) == (0..<packets.count).map { UInt16(truncatingIfNeeded: 65_500 + $0) })
        for (frame, source) in zip(frames, encoded) {
            #expect(frame.map(\.marker) == Array(repeating: false, count: frame.count - 1) + [true])
            #expect(frame.allSatisfy { $0.timestamp == source.rtpTimestamp &+ 0xFFFF_0000 })
            #expect(frame.allSatisfy { $0.payloadType == 96 && $0.ssrc == 0x1234_5678 })
            #expect(frame.allSatisfy { $0.payload.count <= Self.maxPayloadSize })
        }
        // Through the wire and back, the frames come out whole.
        var assembler = VP8FrameAssembler()
        for packet in packets { assembler.insert(try RTPPacket.parse(try packet.serialized())) }
        for source in encoded { #expect(assembler.popFrame()?.data == source.data) }
        #expect(sender.statistics.framesSent == 3 && sender.statistics.keyFramesSent == 1)
        #expect(sender.statistics.packetsSent == packets.count)
        #expect(VideoSender(payloadType: 96, ssrc: 1, maxPayloadSize: 4) == nil)
    }
}
