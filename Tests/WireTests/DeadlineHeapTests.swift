import Testing
import Wire

@Suite struct DeadlineHeapTests {
    @Test func deadlineHeapPopsInDeadlineThenSchedulingOrder() {
        var heap = DeadlineHeap<UInt64>()
        var generator = SystemRandomNumberGenerator()
        var expected: [(Instant, UInt64)] = []
        for id in UInt64(1)...200 {
            let deadline = Instant.milliseconds(UInt64.random(in: 0...50, using: &generator))
            heap.push(deadline, id: id)
            expected.append((deadline, id))
        }
        expected.sort { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        var popped: [UInt64] = []
        while let (_, id) = heap.peekEntry() {
            popped.append(id)
            heap.pop()
        }
        #expect(popped == expected.map(\.1))
    }
}
