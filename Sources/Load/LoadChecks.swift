/// The checks of a run, each decided from what the participants saw. A check names the first
/// participants that broke it, so a failure says what to look at.
struct LoadChecks {
    let options: LoadOptions
    let identities: [String]
    let results: [LoadParticipant.Results]
    let audioLatencies: [Double]
    let videoLatencies: [Double]

    /// Mix frames (20 ms each) a receiver needs before its hearing is judged.
    static let minimumFrames = 25
    /// A tone counts as heard when it is in at least this share of the frames it should be in
    /// (it sounds 90% of each second; onsets and the host's tick make the rest).
    static let heardShare = 0.5
    /// Own tone: present in at most this share of the frames.
    static let ownToneShare = 0.02
    /// Slot colours: at least this share of the samples right (layout changes race a sample).
    static let slotShare = 0.9
    /// Composite frames may be missing for at most this share of a participant's time.
    static let freezeShare = 0.05

    typealias Check = LoadReport.Check

    var all: [Check] {
        var checks = [joins, ownVoice, speakersHeard, audioArrives, audioLatency, loss]
        if options.video != nil { checks += [compositeArrives, slots, videoLatency] }
        if options.rejoin { checks.append(rejoins) }
        return checks
    }

    private func named(_ name: String, _ problems: [String], passed detail: String) -> Check {
        guard !problems.isEmpty else { return Check(name: name, passed: true, detail: detail) }
        let shown = problems.prefix(3).joined(separator: "; ")
        return Check(name: name, passed: false, detail: problems.count > 3 ? "\(shown); and \(problems.count - 3) more" : shown)
    }

    private func percent(_ value: Double) -> String { "\(Int((value * 100).rounded()))%" }

    var joins: Check {
        var problems: [String] = []
        for (identity, result) in zip(identities, results) {
            if let failure = result.failures.first { problems.append(failure) } else if result.joinMilliseconds.isEmpty {
                problems.append("\(identity) never became secure")
            }
        }
        return named("every participant joins", problems, passed: "\(results.count) joined")
    }

    var ownVoice: Check {
        var problems: [String] = []
        for (identity, result) in zip(identities, results) where result.framesCheckedForOwnTone > 0 {
            let share = Double(result.framesWithOwnTone) / Double(result.framesCheckedForOwnTone)
            if share > Self.ownToneShare { problems.append("\(identity) hears its own tone in \(percent(share)) of its mix") }
        }
        let speakers = results.filter { $0.framesCheckedForOwnTone >= Self.minimumFrames }.count
        if options.speakers > 0 && speakers == 0 { problems.append("no speaker received enough of its mix to check") }
        return named("no one hears their own voice", problems, passed: "\(speakers) speakers checked")
    }

    var speakersHeard: Check {
        if options.maxVoices > 0 && options.speakers > options.maxVoices { return loudestHeard }
        var problems: [String] = []
        var judged = 0
        for (identity, result) in zip(identities, results) {
            for (speaker, frames) in result.framesExpectingSpeaker.sorted(by: { $0.key < $1.key }) where frames >= Self.minimumFrames {
                judged += 1
                let share = Double(result.framesHearingSpeaker[speaker] ?? 0) / Double(frames)
                if share < Self.heardShare {
                    problems.append("\(identity) hears load-\(speaker)'s tone in only \(percent(share)) of \(frames) frames")
                }
            }
        }
        if options.speakers > 0 && judged == 0 { problems.append("no participant heard long enough to judge") }
        return named("everyone hears every other speaker", problems, passed: "\(judged) listener-speaker pairs")
    }

    /// More speakers than the host mixes (Top K, all at one loudness): each listener hears K of
    /// them steadily (K - 1 when it is one of the chosen, its own voice being left out of its
    /// mix), and no more; which K is the host's choice.
    private var loudestHeard: Check {
        var problems: [String] = []
        var judged = 0
        let limit = options.maxVoices
        for (identity, result) in zip(identities, results) {
            let expected = result.framesExpectingSpeaker.filter { $0.value >= Self.minimumFrames }
            guard expected.count >= limit else { continue }
            judged += 1
            let heard = expected.keys.filter { Double(result.framesHearingSpeaker[$0] ?? 0) / Double(expected[$0] ?? 1) >= Self.heardShare }
            if heard.count > limit || heard.count < limit - 1 {
                problems.append("\(identity) hears \(heard.count) speakers steadily (\(heard.sorted().map { "load-\($0)" }.joined(separator: ", "))), want \(limit - 1) or \(limit)")
            }
        }
        if judged == 0 { problems.append("no participant heard long enough to judge") }
        return named("everyone hears the \(limit) loudest speakers", problems, passed: "\(judged) listeners")
    }

    /// `--rejoin`: every transport that failed was replaced, media flowing again, before the
    /// run ended (a participant that ran out of tries is in `joins`' failures too). The media
    /// checks judge only what arrived, so the gaps are outside them.
    var rejoins: Check {
        let problems = results.compactMap(\.rejoinUnfinished)
        let gaps = results.flatMap { $0.rejoins.map(\.gapMilliseconds) }
        let detail = gaps.isEmpty ? "no transport failed" : "\(gaps.count) rejoins, gap median \(Int((Percentile.of(gaps, 0.5) ?? 0).rounded())) ms, longest \(Int((gaps.max() ?? 0).rounded())) ms"
        return named("every failed transport rejoins with media flowing again", problems, passed: detail)
    }

    var audioArrives: Check {
        let problems = zip(identities, results).compactMap { identity, result in
            result.joinMilliseconds.isEmpty || result.audioPacketsReceived > 0 ? nil : "\(identity) received no mix"
        }
        return named("every participant receives its mix", problems, passed: "")
    }

    private func latency(_ name: String, _ values: [Double], bound: Double, required: Bool) -> Check {
        guard let p95 = Percentile.of(values, 0.95) else {
            return Check(name: name, passed: !required, detail: required ? "no latency could be measured" : "not measured")
        }
        let detail = "p95 \(Int(p95.rounded())) ms of \(values.count) samples, bound \(Int(bound)) ms"
        return Check(name: name, passed: p95 <= bound, detail: detail)
    }

    var audioLatency: Check {
        latency("audio latency (tone onsets)", audioLatencies, bound: options.maxAudioLatencyMilliseconds,
                required: options.speakers > 0 && options.participants > 1)
    }

    var videoLatency: Check {
        latency("video latency (frame codes)", videoLatencies, bound: options.maxVideoLatencyMilliseconds, required: options.decoders > 0)
    }

    var loss: Check {
        // A blackout loses all it covers, and after it the host sends less while its estimates
        // recover: the loss share then says nothing about the host; the recovery times do.
        if options.blackoutAt != nil {
            return Check(name: "loss (not judged: the run has a blackout)", passed: true, detail: "")
        }
        // An impaired run judges only the loss beyond what each participant's own impaired
        // network dropped (counted as it dropped them): the impairment's share is chance, which
        // over a thousand packets strays by a percent or two (and the worst of thirty further).
        let bound = options.maxLossFraction
        let problems = zip(identities, results).compactMap { identity, result -> String? in
            let loss = LoadRun.loss(result), beyond = LoadRun.lossBeyondImpairment(result)
            guard beyond > bound else { return nil }
            let lost = "\(identity) lost \(String(format: "%.2f", loss * 100))% of what the host sent"
            return options.impairment == nil ? lost : lost + ", \(String(format: "%.2f", beyond * 100))% more than its impaired network dropped"
        }
        let limit = "loss at most \(String(format: "%.1f", bound * 100))%"
        return named(options.impairment == nil ? limit : limit + " beyond the impairment's", problems, passed: "")
    }

    var compositeArrives: Check {
        var problems: [String] = []
        for (identity, result) in zip(identities, results) where !result.joinMilliseconds.isEmpty {
            if result.videoFramesReceived == 0 {
                problems.append("\(identity) received no composite frame")
            } else if result.connectedMilliseconds > 0, result.freezeMilliseconds / result.connectedMilliseconds > Self.freezeShare {
                problems.append("\(identity) saw the composite frozen for \(Int(result.freezeMilliseconds)) ms (\(result.freezes) freezes)")
            }
        }
        return named("the composite arrives without freezes", problems, passed: "")
    }

    var slots: Check {
        let checked = results.reduce(0) { $0 + $1.slotChecks }, passed = results.reduce(0) { $0 + $1.slotChecksPassed }
        guard options.decoders > 0 else { return Check(name: "colours in their slots", passed: true, detail: "no participant decodes") }
        guard checked > 0 else {
            // Under churn faster than the layout settles (1.5 s), no moment is fit to check.
            let unsettled = options.churn >= 0.5
            return Check(name: "colours in their slots", passed: unsettled,
                         detail: unsettled ? "not checked: the layout never settled under churn of \(options.churn)/s"
                                           : "no composite picture could be checked")
        }
        let share = Double(passed) / Double(checked)
        let failures = results.flatMap(\.slotFailures).prefix(2).joined(separator: "; ")
        return Check(name: "colours in their slots", passed: share >= Self.slotShare,
                     detail: "\(passed) of \(checked) slot samples right" + (failures.isEmpty ? "" : "; e.g. \(failures)"))
    }

    /// `--simulcast`: the host took every guest's camera as simulcast and decodes one of its
    /// layers (the detail counts guests per layer).
    static func simulcast(layers: [String: String?]) -> Check {
        let name = "the host decodes a simulcast layer of every camera"
        let missing = layers.filter { $0.value == nil }.keys.sorted()
        let counts = Dictionary(layers.values.compactMap { $0 }.map { ($0, 1) }, uniquingKeysWith: +)
        let detail = counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        guard missing.isEmpty else {
            return Check(name: name, passed: false, detail: "no layer decoded for \(missing.prefix(3).joined(separator: ", "))\(missing.count > 3 ? " and \(missing.count - 3) more" : ""); \(detail)")
        }
        return Check(name: name, passed: true, detail: detail)
    }
}
