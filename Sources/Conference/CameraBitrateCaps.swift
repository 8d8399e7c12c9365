import Compositing

/// How much each camera needs to send, from what the room does with it (sans-IO, pure): a
/// camera is drawn no larger than its largest tile in the composite, so bits beyond what that
/// tile shows are wasted on the sender's uplink and the host's decoder. The host tells each
/// camera sender its cap with REMB (draft-alvestrand-rmcat-remb-03) where the answer agreed
/// `goog-remb` for the camera's m-line (`ParticipantInbound.setCameraBitrateCap`).
///
/// cap = clamp(tile width × tile height (pixels of the canvas) × fps × `bitsPerPixel`,
/// `minimum` … `maximum`), × `speakerFactor` for the active speaker's camera (clamped again):
/// a 640×360 tile at 30 fps is 553 kbit/s. A camera someone subscribes to (forwarded as sent,
/// not drawn) needs its full size: `maximum`. A camera in no tile and forwarded to nobody gets
/// `minimum`. Never above the receive path's own estimate when there is one.
public struct CameraBitrateRule: Sendable, Equatable {
    /// Bits per pixel per frame: 0.08 is about what libwebrtc gives VP8 for a 640×360 camera at
    /// 30 fps (its default maximum there is 800 kbit/s, with 0.1 at the low resolutions), a
    /// picture that looks clean once scaled into its tile.
    public var bitsPerPixel = 0.08
    /// The least any cap says (bit/s): a camera in a tiny tile, or in none, still sends a
    /// usable picture and can be shown at once when the layout changes.
    public var minimum = 100_000
    /// The most any cap says (bit/s): what browsers send a 720p camera at most; a subscribed
    /// camera gets this.
    public var maximum = 2_500_000
    /// The active speaker's camera gets this much more than its tile's size says (people look
    /// at it, and a speaker preset makes its tile the large one anyway).
    public var speakerFactor = 1.5
    /// REMB is soft state: a cap in force is sent again this often, and at once when it changes.
    public static let refreshInterval: Duration = .seconds(1)

    public init() {}

    /// The cap of one camera whose largest tile has `pixels` at `fps`: nil pixels when it is in
    /// no tile; `forwarded` when someone subscribes to it; `estimate` the receive path's own
    /// estimate (bit/s), when the host has one.
    public func cap(pixels: Int?, fps: Int, isSpeaker: Bool, forwarded: Bool, estimate: Int? = nil) -> Int {
        var cap: Int
        if forwarded {
            cap = maximum
        } else if let pixels {
            var bits = Double(max(0, pixels)) * Double(max(1, fps)) * bitsPerPixel
            if isSpeaker { bits *= speakerFactor }
            cap = Int(min(Double(maximum), max(Double(minimum), bits)))
        } else {
            cap = minimum
        }
        if let estimate { cap = min(cap, max(0, estimate)) }
        return cap
    }

    /// The cap of every camera in the room, by participant id. `cameras` are the participants
    /// sending a camera (id and identity, in joining order: the first guest of an identity is
    /// the one its tiles show); `layout` the template drawn now (its canvas gives the pixels);
    /// `speaker` the active speaker's identity; `forwarded` the ids whose camera someone
    /// subscribes to; `estimates` the receive path's estimates by id, where there are.
    public func caps(cameras: [(id: String, identity: String)], layout: TemplateDescription, speaker: String?,
                     forwarded: Set<String>, estimates: [String: Int] = [:]) -> [String: Int] {
        let largest = Self.largestCameraTiles(in: layout)
        var shownIdentities: Set<String> = []
        var caps: [String: Int] = [:]
        for camera in cameras {
            // Only the first guest of an identity is drawn (`Room.applyLayout`).
            let pixels = shownIdentities.insert(camera.identity).inserted ? largest[camera.identity]?.pixels : nil
            caps[camera.id] = cap(pixels: pixels, fps: layout.canvas.fps, isSpeaker: camera.identity == speaker,
                                  forwarded: forwarded.contains(camera.id), estimate: estimates[camera.id])
        }
        return caps
    }

    /// Each identity's camera tiles in `layout`: the widest one's width and the largest one's
    /// pixels (on the canvas).
    public static func largestCameraTiles(in layout: TemplateDescription) -> [String: (width: Int, pixels: Int)] {
        var largest: [String: (width: Int, pixels: Int)] = [:]
        for position in layout.positions where position.source == .camera {
            let width = max(0, Int((position.rect.width * Double(layout.canvas.width)).rounded()))
            let height = max(0, Int((position.rect.height * Double(layout.canvas.height)).rounded()))
            let known = largest[position.participant] ?? (0, 0)
            largest[position.participant] = (max(known.width, width), max(known.pixels, width * height))
        }
        return largest
    }
}
