import Media
import RTP
import Testing
import Wire

/// The receive side whose decoder runs elsewhere (a host's decode worker): its decode queue's
/// overflow policy, and a refusal that comes back after later frames were already handed out.
/// What it shows is judged as `VideoReceiverTests` judges it: every picture is its own frame's,
/// with the moving bar where that frame has it.
@Suite struct VideoFrameReceiverTests {
    /// The moving picture's frame `index`, encoded; key frames noted.
    private static func encode(_ encoder: VP8Encoder, _ sender: inout VideoSender, _ index: Int, keyFrames: inout [Int]) throws -> [RTPPacket] {
        try encoder.encode(VideoReceiverTests.picture(index)).flatMap { frame in
            if frame.isKeyFrame { keyFrames.append(index) }
            return sender.packetize(frame)
        }
    }

    /// A decoder that falls behind: from frame 10 to 19 it decodes nothing. Four frames wait for
    /// it (the bound); the fifth is dropped, and every frame after it until a key frame, since
    /// they would predict from a picture it never saw, and a key frame is asked for at once. The
    /// key frame that answers comes while the queue is still full and is dropped too; the request
    /// is repeated 300 ms after the first, and its key frame shows. Every picture shown is its
    /// own frame's: none is decoded from a missing reference.
    @Test func aFullDecodeQueueDropsToTheNextKeyFrameAndAsksForOne() throws {
        let encoder = try VideoReceiverTests.encoder()
        var sender = try VideoReceiverTests.sender()
        var index = 0
        var requests: [Int] = []
        let receiver = VideoFrameReceiver(maximumFramesInFlight: 4) {
            requests.append(index)
            encoder.requestKeyFrame()  // the sender's answer to the PLI
        }
        let decoder = try VideoDecodeSession()
        var waiting: [(index: Int, job: VideoDecodeJob)] = []
        var mostWaiting = 0
        var shown: [(index: Int, picture: I420Frame)] = []
        var keyFrames: [Int] = []
        while index < 40 {
            for packet in try Self.encode(encoder, &sender, index, keyFrames: &keyFrames) {
                waiting += receiver.receive(packet, now: VideoReceiverTests.time(index)).map { (index, $0) }
            }
            mostWaiting = max(mostWaiting, waiting.count, receiver.framesInFlight)
            if !(10..<20).contains(index) {
                for (frame, job) in waiting {
                    if let picture = receiver.decoded(decoder.decode(job), now: VideoReceiverTests.time(index)) { shown.append((frame, picture)) }
                }
                waiting.removeAll()
            }
            index += 1
        }
        #expect(mostWaiting == 4)
        #expect(requests == [14, 24])
        #expect(keyFrames == [0, 15, 25])
        #expect(shown.map(\.index) == Array(0...13) + Array(25..<40))
        for (index, picture) in shown {
            #expect(VideoReceiverTests.shows(picture, frame: index), "frame \(index)")
        }
        let statistics = receiver.statistics
        #expect(statistics.framesDroppedDecodeQueueFull == 2, "frame 14, and the key frame 15")
        #expect(statistics.framesDroppedWaitingForKeyFrame == 9, "16 to 19 while full, 20 to 24 after")
        #expect(statistics.decodeErrors == 0 && statistics.keyFrameRequests == 2)
        #expect(statistics.framesDecoded == 29 && statistics.keyFramesDecoded == 2)
        #expect(!receiver.isWaitingForKeyFrame && receiver.framesInFlight == 0)
    }

    /// The decoder runs two frames behind and refuses frame 8 (it arrived empty): by then frames
    /// 9 and 10 are on their way to it. It refuses them too rather than decode them from a
    /// picture it does not have; the refusal asks for a key frame (frame 11), and those two late
    /// refusals, which were handed out before that key frame, do not stop the pictures after it.
    @Test func aRefusalOnTheDecoderAsksForAKeyFrameAndLateRefusalsDoNotStopTheNext() throws {
        let encoder = try VideoReceiverTests.encoder()
        var sender = try VideoReceiverTests.sender()
        var index = 0
        var requests: [Int] = []
        let receiver = VideoFrameReceiver(maximumFramesInFlight: 4) {
            requests.append(index)
            encoder.requestKeyFrame()
        }
        let decoder = try VideoDecodeSession()
        var waiting: [(index: Int, job: VideoDecodeJob)] = []
        var shown: [(index: Int, picture: I420Frame)] = []
        var keyFrames: [Int] = []
        func decodeOne() {
            guard !waiting.isEmpty else { return }
            var (frame, job) = waiting.removeFirst()
            if frame == 8 {
                var empty = job.frame
                empty.data = []
                job = VideoDecodeJob(sequence: job.sequence, frame: empty, assembled: job.assembled)
            }
            if let picture = receiver.decoded(decoder.decode(job), now: VideoReceiverTests.time(index)) { shown.append((frame, picture)) }
        }
        while index < 30 {
            for packet in try Self.encode(encoder, &sender, index, keyFrames: &keyFrames) {
                waiting += receiver.receive(packet, now: VideoReceiverTests.time(index)).map { (index, $0) }
            }
            while waiting.count > 2 { decodeOne() }
            index += 1
        }
        while !waiting.isEmpty { decodeOne() }
        #expect(requests == [10])
        #expect(keyFrames == [0, 11])
        #expect(shown.map(\.index) == Array(0...7) + Array(11..<30))
        for (index, picture) in shown {
            #expect(VideoReceiverTests.shows(picture, frame: index), "frame \(index)")
        }
        let statistics = receiver.statistics
        #expect(statistics.decodeErrors == 1 && statistics.framesDroppedWaitingForKeyFrame == 2)
        #expect(statistics.framesDroppedDecodeQueueFull == 0)
        #expect(!receiver.isWaitingForKeyFrame)
    }
}
