import Wire

/// How hard the mixes' Opus encoders work, following the host's load (docs/config.md): a
/// loaded media loop makes every room's audio late, and an encoder at a lower complexity costs
/// less (libopus: complexity 0 about a third of complexity 5 a frame) at a small loss of quality
/// at 32 kbit/s.
///
/// Sans-IO: fed the loop's busy fraction once a second.
/// - Busy at `loadedFraction` or more: two steps down (to 0 at the least), at once.
/// - Busy under `calmFraction` for `calmTime`: one step back up, towards the configured one.
/// - Between: held, so that it does not hunt.
public struct AudioEncoderLoadRule: Sendable, Equatable {
    public static let loadedFraction = 0.8
    public static let calmFraction = 0.5
    public static let calmTime: Duration = .seconds(5)

    /// The complexity configured: the most it goes back up to.
    public let configured: Int
    /// The complexity now.
    public private(set) var complexity: Int
    private var calmSince: Instant?

    public init(configured: Int) {
        self.configured = configured
        complexity = configured
    }

    /// Takes the loop's busy fraction over the last second at `now`; returns the complexity.
    @discardableResult
    public mutating func update(busy: Double, now: Instant) -> Int {
        if busy >= Self.loadedFraction {
            complexity = max(0, complexity - 2)
            calmSince = nil
        } else if busy < Self.calmFraction {
            let since = calmSince ?? now
            if now - since >= Self.calmTime, complexity < configured {
                complexity += 1
                calmSince = now
            } else {
                calmSince = since
            }
        } else {
            calmSince = nil
        }
        return complexity
    }
}
