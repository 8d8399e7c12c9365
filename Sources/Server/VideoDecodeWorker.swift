import Conference
import Foundation
import Media
import Synchronization
import Sockets
import Wire

/// One thread that decodes cameras and screens (docs/architecture.md, threads): the rooms'
/// decode jobs (`RoomOutput.decode`) of the streams assigned to it, each stream's in order, by
/// that stream's own `VideoDecodeSession` (made with its first job, on this thread, and used
/// only here). Each result goes into its room's `DecodeInbox` as soon as it is made; `wake` is
/// called (on the worker thread) when that inbox was empty, to have the loop take it.
///
/// The queue is bounded by its producers: a room hands out at most
/// `ParticipantInbound.decodeQueueDepth` jobs of a stream whose results it has not taken, and
/// drops the stream's frames beyond to its next key frame (`VideoFrameReceiver`). So `submit`
/// never blocks and never drops.
final class VideoDecodeWorker: @unchecked Sendable {
    /// A job, and the inbox of the room its result goes back to.
    struct Job: Sendable {
        let request: VideoDecodeRequest
        let inbox: DecodeInbox
    }

    /// Counters, read from any thread.
    struct Statistics: Sendable, Equatable {
        var framesDecoded = 0
        /// Jobs the decoders refused or could not take (no decoder).
        var decodeErrors = 0
        var totalDecodeTime: Duration = .zero
        /// The most jobs that waited at once.
        var longestQueue = 0
    }

    private enum Item: Sendable {
        case decode(Job)
        case stop(VideoDecodeStream)
    }

    // Under `condition`.
    private let condition = NSCondition()
    private var queue = FIFOQueue<Item>()
    private var stopping = false
    private var counters = Statistics()

    /// Starts the thread.
    init(name: String, wake: @escaping @Sendable (DecodeInbox) -> Void) {
        startNamedThread(name) { [self] in run(wake: wake) }
    }

    var statistics: Statistics { condition.withLock { counters } }

    /// Jobs waiting now.
    var queued: Int { condition.withLock { queue.count } }

    /// Queues a job after the earlier ones.
    func submit(_ job: Job) {
        condition.withLock {
            guard !stopping else { return }
            queue.append(.decode(job))
            counters.longestQueue = max(counters.longestQueue, queue.count)
            condition.signal()
        }
    }

    /// Lets the stream's decoder go once its queued jobs are done.
    func stop(_ stream: VideoDecodeStream) {
        condition.withLock {
            guard !stopping else { return }
            queue.append(.stop(stream))
            condition.signal()
        }
    }

    /// Ends the thread after the job in hand; waiting jobs are dropped.
    func stop() {
        condition.withLock {
            stopping = true
            queue = FIFOQueue()
            condition.signal()
        }
    }

    /// A stream's decoder, or why it could not start.
    private enum Decoder {
        case running(VideoDecodeSession)
        case failed(VP8CodecError)
    }

    private func run(wake: @Sendable (DecodeInbox) -> Void) {
        var decoders: [VideoDecodeStream: Decoder] = [:]
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            guard !stopping, let item = queue.popFirst() else {
                condition.unlock()
                return
            }
            condition.unlock()
            switch item {
            case .stop(let stream):
                decoders[stream] = nil
            case .decode(let job):
                let request = job.request
                let decoder: Decoder
                if let known = decoders[request.stream] {
                    decoder = known
                } else {
                    do throws(VP8CodecError) {
                        decoder = .running(try VideoDecodeSession(maximumPixels: request.maximumPixels))
                    } catch {
                        decoder = .failed(error)
                    }
                    decoders[request.stream] = decoder
                }
                let result: VideoDecodeResult
                switch decoder {
                case .running(let session): result = session.decode(request.job)
                case .failed(let error): result = .unavailable(request.job, error)
                }
                condition.withLock {
                    switch result.outcome {
                    case .picture: counters.framesDecoded += 1
                    case .refused, .decoderUnavailable: counters.decodeErrors += 1
                    case .hidden: break
                    }
                    counters.totalDecodeTime += result.decodeTime
                }
                if job.inbox.put(request.stream, result) { wake(job.inbox) }
            }
        }
    }
}

/// Where one room's decode results wait for the media loop, in the order each worker made them.
/// The room takes them before each input it handles (a packet, a timeout), so that a frame whose
/// result is in is never counted as still out to its worker (the decode queue's bound is the
/// workers' backlog, not the loop's), and when the loop wakes for them.
final class DecodeInbox: @unchecked Sendable {
    /// Read only on the media loop.
    weak var room: HostedRoom?
    private let lock = NSLock()
    // Under `lock`.
    private var results: [(VideoDecodeStream, VideoDecodeResult)] = []
    /// Whether results wait: read without the lock on every packet.
    private let pending = Atomic<Bool>(false)

    init(_ room: HostedRoom?) { self.room = room }

    /// Any thread: adds a result; true when the inbox was empty (wake the loop to take it).
    func put(_ stream: VideoDecodeStream, _ result: VideoDecodeResult) -> Bool {
        lock.withLock {
            results.append((stream, result))
            guard results.count == 1 else { return false }
            pending.store(true, ordering: .releasing)
            return true
        }
    }

    /// Whether results wait.
    var hasResults: Bool { pending.load(ordering: .acquiring) }

    /// The results waiting, in order; the inbox is empty after.
    func take() -> [(VideoDecodeStream, VideoDecodeResult)] {
        lock.withLock {
            pending.store(false, ordering: .relaxed)
            defer { results.removeAll(keepingCapacity: true) }
            return results
        }
    }
}

/// The host's decode workers: `size` threads (by default one per core but the media loop's,
/// at least one; `limits.decodeWorkers`), shared by every room. Each stream is assigned to the
/// worker with the fewest streams when its first job comes, and stays there (its decoder lives
/// there) until it stops. A worker's thread starts with its first stream and ends with its
/// last. Results come back through each room's `DecodeInbox`, in order, into
/// `Room.pictureDecoded` on the media loop.
///
/// Used on the media loop; its state is under a lock all the same, since a room's `deinit`
/// (which stops the room's streams) may run elsewhere.
final class VideoDecodePool: @unchecked Sendable {
    /// One per core but the media loop's, at least one.
    static var defaultSize: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }

    let size: Int
    private let loop: EventLoop
    private let lock = NSLock()
    // Under `lock`.
    private var workers: [VideoDecodeWorker?]
    private var streams: [Int]
    private var assigned: [VideoDecodeStream: Int] = [:]
    private var retired = VideoDecodeWorker.Statistics()

    init(size: Int, loop: EventLoop) {
        self.size = max(1, size)
        self.loop = loop
        workers = Array(repeating: nil, count: self.size)
        streams = Array(repeating: 0, count: self.size)
    }

    deinit {
        for worker in workers { worker?.stop() }
    }

    /// Hands a job to its stream's worker (assigning the stream to the least busy one first).
    func decode(_ request: VideoDecodeRequest, into inbox: DecodeInbox) {
        let worker = lock.withLock { () -> VideoDecodeWorker in
            let index: Int
            if let known = assigned[request.stream] {
                index = known
            } else {
                index = streams.indices.min { streams[$0] < streams[$1] } ?? 0
                assigned[request.stream] = index
                streams[index] += 1
            }
            if let running = workers[index] { return running }
            let loop = self.loop
            let started = VideoDecodeWorker(name: "vp8-decode-\(index)") { inbox in
                loop.execute { inbox.room?.takeDecoded() }
            }
            workers[index] = started
            return started
        }
        worker.submit(.init(request: request, inbox: inbox))
    }

    /// The stream ended: its decoder goes; a worker left with no stream ends.
    func stop(_ stream: VideoDecodeStream) {
        lock.withLock {
            guard let index = assigned.removeValue(forKey: stream), let worker = workers[index] else { return }
            streams[index] -= 1
            if streams[index] == 0 {
                worker.stop()
                let statistics = worker.statistics
                retired.framesDecoded += statistics.framesDecoded
                retired.decodeErrors += statistics.decodeErrors
                retired.totalDecodeTime += statistics.totalDecodeTime
                retired.longestQueue = max(retired.longestQueue, statistics.longestQueue)
                workers[index] = nil
            } else {
                worker.stop(stream)
            }
        }
    }

    /// Worker threads running now.
    var running: Int { lock.withLock { workers.compactMap { $0 }.count } }

    /// Jobs waiting in the workers' queues now.
    var queued: Int { lock.withLock { workers.compactMap { $0 } }.reduce(0) { $0 + $1.queued } }

    /// The workers' counters since the host started.
    var statistics: VideoDecodeWorker.Statistics {
        let (done, running) = lock.withLock { (retired, workers.compactMap { $0 }) }
        return running.map(\.statistics).reduce(done) { sum, statistics in
            var sum = sum
            sum.framesDecoded += statistics.framesDecoded
            sum.decodeErrors += statistics.decodeErrors
            sum.totalDecodeTime += statistics.totalDecodeTime
            sum.longestQueue = max(sum.longestQueue, statistics.longestQueue)
            return sum
        }
    }
}
