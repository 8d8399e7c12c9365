import Wire

/// Who is speaking, from the audio levels participants send (RFC 6464, in -dBov) or the host
/// measures. Hysteresis keeps the big tile from flickering: a new speaker must be clearly louder
/// than the current one (or the current one silent) for `confirmation` in a row, and no switch
/// comes sooner than `minimumHold` after the last. Sans-IO: levels and time come in.
public struct ActiveSpeakerDetector: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Below this smoothed level (dBov) a participant counts as silent.
        public var speakingThreshold: Double = -50
        /// How much louder (dB) a challenger must be than a speaking current speaker.
        public var switchMargin: Double = 6
        /// How long a challenger must lead before it takes over.
        public var confirmation: Duration = .milliseconds(400)
        /// The shortest time a speaker keeps the tile.
        public var minimumHold: Duration = .milliseconds(1500)
        /// Levels this old count as silence (a participant stopped sending levels).
        public var staleAfter: Duration = .seconds(1)
        /// Smoothing per update: the weight of the new level (attack), and of a lower one (release).
        public var attack = 0.5
        public var release = 0.1

        public init() {}
    }

    private struct Level: Sendable {
        var smoothed: Double
        var updated: Instant
    }

    public var configuration: Configuration
    /// The current active speaker.
    public private(set) var current: String?
    private var levels: [String: Level] = [:]
    private var challenger: (name: String, since: Instant)?
    private var lastSwitch: Instant?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Takes one level reading: 0 is the loudest, -127 silence (RFC 6464 §3 in -dBov).
    public mutating func update(participant: String, level: Double, now: Instant) {
        let level = max(-127, min(0, level))
        // In place, one lookup: a room of hundreds updates every member every 20 ms.
        guard let index = levels.index(forKey: participant) else {
            levels[participant] = Level(smoothed: level, updated: now)
            return
        }
        let weight = level > levels.values[index].smoothed ? configuration.attack : configuration.release
        levels.values[index].smoothed += weight * (level - levels.values[index].smoothed)
        levels.values[index].updated = now
    }

    /// Forgets a participant who left; if it was the speaker, nobody is until someone speaks.
    public mutating func remove(participant: String) {
        levels[participant] = nil
        if current == participant { current = nil }
        if challenger?.name == participant { challenger = nil }
    }

    /// Decides at `now`; returns the new speaker when it changed.
    public mutating func evaluate(now: Instant) -> String? {
        func loudness(of entry: Level) -> Double? {
            now - entry.updated < configuration.staleAfter && entry.smoothed >= configuration.speakingThreshold ? entry.smoothed : nil
        }
        func loudness(_ name: String?) -> Double? { name.flatMap { levels[$0] }.flatMap(loudness(of:)) }
        let loudest = levels.compactMap { name, entry in loudness(of: entry).map { (name, $0) } }
            .max { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 > $1.0) }
        guard let (candidate, candidateLevel) = loudest, candidate != current else {
            challenger = nil
            return nil
        }
        if let currentLevel = loudness(current), candidateLevel < currentLevel + configuration.switchMargin {
            challenger = nil
            return nil
        }
        if challenger?.name != candidate { challenger = (candidate, now) }
        // An empty tile (nobody yet, or the speaker left) is taken at once; a held one is not.
        if current != nil {
            guard let since = challenger?.since, now - since >= configuration.confirmation,
                  lastSwitch.map({ now - $0 >= configuration.minimumHold }) ?? true else { return nil }
        }
        current = candidate
        lastSwitch = now
        challenger = nil
        return candidate
    }
}
