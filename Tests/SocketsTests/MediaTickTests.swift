import Foundation
import Testing
import Wire
@testable import Sockets

@Suite struct MediaTickTests {
    /// Runs `body` on the loop thread (overdue timers run first) and waits for it.
    private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            body()
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
    }

    @Test func deadlinesStayOnTheGridAndALateTickRestartsFromNow() throws {
        let clock = ManualClock(start: .milliseconds(1_000))
        let loop = try EventLoop(clock: clock)
        let fired = LoopConfined<[Instant]>([], on: loop)
        let tick = LoopConfined<MediaTick?>(nil, on: loop)
        let thread = EventLoopThread(loop)
        defer { thread.stop() }
        onLoop(loop) {
            tick.value = MediaTick(loop: loop, interval: { .milliseconds(20) }, maximumLateness: .milliseconds(100)) { fired.value.append($0) }
            tick.value?.start()
        }
        // Woken a little late each time: the ticks still carry the 20 ms grid's deadlines.
        for step in 1...5 {
            clock.set(.milliseconds(1_000 + 20 * UInt64(step) + 7))
            onLoop(loop) {}
        }
        // Then very late: one tick at now, and the grid starts again from there.
        clock.set(.milliseconds(1_500))
        onLoop(loop) {}
        clock.set(.milliseconds(1_520))
        onLoop(loop) {}
        let result = try loop.call { () -> (deadlines: [Instant], resets: Int) in
            defer { tick.value?.stop() }
            return (fired.value, tick.value?.resets ?? -1)
        }
        #expect(result.deadlines == [1_020, 1_040, 1_060, 1_080, 1_100, 1_500, 1_520].map { Instant.milliseconds($0) })
        #expect(result.resets == 1)
    }
}
