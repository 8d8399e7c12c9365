import Compositing
import Testing
import Wire

@Suite struct LayoutPresetTests {
    @Test func theGridFollowsJoinsWithEqualTilesAndNoOverlap() {
        for count in 1...16 {
            let people = (0..<count).map { "p\($0)" }
            let positions = LayoutPreset.grid.positions(participants: people, activeSpeaker: nil)
            #expect(positions.map(\.participant) == people)
            let rects = positions.map(\.rect)
            #expect(rects.allSatisfy { $0.x >= 0 && $0.y >= 0 && $0.x + $0.width <= 1.000001 && $0.y + $0.height <= 1.000001 })
            #expect(Set(rects.map(\.width)).count == 1 && Set(rects.map(\.height)).count == 1, "equal tiles for \(count)")
            for (i, a) in rects.enumerated() {
                for b in rects[(i + 1)...] {
                    let overlaps = a.x < b.x + b.width - 1e-9 && b.x < a.x + a.width - 1e-9 && a.y < b.y + b.height - 1e-9 && b.y < a.y + a.height - 1e-9
                    #expect(!overlaps)
                }
            }
        }
        #expect(LayoutPreset.grid.positions(participants: ["a", "b", "c", "d"], activeSpeaker: nil).map(\.rect.width) == [0.5, 0.5, 0.5, 0.5])
    }

    @Test func theSpeakerLayoutPutsTheActiveSpeakerLarge() {
        let positions = LayoutPreset.speaker.positions(participants: ["a", "b", "c"], activeSpeaker: "c")
        #expect(positions.first?.participant == "c")
        #expect(positions.first?.rect.height == 0.75)
        #expect(positions.dropFirst().map(\.participant) == ["a", "b"])
        #expect(positions.dropFirst().allSatisfy { $0.rect.y == 0.75 })
        // Nobody speaking: the first to join is large.
        #expect(LayoutPreset.speaker.positions(participants: ["a", "b"], activeSpeaker: nil).first?.participant == "a")
    }

    @Test func pipAndSideBySideShowTwoAndAScreenShareTakesTheMainTile() {
        let pip = LayoutPreset.pip.positions(participants: ["a", "b", "c"], activeSpeaker: "b")
        #expect(pip.map(\.participant) == ["b", "a"])
        #expect(pip[0].rect == .full && pip[1].rect.width == 0.25)
        let sides = LayoutPreset.sideBySide.positions(participants: ["a", "b"], activeSpeaker: nil)
        #expect(sides.map(\.rect.width) == [0.5, 0.5] && sides.allSatisfy { $0.contentMode == .fit })
        let sharing = LayoutPreset.speaker.positions(participants: ["a", "b"], activeSpeaker: "a", screenSharer: "b")
        #expect(sharing.first?.participant == "b" && sharing.first?.source == .screen && sharing.first?.contentMode == .fit)
        // The grid gives a share the main tile too; the strip holds every camera, the sharer's too.
        for preset in [LayoutPreset.grid, .speaker] {
            let shared = preset.positions(participants: ["a", "b", "c"], activeSpeaker: "a", screenSharer: "b")
            #expect(shared.map(\.participant) == ["b", "a", "b", "c"] && shared.map(\.source) == [.screen, .camera, .camera, .camera])
        }
    }
}

@Suite struct ActiveSpeakerDetectorTests {
    let start = Instant.milliseconds(10_000)

    /// Feeds levels every 20 ms for `milliseconds`, returning every change.
    private func run(_ detector: inout ActiveSpeakerDetector<String>, from: Int, milliseconds: Int, levels: [String: Double]) -> [String] {
        var changes: [String] = []
        for ms in stride(from: from, to: from + milliseconds, by: 20) {
            let now = start + .milliseconds(Int64(ms))
            for (name, level) in levels { detector.update(participant: name, level: level, now: now) }
            if let change = detector.evaluate(now: now) { changes.append(change) }
        }
        return changes
    }

    @Test func theLoudSpeakerTakesTheTileAndABriefInterruptionDoesNot() {
        var detector = ActiveSpeakerDetector<String>()
        #expect(run(&detector, from: 0, milliseconds: 1000, levels: ["alice": -20, "bob": -90]) == ["alice"])
        // Bob coughs for 200 ms: shorter than the confirmation, no switch.
        #expect(run(&detector, from: 1000, milliseconds: 200, levels: ["alice": -90, "bob": -10]).isEmpty)
        // Bob talks on, alice is quiet: he takes over once.
        #expect(run(&detector, from: 1200, milliseconds: 2000, levels: ["alice": -90, "bob": -15]) == ["bob"])
        #expect(detector.current == "bob")
    }

    @Test func twoTalkingAtSimilarLevelsDoNotFlicker() {
        var detector = ActiveSpeakerDetector<String>()
        var changes = run(&detector, from: 0, milliseconds: 600, levels: ["alice": -20, "bob": -90])
        // Alternating small leads, within the margin, for 5 s.
        for step in 0..<25 {
            let aliceLouder = step % 2 == 0
            changes += run(&detector, from: 600 + step * 200, milliseconds: 200,
                           levels: ["alice": aliceLouder ? -18 : -22, "bob": aliceLouder ? -22 : -18])
        }
        #expect(changes == ["alice"])
    }

    @Test func aSpeakerWhoLeavesGivesUpTheTile() {
        var detector = ActiveSpeakerDetector<String>()
        _ = run(&detector, from: 0, milliseconds: 600, levels: ["alice": -20])
        detector.remove(participant: "alice")
        #expect(detector.current == nil)
        #expect(run(&detector, from: 600, milliseconds: 600, levels: ["bob": -25]) == ["bob"])
    }
}
