import RTP
import Wire

/// Which simulcast layer of a camera the host decodes (RFC 8853; issue: adaptive stream): the
/// layer nearest the camera's tile, and a switch only at a key frame of the new layer, so no
/// broken picture is shown. Sans-IO: each packet of the camera's layers comes in with the time,
/// and the answer says what to do with it.
///
/// Layer sizes are read from each layer's key frames (the VP8 frame header carries the picture
/// size, RFC 6386 §9.1), so nothing is assumed of the rids' names or order. The wanted layer is
/// the smallest whose width is at least 3/4 of the tile's (`wantedWidth`): the nearest, scaled
/// up by at most 4/3 (a 213-pixel tile of a 36-guest grid takes the 160 layer, not the 320
/// one, which would cost four times the decoding), else the largest; only layers
/// that sent within `activeWindow` count (a sender drops its upper layers when its bandwidth
/// falls, or when a REMB caps it). While the wanted layer differs from the decoded one, the
/// decoded one goes on being decoded and a key frame of the wanted one is asked for, once per
/// change (the PLI itself is repeated and paced by `PeerReceiver`).
public struct SimulcastLayerChoice: Sendable {
    public struct Layer: Sendable, Equatable {
        public var rid: String
        public var ssrc: SSRC?
        /// The picture size its last key frame had.
        public var width: Int?
        public var height: Int?
        var lastPacket: Instant?
    }

    /// What to do with a packet of one of the layers.
    public enum Action: Equatable, Sendable {
        /// It belongs to the layer being decoded.
        case decode
        /// It begins a key frame of the wanted layer: decoding moves to that layer from it.
        case switchLayer
        /// Not decoded.
        case drop
    }

    /// A layer may be this much narrower than its tile (scaled up by at most 4/3).
    public static let coverage = 0.75
    /// A layer that sent nothing for this long is not offered.
    public static let activeWindow: Duration = .seconds(1)

    public private(set) var layers: [Layer]
    /// The layer being decoded, if any.
    public private(set) var decoded: Int?
    /// The width of the camera's largest tile (pixels); nil: not shown (the smallest layer).
    public var wantedWidth: Int?
    /// The layer a key frame was last asked of.
    private var askedFor: Int?
    /// Layer switches so far.
    public private(set) var switches = 0

    public init(rids: [String]) {
        layers = rids.map { Layer(rid: $0) }
    }

    /// The rid being decoded.
    public var decodedRID: String? { decoded.map { layers[$0].rid } }

    /// The layer to decode at `now`: among those sending, the smallest whose width is at least
    /// `coverage` of `wantedWidth` (the smallest of all when the camera is not shown), else the
    /// largest; while
    /// no sending layer's size is known, the decoded one, or the first sending.
    public func wanted(now: Instant) -> Int? {
        // One pass, no allocation: it runs for every packet of the camera.
        var firstSending: Int?, decodedSending = false
        var smallest: (index: Int, width: Int)?, largest: (index: Int, width: Int)?, covering: (index: Int, width: Int)?
        let threshold = wantedWidth.map { Self.coverage * Double($0) }
        for index in layers.indices where isSending(index, now: now) {
            if firstSending == nil { firstSending = index }
            if index == decoded { decodedSending = true }
            guard let width = layers[index].width else { continue }
            if smallest.map({ width < $0.width }) ?? true { smallest = (index, width) }
            if largest.map({ width >= $0.width }) ?? true { largest = (index, width) }
            if let threshold, Double(width) >= threshold, covering.map({ width < $0.width }) ?? true { covering = (index, width) }
        }
        guard let smallest, let largest else { return decodedSending ? decoded : firstSending }
        guard wantedWidth != nil else { return smallest.index }
        return (covering ?? largest).index
    }

    /// Takes a packet of layer `layer` (its SSRC, and the key frame size when it begins one).
    /// Returns what to do with it, and an SSRC to ask a key frame of (once per change of the
    /// wanted layer).
    public mutating func packet(layer: Int, ssrc: SSRC, keyFrame: VP8KeyFrameSize?, now: Instant) -> (action: Action, askKeyFrameOf: SSRC?) {
        guard layers.indices.contains(layer) else { return (.drop, nil) }
        layers[layer].ssrc = ssrc
        layers[layer].lastPacket = now
        if let keyFrame {
            layers[layer].width = Int(keyFrame.width)
            layers[layer].height = Int(keyFrame.height)
        }
        let target = wanted(now: now)
        if let target, target != decoded, layer == target, keyFrame != nil {
            decoded = target
            askedFor = nil
            if switches < Int.max { switches += 1 }
            return (.switchLayer, nil)
        }
        var ask: SSRC?
        if let target, target != decoded, askedFor != target, let targetSSRC = layers[target].ssrc {
            askedFor = target
            ask = targetSSRC
        }
        return (layer == decoded ? .decode : .drop, ask)
    }

    /// Whether layer `index` sent within `activeWindow` of `now`.
    public func isSending(_ index: Int, now: Instant) -> Bool {
        layers.indices.contains(index) && (layers[index].lastPacket.map { now - $0 <= Self.activeWindow } ?? false)
    }

    /// The SSRCs of the layers learned so far.
    public var ssrcs: [SSRC] { layers.compactMap(\.ssrc) }
}
