import Compositing
import Conference
import Testing
import Wire

/// The rule that picks a room's composite encoder speed (`CompositeEncoderSpeed`), on a manual
/// clock: a second at a time, with encode times, tick lateness and host load as given.
@Suite struct CompositeEncoderSpeedTests {
    static let frame: Duration = .milliseconds(33)

    /// One second of a room at 30 fps: each picture took `encode`, each tick came `late`.
    private func second(_ speed: inout CompositeEncoderSpeed, at now: inout Instant, encode: Duration, late: Duration = .zero,
                        hostLoad: Double? = nil, rooms: Int = 1) -> Bool {
        speed.setHostLoad(hostLoad, rooms: rooms)
        var changed = false
        for _ in 0..<30 {
            now = now + Self.frame + .microseconds(334)
            speed.ticked(lateness: late)
            speed.encoded(encode)
            changed = speed.evaluate(now: now, frameInterval: Self.frame) || changed
        }
        return changed
    }

    private func started(_ now: inout Instant) -> CompositeEncoderSpeed {
        var speed = CompositeEncoderSpeed(width: 1280, height: 720, fps: 30)
        speed.evaluate(now: now, frameInterval: Self.frame)  // opens the first window
        return speed
    }

    @Test func theCanvasSetsTheFirstStep() {
        #expect(CompositeEncoderSpeed(width: 640, height: 360, fps: 30).setting == .init(profile: 0, cpuUsed: -6))
        #expect(CompositeEncoderSpeed(width: 1280, height: 720, fps: 30).step == 0)
        #expect(CompositeEncoderSpeed(width: 1920, height: 1080, fps: 30).setting == .init(profile: 1, cpuUsed: -6))
        #expect(CompositeEncoderSpeed(width: 3840, height: 2160, fps: 30).setting == .init(profile: 3, cpuUsed: -6, mixComplexity: 1))
        #expect(CompositeEncoderSpeed.steps.map(\.profile) == [0, 1, 3, 3])
        #expect(CompositeEncoderSpeed.steps.map(\.mixComplexity) == [5, 5, 1, 1])
        #expect(CompositeEncoderSpeed.steps.map(\.halvesCanvas) == [false, false, false, true])
    }

    /// Encodes taking 20 ms of every 33 ms (a share of 0.6) step to a cheaper setting once a
    /// second, to the cheapest and no further; encodes of 5 ms (0.15) for 10 s step back one at a time.
    @Test func slowEncodesStepFasterEachSecondAndCalmOnesBackEveryTenSeconds() {
        var now = Instant.milliseconds(1000)
        var speed = started(&now)
        var seen: [Int] = []
        for _ in 0..<4 {
            _ = second(&speed, at: &now, encode: .milliseconds(20))
            seen.append(speed.step)
        }
        #expect(seen == [1, 2, 2, 2])
        #expect(speed.profile == 3)
        #expect((speed.lastShare ?? 0) > 0.55)
        var back: [Int] = []
        for _ in 0..<21 {
            _ = second(&speed, at: &now, encode: .milliseconds(5))
            back.append(speed.step)
        }
        #expect(back.prefix(9).allSatisfy { $0 == 2 }, "\(back)")
        #expect(back[9] == 1 && back[19] == 0, "one step back per 10 calm seconds: \(back)")
        #expect(speed.stepsFaster == 2 && speed.stepsSlower == 2)
    }

    /// Between the two thresholds (a share of 0.35) nothing moves, and a calm run broken by one
    /// such second starts its 10 s again.
    @Test func aMiddleShareHoldsTheStepAndRestartsTheCalmPeriod() {
        var now = Instant.milliseconds(1000)
        var speed = started(&now)
        _ = second(&speed, at: &now, encode: .milliseconds(20))
        #expect(speed.step == 1)
        for _ in 0..<8 { #expect(!second(&speed, at: &now, encode: .milliseconds(5))) }
        #expect(!second(&speed, at: &now, encode: .milliseconds(12)))
        for _ in 0..<9 { #expect(!second(&speed, at: &now, encode: .milliseconds(5))) }
        #expect(speed.step == 1)
        #expect(second(&speed, at: &now, encode: .milliseconds(5)))
        #expect(speed.step == 0)
    }

    /// Quick encodes, but ticks 20 ms late (the media loop is behind) or a host using 90 % of
    /// its cores: faster all the same.
    @Test func aLateMediaLoopOrABusyHostStepsFaster() {
        var now = Instant.milliseconds(1000)
        var late = started(&now)
        #expect(second(&late, at: &now, encode: .milliseconds(3), late: .milliseconds(20)))
        #expect(late.step == 1 && (late.lastLateness ?? 0) > 0.5)
        var busy = started(&now)
        #expect(second(&busy, at: &now, encode: .milliseconds(3), hostLoad: 0.9))
        #expect(busy.step == 1)
        // A host at 70 %: neither faster nor, later, slower.
        for _ in 0..<12 { #expect(!second(&busy, at: &now, encode: .milliseconds(3), hostLoad: 0.7)) }
        #expect(busy.step == 1)
    }

    /// An encoder that stopped (nobody receives) reports nothing: the room drifts back to its
    /// best speed, one step per 10 s.
    @Test func noEncodesAtAllIsCalm() {
        var now = Instant.milliseconds(1000)
        var speed = started(&now)
        for _ in 0..<3 { _ = second(&speed, at: &now, encode: .milliseconds(25)) }
        #expect(speed.step == 2)
        for _ in 0..<19 { _ = second(&speed, at: &now, encode: .zero) }
        #expect(speed.step == 1)
        _ = second(&speed, at: &now, encode: .zero)
        #expect(speed.step == 0)
    }

    /// On a host of several rooms, a room still pressed at the cheapest encoder draws half its
    /// canvas (1280x720 → 640x360), but only after three pressed seconds there; calm brings the
    /// template's canvas back after 10 s, and so does being alone on the host, at once.
    @Test func aPressedRoomOnASharedHostDrawsHalfItsCanvasAndALoneOneNever() {
        let canvas = VideoSize(width: 1280, height: 720)
        var now = Instant.milliseconds(1000)
        var lone = started(&now)
        for _ in 0..<8 { _ = second(&lone, at: &now, encode: .milliseconds(25)) }
        #expect(lone.step == 2 && lone.drawnCanvas(canvas) == canvas, "a lone room keeps the canvas it asked")

        var shared = started(&now)
        var seen: [Int] = []
        for _ in 0..<6 {
            _ = second(&shared, at: &now, encode: .milliseconds(25), rooms: 6)
            seen.append(shared.step)
        }
        #expect(seen == [1, 2, 2, 2, 3, 3], "\(seen)")
        #expect(shared.drawnCanvas(canvas) == VideoSize(width: 640, height: 360))
        #expect(shared.drawnCanvas(VideoSize(width: 1282, height: 722)) == VideoSize(width: 640, height: 360), "even sides")
        #expect(shared.drawnCanvas(VideoSize(width: 480, height: 270)) == VideoSize(width: 480, height: 270), "too small to halve")
        // A second of calm between pressed ones starts the count of three again.
        var broken = started(&now)
        for encode in [25, 25, 25, 25, 5, 25, 25] { _ = second(&broken, at: &now, encode: .milliseconds(encode), rooms: 2) }
        #expect(broken.step == 2)
        _ = second(&broken, at: &now, encode: .milliseconds(25), rooms: 2)
        #expect(broken.step == 3)

        // Calm, but the host at half its cores: with this room's share four times larger
        // (0.5 x (1 + 3/6) = 0.75) it would be pressed again, so it keeps the half canvas.
        var held = shared
        for _ in 0..<15 { _ = second(&held, at: &now, encode: .milliseconds(2), hostLoad: 0.5, rooms: 6) }
        #expect(held.step == 3)
        var calm = shared
        for _ in 0..<10 { _ = second(&calm, at: &now, encode: .milliseconds(2), hostLoad: 0.3, rooms: 6) }
        #expect(calm.step == 2 && calm.drawnCanvas(canvas) == canvas)
        #expect(second(&shared, at: &now, encode: .milliseconds(25), rooms: 1), "the other rooms closed")
        #expect(shared.step == 2 && shared.drawnCanvas(canvas) == canvas)
    }

    /// Ticks a whole frame late on average (the loop far behind, as when rooms open together on
    /// a host that cannot hold them whole): the cheapest step at once, not one a second; on a
    /// lone room that is the cheapest encoder on the whole canvas.
    @Test func aLoopAFrameBehindTakesTheCheapestStepAtOnce() {
        var now = Instant.milliseconds(1000)
        var shared = started(&now)
        #expect(second(&shared, at: &now, encode: .milliseconds(3), late: .milliseconds(40), rooms: 6))
        #expect(shared.step == 3 && shared.stepsFaster == 3)
        var lone = started(&now)
        #expect(second(&lone, at: &now, encode: .milliseconds(3), late: .milliseconds(40)))
        #expect(lone.step == 2 && !lone.setting.halvesCanvas)
        // Half a frame to a frame late: one step, as before.
        var behind = started(&now)
        _ = second(&behind, at: &now, encode: .milliseconds(3), late: .milliseconds(25), rooms: 6)
        #expect(behind.step == 1)
    }

    /// A room opened on a host whose rooms run at a cheaper step starts there; never at a
    /// better one than its canvas calls for, and not once it has been judged.
    @Test func aRoomOpenedOnABusyHostStartsAtItsRoomsStep() {
        var now = Instant.milliseconds(1000)
        var fresh = CompositeEncoderSpeed(width: 1280, height: 720, fps: 30)
        fresh.startAt(atLeast: 3)
        #expect(fresh.step == 3 && fresh.setting.halvesCanvas)
        var large = CompositeEncoderSpeed(width: 3840, height: 2160, fps: 30)
        large.startAt(atLeast: 1)
        #expect(large.step == 2)
        var running = started(&now)
        running.startAt(atLeast: 2)
        #expect(running.step == 0)
    }

    /// The step a new room opens at: its host's rooms' cheapest; the half canvas once the host
    /// holds a room per core (the rooms opened in a burst then never all step down at once).
    @Test func aRoomOpenedOnACrowdedHostStartsAtTheHalfCanvas() {
        let half = CompositeEncoderSpeed.steps.count - 1
        #expect(CompositeEncoderSpeed.steps[half].halvesCanvas)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [], cores: 2) == 0)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [0], cores: 2) == 0)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [0, 1], cores: 4) == 1)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [0, 0], cores: 2) == half)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [0], cores: 1) == half)
        #expect(CompositeEncoderSpeed.openingStep(otherRooms: [0, 0, 0], cores: 8) == 0)
    }
}
