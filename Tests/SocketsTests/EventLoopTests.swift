import Foundation
import Testing
import Wire
@testable import Sockets

@Suite struct EventLoopTests {
    @Test func timersRunInOrderAndCancelledOnesNever() throws {
        let loop = try EventLoop()
        let start = loop.clock.now()
        nonisolated(unsafe) var fired: [Int] = []
        loop.schedule(at: start + .milliseconds(30)) { fired.append(3); loop.stop() }
        loop.schedule(at: start + .milliseconds(10)) { fired.append(1) }
        let cancelled = loop.schedule(at: start + .milliseconds(20)) { fired.append(99) }
        loop.schedule(at: start + .milliseconds(20)) { fired.append(2) }
        loop.cancel(cancelled)
        loop.run()
        #expect(fired == [1, 2, 3])
        #expect(loop.clock.now() >= start + .milliseconds(30))
    }

    @Test func aDeadlineTimerFiresOnceAtItsEarliestDeadlineAndNeverOnceGone() throws {
        let loop = try EventLoop()
        let start = loop.clock.now()
        nonisolated(unsafe) var fired: [String] = []
        let kept = DeadlineTimer(loop: loop)
        kept.action = { _ in fired.append("kept") }
        kept.arm(at: start + .milliseconds(20))
        kept.arm(at: start + .milliseconds(10))  // earlier: re-armed
        kept.arm(at: start + .milliseconds(40))  // later: the earlier one stays
        var dropped: DeadlineTimer? = DeadlineTimer(loop: loop)
        dropped?.action = { _ in fired.append("dropped") }
        dropped?.arm(at: start + .milliseconds(15))
        dropped = nil  // its owner went (a peer removed): nothing may run for it
        loop.schedule(at: start + .milliseconds(50)) { loop.stop() }
        loop.run()
        #expect(fired == ["kept"])
        withExtendedLifetime(kept) {}
    }

    @Test func workFromAnotherThreadRunsOnTheLoopThread() async throws {
        let loop = try EventLoop()
        let thread = EventLoopThread(loop)
        let ranInLoop = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: loop.inLoop) }
        }
        #expect(ranInLoop)
        thread.stop()
    }

    /// `call` is how HTTP threads reach loop state: it answers, and it never waits forever.
    @Test func callAnswersFromTheLoopAndRefusesWhereItWouldHang() throws {
        let loop = try EventLoop()
        let finished = DispatchSemaphore(value: 0)
        Thread {
            loop.run()
            finished.signal()
        }.start()
        #expect(try loop.call { loop.inLoop } == true)
        // On the loop's own thread it would wait for itself: refused at once.
        let nested = try loop.call { () -> EventLoop.CallError? in
            do { _ = try loop.call { 1 }; return nil } catch let error as EventLoop.CallError { return error } catch { return nil }
        }
        #expect(nested == .onLoopThread)
        // A loop busy for longer than the caller will wait.
        loop.execute { Thread.sleep(forTimeInterval: 0.6) }
        #expect(throws: EventLoop.CallError.timedOut(.milliseconds(200))) {
            try loop.call(timeout: .milliseconds(200)) { 1 }
        }
        loop.stop()
        finished.wait()
        #expect(throws: EventLoop.CallError.stopped) { try loop.call { 1 } }
    }

    @Test func aReadableDescriptorCallsItsHandler() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        nonisolated(unsafe) var received: [UInt8] = []
        try loop.watch(fd: fds[0]) {
            var byte: UInt8 = 0
            _ = read(fds[0], &byte, 1)
            received.append(byte)
            if received.count == 2 { loop.stop() }
        }
        var bytes: [UInt8] = [7, 9]
        _ = write(fds[1], &bytes, 2)
        loop.run()
        #expect(received == [7, 9])
    }
}
