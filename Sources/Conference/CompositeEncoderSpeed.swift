import Compositing
import Wire

/// How much work a room's composite does per picture, chosen so that the room keeps its frame
/// rate on a host shared with other rooms. The frame rate is the config's or the template's
/// (docs/api.md): what gives way under load is first the encoder's effort, in steps of the VP8
/// version (profile) it codes, which decides its loop filter and prediction filters (RFC 6386
/// §9.1; every VP8 decoder takes all four), the one encoder setting measured to make the
/// composite cheaper (`tessera bench vp8-composite-speed`: libvpx's cpu-used beyond -6 is not);
/// last, on a host shared by rooms, the canvas itself: drawn and encoded at half its width and
/// height, a quarter of the pixels to draw, encode and decode, and each camera's tile then wants
/// a smaller simulcast layer (a quarter of the decoding too).
/// Sans-IO: encode times, the media loop's lateness and the host's load come in with the time.
///
/// The rule (docs/config.md, "Many rooms"), evaluated once a second:
/// - the room's *encode share* is the time its encoders spent encoding in the last second (every
///   encoding it runs, by the wall clock of their threads, so a machine short of cores shows as
///   longer encodes) over that second;
/// - one step faster when the encode share is over `fasterShare` (half a core), or the video tick
///   came on average more than `fasterLateness` of a frame interval late (the media loop is
///   behind), or the host's process uses more than `fasterHostLoad` of the machine's cores;
/// - ticks more than `severeLateness` (a whole frame interval) late on average take the
///   cheapest step the room may take at once (the loop far behind: rooms opened together on a
///   host that cannot hold them whole);
/// - the half-canvas step only when the host holds more than one room, and after
///   `halfCanvasPressedWindows` pressed seconds in a row at the step before it (a lone room keeps
///   the canvas its template asks; a room that loses the host to a neighbour's build for a
///   moment keeps it too); it steps back at once when the room is alone, and after a calm period
///   only when the host's load with this room's share of it four times larger (an equal part
///   of the load, drawn and encoded whole) would still be calm;
/// - one step slower (better pictures) after `calmPeriod` (10 s) in which every second had an
///   encode share under `slowerShare`, ticks on time and a host load under `slowerHostLoad`;
/// - a room starts at the step its canvas's pixel rate calls for (`startingStep`), or at the
///   cheapest step the host's other rooms run at when that is cheaper, or at the half canvas on a
///   host holding as many rooms as it has cores (`openingStep`, `startAt`).
public struct CompositeEncoderSpeed: Sendable, Equatable {
    /// One step: the VP8 profile and libvpx's cpu-used, the Opus complexity of the room's
    /// mixes (at most the configured one), which the media loop encodes, and whether the canvas
    /// is drawn at half its width and height.
    public struct Setting: Sendable, Equatable {
        public let profile: Int
        public let cpuUsed: Int
        public let mixComplexity: Int
        public let halvesCanvas: Bool

        public init(profile: Int, cpuUsed: Int, mixComplexity: Int = 5, halvesCanvas: Bool = false) {
            self.profile = profile
            self.cpuUsed = cpuUsed
            self.mixComplexity = mixComplexity
            self.halvesCanvas = halvesCanvas
        }
    }

    /// The steps, the best pictures for their bits first, each cheaper than the one before
    /// (a 1280x720 composite like a load room's, `tessera bench vp8-composite-speed`): profile 0
    /// (six-tap prediction, the normal loop filter) about 3.5 ms a picture, profile 1 (bilinear,
    /// the simple loop filter) about 2.4 ms, profile 3 (full-pixel chroma, no loop filter) about
    /// 1.7 ms, and cheaper to decode for every receiver too. cpu-used stays at -6, the measured
    /// best (`VP8Encoder.Configuration.cpuUsed`). A change of profile restarts the encoder, so its
    /// next frame is a key frame. The last step also encodes the mixes at Opus complexity 1
    /// (the media loop's largest cost after decoding the cameras: a room of four encodes 200 mix
    /// frames a second). The step after it halves the canvas (`drawnCanvas`).
    public static let steps = [Setting(profile: 0, cpuUsed: -6), Setting(profile: 1, cpuUsed: -6),
                               Setting(profile: 3, cpuUsed: -6, mixComplexity: 1),
                               Setting(profile: 3, cpuUsed: -6, mixComplexity: 1, halvesCanvas: true)]
    /// Pressed seconds in a row at the step before the half canvas that take a room to it.
    public static let halfCanvasPressedWindows = 3
    public static let fasterShare = 0.5
    public static let slowerShare = 0.25
    /// Of a frame interval.
    public static let fasterLateness = 0.5
    /// Of a frame interval: ticks this late on average take the cheapest step at once.
    public static let severeLateness = 1.0
    public static let slowerLateness = 0.25
    /// Of the machine's cores.
    public static let fasterHostLoad = 0.85
    public static let slowerHostLoad = 0.6
    public static let window: Duration = .seconds(1)
    public static let calmPeriod: Duration = .seconds(10)
    /// A canvas over this many pixels a second (1280×720 at 30 fps) starts one step faster, and
    /// one over four times that (above 1920×1080 at 60 fps) two.
    public static let startingPixelRate = 1280 * 720 * 30

    /// The step in `steps` in use now.
    public private(set) var step: Int
    /// Steps taken, faster and slower (for metrics).
    public private(set) var stepsFaster = 0
    public private(set) var stepsSlower = 0
    /// The last full second's encode share and mean tick lateness (of a frame interval).
    public private(set) var lastShare: Double?
    public private(set) var lastLateness: Double?

    private var windowStart: Instant?
    private var encodeTime: Duration = .zero
    private var lateness: Duration = .zero
    private var ticks = 0
    private var hostLoad: Double?
    /// Rooms open on the host (this one included).
    private var hostRooms = 1
    private var pressedWindows = 0
    private var calmSince: Instant?

    /// The setting of `step`.
    public var setting: Setting { Self.steps[step] }
    public var cpuUsed: Int { setting.cpuUsed }
    public var profile: Int { setting.profile }

    /// Starts at the step a canvas of `width` × `height` at `fps` calls for.
    public init(width: Int, height: Int, fps: Int) {
        step = Self.startingStep(width: width, height: height, fps: fps)
    }

    /// A room opened on a host whose rooms run at `step` starts there (when that is cheaper than
    /// its canvas's step): they measured the host, and a new room at the best pictures would
    /// push it over before its first second is judged.
    public mutating func startAt(atLeast step: Int) {
        guard windowStart == nil, step > self.step, Self.steps.indices.contains(step) else { return }
        self.step = step
    }

    /// The step a room opened on a host with rooms running at `otherRooms` steps starts at (at
    /// least; its canvas may ask a cheaper one): the cheapest of theirs (they measured the host);
    /// the half canvas once the host holds as many rooms as it has `cores`. Rooms opened together
    /// at their best pictures would all be pressed within seconds of each other, and every room's
    /// way down (new encoders, key frames to every receiver, each camera's next simulcast layer)
    /// would come at once, just when the machine has least to spare: on 2 cores, eight rooms
    /// opened within two seconds left the first three's sound 0.5-0.7 s late for an instant.
    /// The room goes back to the whole canvas after a calm period, as any room does.
    public static func openingStep(otherRooms: [Int], cores: Int) -> Int {
        otherRooms.count >= max(1, cores) ? steps.count - 1 : otherRooms.max() ?? 0
    }

    /// The first step for a canvas: 0 up to 1280×720 at 30 fps, 1 above, 2 above four times that.
    public static func startingStep(width: Int, height: Int, fps: Int) -> Int {
        let rate = width * height * fps
        return rate > 4 * startingPixelRate ? 2 : rate > startingPixelRate ? 1 : 0
    }

    /// An encoder of the room spent `duration` on one picture.
    public mutating func encoded(_ duration: Duration) {
        encodeTime += duration
    }

    /// A video tick ran `lateness` after its deadline.
    public mutating func ticked(lateness: Duration) {
        self.lateness += max(.zero, lateness)
        ticks += 1
    }

    /// The share of the machine's cores the host's process used over the last second or so
    /// (nil: not known), and how many rooms the host holds.
    public mutating func setHostLoad(_ load: Double?, rooms: Int = 1) {
        hostLoad = load
        hostRooms = rooms
    }

    /// The canvas this step draws and encodes for a template's `canvas`: half its width and
    /// height (even, for I420) on the half-canvas step when that is at least 320×180, else as
    /// asked.
    public func drawnCanvas(_ canvas: VideoSize) -> VideoSize {
        guard setting.halvesCanvas, canvas.width >= 640, canvas.height >= 360 else { return canvas }
        return VideoSize(width: canvas.width / 4 * 2, height: canvas.height / 4 * 2)
    }

    /// Ends a window when a second has passed since it began: applies the rule and starts the
    /// next. True when the step changed.
    @discardableResult
    public mutating func evaluate(now: Instant, frameInterval: Duration) -> Bool {
        guard let start = windowStart else {
            windowStart = now
            return false
        }
        let span = now - start
        guard span >= Self.window else { return false }
        let share = encodeTime.seconds / span.seconds
        let late = ticks == 0 || frameInterval <= .zero ? 0 : lateness.seconds / Double(ticks) / frameInterval.seconds
        lastShare = share
        lastLateness = late
        windowStart = now
        encodeTime = .zero
        lateness = .zero
        ticks = 0
        let pressed = share > Self.fasterShare || late > Self.fasterLateness || (hostLoad ?? 0) > Self.fasterHostLoad
        var calm = share < Self.slowerShare && late < Self.slowerLateness && (hostLoad ?? 0) < Self.slowerHostLoad
        if setting.halvesCanvas {
            // The whole canvas costs this room about four times its share of the host (its
            // share taken as an equal part of the load): back only when the host stays calm
            // with that, else the room would be pressed again in seconds, and again after every
            // calm period (lateness spikes each time).
            calm = calm && (hostLoad ?? 0) * (1 + 3 / Double(max(1, hostRooms))) < Self.slowerHostLoad
        }
        pressedWindows = pressed ? pressedWindows + 1 : 0
        if setting.halvesCanvas, hostRooms < 2 {
            // Alone on the host now: the canvas its template asks, at once.
            step -= 1
            stepsSlower += 1
            calmSince = nil
            return true
        }
        if pressed {
            calmSince = nil
            if late > Self.severeLateness {
                // The loop a whole frame behind (rooms opened together on a host that cannot
                // hold them whole): the cheapest step this room may take, at once; a step a
                // second would leave everyone's sound late for seconds.
                let cheapest = hostRooms >= 2 ? Self.steps.count - 1 : Self.steps.lastIndex { !$0.halvesCanvas } ?? 0
                if cheapest > step {
                    stepsFaster += cheapest - step
                    step = cheapest
                    pressedWindows = 0
                    return true
                }
            }
            guard step < Self.steps.count - 1 else { return false }
            if Self.steps[step + 1].halvesCanvas, hostRooms < 2 || pressedWindows < Self.halfCanvasPressedWindows { return false }
            step += 1
            stepsFaster += 1
            pressedWindows = 0
            return true
        }
        guard calm else {
            calmSince = nil
            return false
        }
        let since = calmSince ?? start
        calmSince = since
        guard now - since >= Self.calmPeriod, step > 0 else { return false }
        step -= 1
        stepsSlower += 1
        calmSince = now
        return true
    }
}
