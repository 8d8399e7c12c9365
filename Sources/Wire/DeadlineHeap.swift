/// A binary min-heap of (deadline, id): the earliest deadline first, ties in `ID` order (an
/// event loop's timers in scheduling order, a room's participants in joining order). Push and
/// pop are O(log n), so a schedule of thousands costs no walk over all of them. Inlinable, so
/// that each user's `ID` is specialized (generic code called across modules is not).
public struct DeadlineHeap<ID: Comparable> {
    @usableFromInline var entries: [(deadline: Instant, id: ID)] = []

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { entries.isEmpty }
    @inlinable public func peek() -> Instant? { entries.first?.deadline }
    @inlinable public func peekEntry() -> (Instant, ID)? { entries.first.map { ($0.deadline, $0.id) } }

    @inlinable static func less(_ a: (deadline: Instant, id: ID), _ b: (deadline: Instant, id: ID)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    @inlinable public mutating func push(_ deadline: Instant, id: ID) {
        entries.append((deadline, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable public mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count, Self.less(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, Self.less(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    @inlinable public mutating func removeAll() { entries.removeAll() }
}
