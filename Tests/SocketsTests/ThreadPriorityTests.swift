import Foundation
import Sockets
import Testing

/// `ThreadPriority`: a thread made nicer is nicer, and the others are not.
@Suite struct ThreadPriorityTests {
    @Test func aThreadMadeNicerLeavesTheOthersAlone() {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var values: (first: Int?, second: Int?) = (nil, nil)
        let thread = Thread {
            values.first = ThreadPriority.reniceCurrentThread(by: 3)
            values.second = ThreadPriority.reniceCurrentThread(by: 0)
            done.signal()
        }
        thread.start()
        done.wait()
        let mine = ThreadPriority.reniceCurrentThread(by: 0)
        #expect(values.first != nil && values.first == values.second, "the thread kept its nice value: \(values)")
        if let first = values.first, let mine { #expect(first == min(19, mine + 3)) }
    }
}
