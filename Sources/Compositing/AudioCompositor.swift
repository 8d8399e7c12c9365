import Media
import Wire

/// Mixes audio tracks into one output track, one 20 ms frame per `tick(now:)`: the room's mix
/// for viewers and recorders. (Each guest's own "everyone but me" mix is `MixMinus`.)
///
/// The seed's semantics hold exactly:
/// - `outputTrack` is nil until `start()`; every `start()` makes a new output track and ends the
///   old one, which sends nothing more.
/// - A track added before `start()` is never mixed, even if added again after `start()`: the
///   compositor remembers it (weakly) and refuses it for good.
/// - `stop()` drops every track and ends the output track.
///
/// Tracks are held weakly (a compositor never keeps a participant's track alive) and read through
/// this compositor's own `AudioTrackReader`, so other consumers of the same track are unaffected.
/// Mixing is `MixBus`'s (the host's per-guest mixes use it too): it sums in Int32 and ends with a
/// `SoftLimiter`, so loud sources are turned down, never
/// wrapped or clipped flat. Sans-IO: the host's loop (or a manual clock) calls `tick(now:)`
/// every 20 ms. Confined to its room's loop.
public final class AudioCompositor {
    /// The tick interval: one 20 ms frame is mixed per tick.
    public static let tickInterval: Duration = .milliseconds(20)

    /// Names the compositor's output tracks ("<id>/mix/1", "<id>/mix/2", … one per `start()`).
    public let id: String
    /// 1 (mono) or 2 (stereo) in the output.
    public let channels: Int
    /// When true, a running compositor sends a frame every tick, silence while no track sends;
    /// when false, it sends only in ticks where at least one track had audio.
    public var autoOutputSilentBuffer = false
    /// Between `start()` and `stop()`.
    public private(set) var isRunning = false
    /// Where the mix goes: nil until `start()`, a new track on each `start()`.
    public private(set) var outputTrack: AudioTrack?

    private var inputs: [AudioTrackReader] = []
    /// Tracks added while stopped: never mixed (weak references; freed ones drop out).
    private var refused: [WeakAudioTrack] = []
    private var starts = 0
    private var limiter = SoftLimiter()
    /// The tick's sum: the same mixing as the host's per-guest mixes.
    private var bus: MixBus

    /// A stopped compositor making `channels`-channel mixes.
    public init(id: String = "audio", channels: Int = 1) {
        precondition(channels == 1 || channels == 2, "mono or stereo")
        self.id = id
        self.channels = channels
        bus = MixBus(channels: channels)
    }

    /// Starts mixing into a new `outputTrack`; the previous output track (if any) ends. Calling it
    /// while running keeps the mixed tracks and only replaces the output track.
    public func start() {
        outputTrack?.end()
        starts += 1
        outputTrack = AudioTrack(id: "\(id)/mix/\(starts)", channels: channels)
        limiter = SoftLimiter()
        isRunning = true
    }

    /// Stops: drops every track and ends the output track (`outputTrack` stays readable as an
    /// ended track until the next `start()`).
    public func stop() {
        inputs = []
        outputTrack?.end()
        isRunning = false
    }

    /// Mixes `track` from the next tick on, if the compositor is running and the track is live.
    /// A track added while stopped is remembered and never mixed, even if added again later.
    public func addTrack(_ track: AudioTrack) {
        refused.removeAll { $0.track == nil }
        guard isRunning else {
            if !refused.contains(where: { $0.track === track }) { refused.append(WeakAudioTrack(track: track)) }
            return
        }
        guard track.readyState == .live, track !== outputTrack,
              !refused.contains(where: { $0.track === track }),
              !inputs.contains(where: { $0.track === track }) else { return }
        inputs.append(track.makeReader())
    }

    /// Stops mixing `track` from the next tick on.
    public func removeTrack(_ track: AudioTrack) {
        inputs.removeAll { $0.track === track }
    }

    /// The tracks being mixed (live and not yet freed), in the order they were added.
    public var tracks: [AudioTrack] {
        inputs.compactMap { reader in reader.track.flatMap { $0.readyState == .live ? $0 : nil } }
    }

    /// Mixes one 20 ms frame from each mixed track that has one waiting (muted tracks are read
    /// past, not mixed) and pushes the limited mix to `outputTrack`, stamped `now`. Tracks that
    /// ended or were freed drop out. Does nothing while stopped.
    public func tick(now: Instant) {
        guard isRunning, let outputTrack else { return }
        inputs.removeAll { $0.track == nil || $0.track?.readyState == .ended }
        bus.clear()
        // Each reader adds its next frame straight into the sum: no copy per track.
        var inputs = self.inputs
        let contributed = bus.addInPlace { sum, channels in
            var contributed = false
            for index in inputs.indices {
                if inputs[index].track?.isMuted == true {
                    _ = inputs[index].skipNextFrame()
                } else if inputs[index].addNextFrame(into: sum, channels: channels) {
                    contributed = true
                }
            }
            return contributed
        }
        self.inputs = inputs
        guard contributed || autoOutputSilentBuffer else { return }
        outputTrack.push(bus.mix(without: [], limiter: &limiter, timestamp: now), now: now)
    }
}

/// A weak reference to a track, for lists that must not keep tracks alive.
struct WeakAudioTrack {
    weak var track: AudioTrack?
}
