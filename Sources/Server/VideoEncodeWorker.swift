import Foundation
import Compositing
import Media
import Sockets
import Synchronization
import Wire

/// One VP8 encoder on its own thread, so that a slow encode never delays packet handling
/// (docs/architecture.md, threads). Pictures wait in a queue of at most `depth`; a full queue drops
/// its oldest picture (a late composite is worth less than the next one) and keeps its key frame
/// request for the picture that replaces it. Encoded frames go to `deliver`, on the worker
/// thread; the caller hops back to its loop. The encoder is made and used only on the thread.
final class VideoEncodeWorker: @unchecked Sendable {
    /// A picture to encode, and whether it must be a key frame.
    struct Job: Sendable {
        var picture: I420Frame
        var keyFrame: Bool
        /// libvpx's speed and the VP8 profile for this picture on (`CompositeEncoderSpeed`); nil
        /// keeps the one in use. A new profile restarts the encoder (a key frame).
        var cpuUsed: Int? = nil
        var profile: Int? = nil
    }

    /// What one picture gave: its frames, and how long the encode took by the thread's wall
    /// clock (scaling included), which the room's encoder speed rule reads.
    struct Delivery: Sendable {
        var frames: [EncodedVideoFrame]
        var encodeTime: Duration
    }

    /// Counters, read from any thread.
    struct Statistics: Sendable, Equatable {
        var framesEncoded = 0
        var keyFramesEncoded = 0
        /// Pictures dropped because the queue was full.
        var picturesDropped = 0
        /// Pictures the encoder refused.
        var encodeErrors = 0
        /// The encoder could not start: the worker ended and takes no pictures.
        var failed = false
        var totalEncodeTime: Duration = .zero
        var longestEncode: Duration = .zero
        /// These counters and `other`'s together (an encoder stopped, and the next).
        func adding(_ other: Statistics) -> Statistics {
            var sum = self
            sum.framesEncoded += other.framesEncoded
            sum.keyFramesEncoded += other.keyFramesEncoded
            sum.picturesDropped += other.picturesDropped
            sum.encodeErrors += other.encodeErrors
            sum.failed = other.failed
            sum.totalEncodeTime += other.totalEncodeTime
            sum.longestEncode = max(longestEncode, other.longestEncode)
            return sum
        }
        /// Mean encode time per picture, milliseconds.
        var meanEncodeMilliseconds: Double {
            framesEncoded == 0 ? 0 : Double(totalEncodeTime.nanosecondsClamped) / 1e6 / Double(framesEncoded)
        }
    }

    /// Most pictures waiting at once.
    static let depth = 2

    /// Which worker made a frame: unique for the process's life.
    struct ID: Hashable, Sendable {
        fileprivate let value: UInt64
    }
    private static let nextID = Atomic<UInt64>(0)
    let id = ID(value: nextID.add(1, ordering: .relaxed).newValue)

    // Under `condition`.
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var stopping = false
    private var counters = Statistics()

    /// Starts the thread. `deliver` gets each picture's encoded frames (usually one). With
    /// `scaledTo`, pictures of another size are scaled to it on the thread before encoding. An
    /// encoder that cannot start is logged to `log` (for `room`).
    init(name: String, configuration: VP8Encoder.Configuration, scaledTo size: VideoSize? = nil, log: HostLog = HostLog(), room: String? = nil,
         deliver: @escaping @Sendable (Delivery, ID) -> Void) {
        let id = self.id
        startNamedThread(name) { [self] in run(configuration: configuration, size: size, log: log, room: room) { deliver($0, id) } }
    }

    var statistics: Statistics { condition.withLock { counters } }

    /// Queues a picture; drops the oldest waiting one when `depth` are waiting.
    func submit(_ job: Job) {
        condition.withLock {
            guard !counters.failed else { return }
            var job = job
            while queue.count >= Self.depth {
                let dropped = queue.removeFirst()
                job.keyFrame = job.keyFrame || dropped.keyFrame
                counters.picturesDropped += 1
            }
            queue.append(job)
            condition.signal()
        }
    }

    /// Ends the thread after the picture in hand; waiting pictures are dropped.
    func stop() {
        condition.withLock {
            stopping = true
            queue.removeAll()
            condition.signal()
        }
    }

    private func run(configuration: VP8Encoder.Configuration, size: VideoSize?, log: HostLog, room: String?,
                     deliver: @Sendable (Delivery) -> Void) {
        // Made once: an encoder that cannot start ends the worker (counted and logged), rather
        // than being tried again for every picture.
        let encoder: VP8Encoder
        do { encoder = try VP8Encoder(configuration) } catch {
            StartFailures.shared.record("vp8-encoder", error, log: log, room: room)
            condition.withLock {
                counters.failed = true
                queue.removeAll()
            }
            return
        }
        let clock = ContinuousClock()
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if stopping {
                condition.unlock()
                return
            }
            let job = queue.removeFirst()
            condition.unlock()
            if job.keyFrame { encoder.requestKeyFrame() }
            if let cpuUsed = job.cpuUsed, cpuUsed != encoder.configuration.cpuUsed {
                // A speed libvpx refuses leaves the one in use: the pictures still encode.
                do { try encoder.setCPUUsed(cpuUsed) } catch { condition.withLock { counters.encodeErrors += 1 } }
            }
            if let profile = job.profile, profile != encoder.configuration.profile {
                // A restart that fails leaves the encoder closed: the next picture tries again.
                do { try encoder.setProfile(profile) } catch { condition.withLock { counters.encodeErrors += 1 } }
            }
            let began = clock.now
            let picture = size.map { job.picture.scaled(width: $0.width, height: $0.height) } ?? job.picture
            let frames: [EncodedVideoFrame]
            do { frames = try encoder.encode(picture) } catch {
                // One bad picture (a size the encoder refuses) is dropped; the next may encode.
                frames = []
                condition.withLock { counters.encodeErrors += 1 }
            }
            let elapsed = clock.now - began
            condition.withLock {
                counters.framesEncoded += 1
                counters.keyFramesEncoded += frames.filter(\.isKeyFrame).count
                counters.totalEncodeTime += elapsed
                counters.longestEncode = max(counters.longestEncode, elapsed)
            }
            if !frames.isEmpty { deliver(Delivery(frames: frames, encodeTime: elapsed)) }
        }
    }
}
