import Media
import Wire

/// Decode once, check many: the mixes the participants receive, each distinct stream of Opus
/// packets decoded once and measured once.
///
/// The host encodes one mix for everyone who hears the same people, so most participants
/// receive byte for byte the same packets. A stream here is named by its last two packets
/// (`Key`): participants whose last two packets are the same bytes hear the same audio, and
/// share one decode and one measurement. Each entry keeps the decoder that decoded its
/// stream so far; the next packet of the stream is decoded by a copy of it (`OpusDecoder.copy`),
/// so that two participants whose streams part (one moves to another encoder of the host) each
/// go on from the right state. A participant whose bytes differ from everyone else's (its own
/// mix, or a mix the host got wrong) is decoded on its own chain: nothing is assumed of what it
/// should have received. Loop thread only.
final class SharedMixDecoding {
    /// A stream's last two packets.
    struct Key: Hashable {
        let previous: [UInt8]
        let payload: [UInt8]
    }

    /// What one mix packet holds: its level (dBFS), each speaker's share of its energy, and the
    /// sound (where a tone starts in it is timed to the sample).
    struct Heard {
        let level: Double
        let fractions: [Double]
        let samples: [Int16]
    }

    private final class Entry {
        let heard: Heard
        let decoder: OpusDecoder
        var lastUsed: Instant
        init(heard: Heard, decoder: OpusDecoder, lastUsed: Instant) {
            self.heard = heard
            self.decoder = decoder
            self.lastUsed = lastUsed
        }
    }

    /// Entries unused this long are dropped: every participant of a stream reads its packet
    /// within one burst of the loop, far sooner than this.
    static let retention: Duration = .milliseconds(500)

    private let meter: ToneMeter
    private var entries: [Key: Entry] = [:]
    private var lastEviction: Instant?
    /// Packets decoded, and packets whose decode and measurement were shared.
    private(set) var decodes = 0
    private(set) var shared = 0

    /// Measures the speakers' `frequencies` in every mix.
    init(frequencies: [Double]) {
        meter = ToneMeter(frequencies: frequencies)
    }

    /// What `payload` holds for a participant whose stream so far is `previous` (nil at its
    /// start): the key of its stream now, and what it hears; nil when the packet does not decode.
    func hear(_ payload: [UInt8], after previous: Key?, now: Instant) -> (key: Key, heard: Heard)? {
        evictIfDue(now: now)
        let key = Key(previous: previous?.payload ?? [], payload: payload)
        if let entry = entries[key] {
            entry.lastUsed = now
            shared += 1
            return (key, entry.heard)
        }
        let decoder: OpusDecoder
        do {
            decoder = try previous.flatMap { entries[$0] }?.decoder.copy() ?? OpusDecoder(channels: 1)
        } catch {
            return nil
        }
        guard let frame = try? decoder.decode(payload) else { return nil }
        decodes += 1
        let (level, fractions) = meter.measure(frame.samples)
        let heard = Heard(level: level, fractions: fractions, samples: frame.samples)
        entries[key] = Entry(heard: heard, decoder: decoder, lastUsed: now)
        return (key, heard)
    }

    private func evictIfDue(now: Instant) {
        if let lastEviction, now - lastEviction < Self.retention { return }
        lastEviction = now
        entries = entries.filter { now - $0.value.lastUsed < Self.retention }
    }
}
