/// A network in memory (Linux netem's ideas): packets sent at `now` come out of
/// `receive(now:)` once their delay has passed, or never. Tests of sans-IO engines put it
/// between peers on a manual clock; `tessera serve` puts it on its own media socket when the
/// config asks (`testing.impair`), so real peers meet the same network. Seeded, so a run can be
/// replayed from its seed.
///
/// - loss: each packet is lost with probability `loss`, independently, or in bursts when
///   `burstLength` > 1 (a Gilbert–Elliott chain whose bad state loses every packet, with mean
///   stay `burstLength` packets and the same long-run loss);
/// - delay and jitter: each packet takes `delay` plus a uniform 0…`jitter`, so jitter reorders;
/// - reordering: besides, a packet is held back by `reorderDelay` with probability `reorder`;
/// - duplication: a delivered packet comes twice with probability `duplicate`.
public struct NetEm<Packet>: Sendable where Packet: Sendable {
    /// What the network does to packets.
    public typealias Impairment = NetworkImpairment

    /// What happened to the packets so far.
    public struct Counters: Sendable, Equatable {
        public var sent = 0
        public var lost = 0
        public var duplicated = 0
        public var delivered = 0
    }

    public var impairment: Impairment
    public private(set) var counters = Counters()
    private var generator: SplitMix64
    /// The Gilbert–Elliott chain's state: true while in a burst.
    private var inBurst = false
    /// Packets on the wire, with when they arrive and the order they were sent in (ties).
    private var inFlight: [(arrival: Instant, order: Int, packet: Packet)] = []
    private var sentOrder = 0

    public init(_ impairment: Impairment, seed: UInt64) {
        self.impairment = impairment
        generator = SplitMix64(seed: seed)
    }

    /// Puts `packet` on the wire at `now`; false when the network loses it.
    @discardableResult
    public mutating func send(_ packet: Packet, now: Instant) -> Bool {
        counters.sent += 1
        if isLost() {
            counters.lost += 1
            return false
        }
        enqueue(packet, now: now)
        if impairment.duplicate > 0, Double.random(in: 0..<1, using: &generator) < impairment.duplicate {
            counters.duplicated += 1
            enqueue(packet, now: now)
        }
        return true
    }

    /// The packets that have arrived by `now`, in arrival order.
    public mutating func receive(now: Instant) -> [Packet] {
        guard inFlight.contains(where: { $0.arrival <= now }) else { return [] }
        let due = inFlight.filter { $0.arrival <= now }.sorted { ($0.arrival, $0.order) < ($1.arrival, $1.order) }
        inFlight.removeAll { $0.arrival <= now }
        counters.delivered += due.count
        return due.map(\.packet)
    }

    /// When the next packet arrives; nil when none is on the wire.
    public var nextArrival: Instant? { inFlight.map(\.arrival).min() }

    private mutating func isLost() -> Bool {
        let loss = impairment.loss
        guard loss > 0 else { return false }
        guard impairment.burstLength > 1 else { return Double.random(in: 0..<1, using: &generator) < loss }
        // Leave the burst with probability 1/length; enter one at the rate that keeps the
        // long-run share of bad packets at `loss`.
        let leave = 1 / impairment.burstLength
        let enter = min(1, loss * leave / max(1e-9, 1 - loss))
        let draw = Double.random(in: 0..<1, using: &generator)
        inBurst = inBurst ? draw >= leave : draw < enter
        return inBurst
    }

    private mutating func enqueue(_ packet: Packet, now: Instant) {
        var delay = impairment.delay
        if impairment.jitter > .zero {
            delay += .nanoseconds(Int64.random(in: 0...impairment.jitter.nanosecondsClamped, using: &generator))
        }
        if impairment.reorder > 0, Double.random(in: 0..<1, using: &generator) < impairment.reorder {
            delay += impairment.reorderDelay
        }
        sentOrder += 1
        inFlight.append((now + delay, sentOrder, packet))
    }
}

/// What a `NetEm` does to packets.
public struct NetworkImpairment: Sendable, Equatable {
    public var loss: Double
    public var burstLength: Double
    public var delay: Duration
    public var jitter: Duration
    public var reorder: Double
    public var reorderDelay: Duration
    public var duplicate: Double

    public init(loss: Double = 0, burstLength: Double = 1, delay: Duration = .milliseconds(10), jitter: Duration = .zero,
                reorder: Double = 0, reorderDelay: Duration = .milliseconds(20), duplicate: Double = 0) {
        self.loss = loss
        self.burstLength = burstLength
        self.delay = delay
        self.jitter = jitter
        self.reorder = reorder
        self.reorderDelay = reorderDelay
        self.duplicate = duplicate
    }

    /// A clean network with `delay` each way.
    public static func clean(delay: Duration = .milliseconds(10)) -> NetworkImpairment { NetworkImpairment(delay: delay) }
}
