import Conference
import RTP
import Testing
import Wire

/// The simulcast layer a camera's tile gets: the nearest at or above the tile's width, switched
/// only at a key frame of the new layer, which is asked for once per change.
@Suite struct SimulcastLayerChoiceTests {
    static let sizes: [(ssrc: SSRC, width: UInt16, height: UInt16)] = [(11, 160, 90), (12, 320, 180), (13, 640, 360)]

    /// One packet of each layer at `now` (a key frame when `key`), answers in layer order.
    static func round(_ choice: inout SimulcastLayerChoice, now: Instant, key: Bool) -> [(SimulcastLayerChoice.Action, SSRC?)] {
        sizes.enumerated().map { index, layer in
            let size = key ? VP8KeyFrameSize(width: layer.width, height: layer.height) : nil
            let answer = choice.packet(layer: index, ssrc: layer.ssrc, keyFrame: size, now: now)
            return (answer.action, answer.askKeyFrameOf)
        }
    }

    static let start = Instant(nanoseconds: 1_000_000_000)

    @Test func theTileWidthPicksTheLayerAndSwitchesWaitForItsKeyFrame() {
        var choice = SimulcastLayerChoice(rids: ["q", "h", "f"])
        choice.wantedWidth = 300
        // The first key frames tell the sizes, one by one: the 160 layer is the best known at
        // its own, then the 320-wide one, the nearest above 300.
        let first = Self.round(&choice, now: Self.start, key: true)
        #expect(choice.decodedRID == "h")
        #expect(first.map(\.0) == [.switchLayer, .switchLayer, .drop])
        // A tile of 128 px (a grid of 100 on 1280): the smallest layer, at its next key frame,
        // asked for once; until then the 320 layer goes on.
        choice.wantedWidth = 128
        var now = Self.start + .milliseconds(33)
        let waiting = Self.round(&choice, now: now, key: false)
        #expect(waiting.map(\.0) == [.drop, .decode, .drop])
        #expect(waiting.compactMap(\.1) == [11], "one key frame request, of the wanted layer")
        now = now + .milliseconds(33)
        #expect(Self.round(&choice, now: now, key: false).compactMap(\.1).isEmpty, "asked once")
        now = now + .milliseconds(33)
        let switched = Self.round(&choice, now: now, key: true)
        #expect(switched.map(\.0) == [.switchLayer, .drop, .drop])
        #expect(choice.decodedRID == "q" && choice.switches == 3)
        // A tile wider than every layer: the largest. Not shown: the smallest.
        choice.wantedWidth = 1280
        #expect(choice.wanted(now: now) == 2)
        choice.wantedWidth = nil
        #expect(choice.wanted(now: now) == 0)
    }

    /// The sender drops its top layer (its bandwidth fell, or a REMB capped it): a tile that
    /// wanted it gets the largest layer still sent.
    @Test func aLayerThatStoppedIsNotWanted() {
        var choice = SimulcastLayerChoice(rids: ["q", "h", "f"])
        choice.wantedWidth = 640
        _ = Self.round(&choice, now: Self.start, key: true)
        #expect(choice.decodedRID == "f")
        var now = Self.start
        for _ in 0..<40 {
            now = now + .milliseconds(33)
            _ = choice.packet(layer: 0, ssrc: 11, keyFrame: nil, now: now)
            _ = choice.packet(layer: 1, ssrc: 12, keyFrame: nil, now: now)
        }
        #expect(choice.wanted(now: now) == 1)
        #expect(choice.packet(layer: 1, ssrc: 12, keyFrame: VP8KeyFrameSize(width: 320, height: 180), now: now).action == .switchLayer)
        #expect(choice.decodedRID == "h")
    }

    /// Before any key frame tells a size, the first layer that sends is decoded from its key frame.
    @Test func beforeSizesAreKnownTheFirstLayerSendingIsTaken() {
        var choice = SimulcastLayerChoice(rids: ["q", "h", "f"])
        choice.wantedWidth = 640
        #expect(choice.packet(layer: 2, ssrc: 13, keyFrame: nil, now: Self.start).action == .drop)
        #expect(choice.packet(layer: 7, ssrc: 99, keyFrame: nil, now: Self.start).action == .drop, "no such layer")
        #expect(choice.packet(layer: 2, ssrc: 13, keyFrame: VP8KeyFrameSize(width: 640, height: 360), now: Self.start).action == .switchLayer)
    }
}
