import Compositing
import Conference
import Foundation
import Media
import RTP
import Synchronization
import Testing
import Wire
@testable import Server

/// The host's decode threads: each stream's frames are decoded in the order they were handed
/// out, with a decoder of its own, and a decoder that cannot start says so for every job of its
/// stream (the room then ends that track).
@Suite struct VideoDecodeWorkerTests {
    static let size = VideoSize(width: 160, height: 96)

    /// `count` frames of a camera of one colour, as the room hands them out.
    static func requests(_ stream: VideoDecodeStream, colour: YUVColor, count: Int, maximumPixels: Int) throws -> [VideoDecodeRequest] {
        let encoder = try VP8Encoder(.init(width: size.width, height: size.height, bitrate: 200_000))
        var sender = try #require(VideoSender(payloadType: 96, ssrc: 0x1234))
        let frames = VideoFrameReceiver()
        var requests: [VideoDecodeRequest] = []
        for index in 0..<count {
            let picture = I420Frame(width: size.width, height: size.height, color: colour, timestamp: .milliseconds(UInt64(index) * 33))
            for frame in try encoder.encode(picture) {
                for packet in sender.packetize(frame) {
                    requests += frames.receive(packet, now: .milliseconds(UInt64(index) * 33)).map {
                        VideoDecodeRequest(stream: stream, job: $0, maximumPixels: maximumPixels)
                    }
                }
            }
        }
        return requests
    }

    @Test func eachStreamIsDecodedInOrderAndADecoderThatCannotStartSaysSo() throws {
        let red = YUVColor(red: 220, green: 30, blue: 30), blue = YUVColor(red: 30, green: 30, blue: 220)
        let first = VideoDecodeStream(participant: "a", source: .camera, generation: 1)
        let second = VideoDecodeStream(participant: "b", source: .camera, generation: 1)
        let broken = VideoDecodeStream(participant: "c", source: .camera, generation: 1)
        let a = try Self.requests(first, colour: red, count: 10, maximumPixels: 1920 * 1088)
        let b = try Self.requests(second, colour: blue, count: 10, maximumPixels: 1920 * 1088)
        let c = try Self.requests(broken, colour: blue, count: 3, maximumPixels: 0)  // no decoder takes 0 pixels
        let wakes = Mutex(0)
        let worker = VideoDecodeWorker(name: "test-decode") { _ in wakes.withLock { $0 += 1 } }
        defer { worker.stop() }
        let inbox = DecodeInbox(nil)
        // Interleaved, as cameras' packets arrive.
        for index in 0..<10 {
            worker.submit(.init(request: a[index], inbox: inbox))
            worker.submit(.init(request: b[index], inbox: inbox))
            if index < 3 { worker.submit(.init(request: c[index], inbox: inbox)) }
        }
        var results: [(stream: VideoDecodeStream, result: VideoDecodeResult)] = []
        for _ in 0..<1000 where results.count < 23 {
            Thread.sleep(forTimeInterval: 0.01)
            results += inbox.take().map { (stream: $0.0, result: $0.1) }
        }
        #expect(results.count == 23)
        #expect(!inbox.hasResults)
        #expect((1...23).contains(wakes.withLock { $0 }), "the loop is woken when the inbox was empty, not for every result")
        for (stream, colour) in [(first, red), (second, blue)] {
            let mine = results.filter { $0.stream == stream }.map(\.result)
            #expect(mine.map(\.sequence) == Array(1...10))
            for result in mine {
                guard case .picture(let picture) = result.outcome else {
                    Issue.record("\(stream) frame \(result.sequence): \(result.outcome)")
                    continue
                }
                #expect(picture.pixel(x: 80, y: 48).isClose(to: colour, tolerance: 24), "\(stream) frame \(result.sequence)")
                #expect(result.decodeTime > .zero)
            }
        }
        let refused = results.filter { $0.stream == broken }.map(\.result)
        #expect(refused.count == 3 && refused.allSatisfy { if case .decoderUnavailable = $0.outcome { true } else { false } })
        #expect(worker.statistics.framesDecoded == 20 && worker.statistics.decodeErrors == 3)
    }
}
