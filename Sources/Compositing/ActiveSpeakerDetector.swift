import Wire

/// Who is speaking, from the audio levels participants send (RFC 6464, in -dBov) or the host
/// measures. Hysteresis keeps the big tile from flickering: a new speaker must be clearly louder
/// than the current one (or the current one silent) for `confirmation` in a row, and no switch
/// comes sooner than `minimumHold` after the last. Sans-IO: levels and time come in. `Name`
/// names a participant (a room uses its members' serials, cheap to hash for hundreds of them
/// every 20 ms); between equally loud ones the lower name wins. Inlinable, so that a room's use
/// is specialized for its `Name` (unspecialized, each dictionary step goes through witness tables).
public struct ActiveSpeakerDetector<Name: Hashable & Comparable & Sendable>: Sendable {
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

    @usableFromInline
    struct Level: Sendable {
        @usableFromInline var smoothed: Double
        @usableFromInline var updated: Instant
        @inlinable init(smoothed: Double, updated: Instant) {
            self.smoothed = smoothed
            self.updated = updated
        }
    }

    public var configuration: Configuration
    /// The current active speaker.
    public var current: Name? { speaker }
    @usableFromInline var speaker: Name?
    @usableFromInline var levels: [Name: Level] = [:]
    @usableFromInline var challenger: (name: Name, since: Instant)?
    @usableFromInline var lastSwitch: Instant?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Takes one level reading: 0 is the loudest, -127 silence (RFC 6464 §3 in -dBov).
    @inlinable
    public mutating func update(participant: Name, level: Double, now: Instant) {
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
    @inlinable
    public mutating func remove(participant: Name) {
        levels[participant] = nil
        if speaker == participant { speaker = nil }
        if challenger?.name == participant { challenger = nil }
    }

    /// Decides at `now`; returns the new speaker when it changed.
    @inlinable
    public mutating func evaluate(now: Instant) -> Name? {
        func loudness(of entry: Level) -> Double? {
            // The level first: most of a room is silent, and the time is the dearer test.
            entry.smoothed >= configuration.speakingThreshold && now - entry.updated < configuration.staleAfter ? entry.smoothed : nil
        }
        func loudness(_ name: Name?) -> Double? { name.flatMap { levels[$0] }.flatMap(loudness(of:)) }
        var loudest: (name: Name, level: Double)?
        for (name, entry) in levels {
            guard let level = loudness(of: entry) else { continue }
            if let best = loudest, level < best.level || (level == best.level && name > best.name) { continue }
            loudest = (name, level)
        }
        guard let (candidate, candidateLevel) = loudest, candidate != speaker else {
            challenger = nil
            return nil
        }
        if let currentLevel = loudness(speaker), candidateLevel < currentLevel + configuration.switchMargin {
            challenger = nil
            return nil
        }
        if challenger?.name != candidate { challenger = (candidate, now) }
        // An empty tile (nobody yet, or the speaker left) is taken at once; a held one is not.
        if speaker != nil {
            guard let since = challenger?.since, now - since >= configuration.confirmation,
                  lastSwitch.map({ now - $0 >= configuration.minimumHold }) ?? true else { return nil }
        }
        speaker = candidate
        lastSwitch = now
        challenger = nil
        return candidate
    }
}
