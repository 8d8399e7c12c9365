/// A first-in first-out queue with O(1) amortized `popFirst` (an array's `removeFirst` moves
/// every element): engines queue datagrams and events in it between the shell's polls.
public struct FIFOQueue<Element>: Sendable where Element: Sendable {
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    @inlinable public var isEmpty: Bool { head == storage.count }
    @inlinable public var count: Int { storage.count - head }

    @inlinable public mutating func append(_ element: Element) { storage.append(element) }

    @inlinable public mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }
}
