import Testing
import Wire

@Suite struct FIFOQueueTests {
    @Test func elementsComeOutInTheOrderTheyWentIn() {
        var queue = FIFOQueue<Int>()
        #expect(queue.popFirst() == nil)
        var popped: [Int] = []
        for round in 0..<5 {
            for value in 0..<(100 * (round + 1)) { queue.append(round * 1000 + value) }
            for _ in 0..<(50 * (round + 1)) { popped.append(queue.popFirst() ?? -1) }
        }
        while let value = queue.popFirst() { popped.append(value) }
        let expected = (0..<5).flatMap { round in (0..<(100 * (round + 1))).map { round * 1000 + $0 } }
        #expect(popped == expected)
        #expect(queue.isEmpty && queue.count == 0)
    }
}
