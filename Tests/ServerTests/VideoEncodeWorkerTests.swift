import Foundation
import Media
import Synchronization
import Testing
import Wire
@testable import Server

/// The composite's encoder thread: what it delivers carries its identity, and an encoder that
/// cannot start ends the worker once instead of being tried for every picture.
@Suite struct VideoEncodeWorkerTests {
    @Test func framesCarryTheIdentityOfTheWorkerThatMadeThem() throws {
        let delivered = Mutex<[VideoEncodeWorker.ID]>([])
        let done = DispatchSemaphore(value: 0)
        let configuration = VP8Encoder.Configuration(width: 320, height: 180)
        let first = VideoEncodeWorker(name: "test-a", configuration: configuration) { _, id in
            delivered.withLock { $0.append(id) }
            done.signal()
        }
        let second = VideoEncodeWorker(name: "test-b", configuration: configuration) { _, id in
            delivered.withLock { $0.append(id) }
            done.signal()
        }
        defer { first.stop(); second.stop() }
        #expect(first.id != second.id)
        first.submit(.init(picture: I420Frame(width: 320, height: 180, color: .black, timestamp: .milliseconds(1)), keyFrame: true))
        #expect(done.wait(timeout: .now() + 10) == .success)
        second.submit(.init(picture: I420Frame(width: 320, height: 180, color: .black, timestamp: .milliseconds(1)), keyFrame: true))
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(delivered.withLock { $0 } == [first.id, second.id])
    }

    @Test func anEncoderThatCannotStartEndsTheWorkerOnceAndIsCounted() throws {
        let before = StartFailures.shared.snapshot["vp8-encoder"] ?? 0
        // Odd sizes past libvpx's limits: the encoder refuses to start.
        let worker = VideoEncodeWorker(name: "test-bad", configuration: VP8Encoder.Configuration(width: 1, height: 1)) { _, _ in
            Issue.record("a worker without an encoder delivered a frame")
        }
        defer { worker.stop() }
        for _ in 0..<200 where !worker.statistics.failed { Thread.sleep(forTimeInterval: 0.01) }
        #expect(worker.statistics.failed)
        for index in 0..<10 {
            worker.submit(.init(picture: I420Frame(width: 2, height: 2, color: .black, timestamp: .milliseconds(UInt64(index))), keyFrame: false))
        }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(worker.statistics.framesEncoded == 0 && worker.statistics.picturesDropped == 0)
        #expect((StartFailures.shared.snapshot["vp8-encoder"] ?? 0) == before + 1)
    }
}
