import Foundation
import Compose
import Compositing
import Media
import Load
import Server
import Transport
import Wire

// MARK: - What each does

/// The config by the one rule every command follows, said on standard error; a bad one is the
/// command's error.
func resolveConfig(_ command: Subcommand, explicitPath: String?) -> HostConfig {
    do {
        let (config, source) = try HostConfig.resolve(explicitPath: explicitPath)
        note("config: \(source)")
        return config
    } catch {
        abort(command.name, error.description)
    }
}

/// `30s`, `10m`, `1h`, `2d`, or plain seconds.
func parseDuration(_ text: String) -> Int64? {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    if let unit = text.last, let scale = units[unit], let value = Int64(text.dropLast()), value > 0 { return value * scale }
    return Int64(text).flatMap { $0 > 0 ? $0 : nil }
}

func token(_ arguments: ArraySlice<String>) {
    let given = tokenCommand.parse(arguments)
    guard let room = given["room"], let identity = given["identity"] else { tokenCommand.fail("needs --room and --identity") }
    guard HostAPI.isValidName(room), HostAPI.isValidName(identity) else {
        tokenCommand.fail("room and identity are 1 to 64 of A-Z a-z 0-9 - _ .")
    }
    guard let ttl = parseDuration(given["ttl"] ?? "1h") else { tokenCommand.fail("--ttl takes a duration like 30m, 1h or 2d") }
    let config = resolveConfig(tokenCommand, explicitPath: given["config"])
    guard let secret = config.auth.secret else {
        abort("token", "the config has no auth.secret: tokens are not needed (auth is off on loopback), and none can be signed")
    }
    let expires = Int64(Date().timeIntervalSince1970) + ttl
    print(JoinToken(room: room, identity: identity, expires: expires, admin: given.flags.contains("admin")).signed(secret: secret))
}

func cert(_ arguments: ArraySlice<String>) {
    let given = certCommand.parse(arguments)
    let names = (given["host"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    guard !names.isEmpty else { certCommand.fail("needs --host NAME") }
    for name in names where name.count > 253 || name.contains(where: { !($0.isLetter || $0.isNumber || "-.:*".contains($0)) }) {
        certCommand.fail("\(name.prefix(64)) is not a DNS name or an IP address")
    }
    guard let days = Int(given["days"] ?? "90"), (1...398).contains(days) else { certCommand.fail("--days takes 1 to 398") }
    let folder = given["out"] ?? "."
    let certificate: DTLSCertificate
    do { certificate = try DTLSCertificate(commonName: names[0], validityDays: days, serverNames: names) } catch {
        abort("cert", "could not make the certificate: \(error)")
    }
    let certificatePath = (folder as NSString).appendingPathComponent("cert.pem")
    let keyPath = (folder as NSString).appendingPathComponent("key.pem")
    do {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data(certificate.pem.utf8).write(to: URL(fileURLWithPath: certificatePath))
        // The key is readable by its owner alone, from its first byte on.
        _ = FileManager.default.createFile(atPath: keyPath, contents: nil, attributes: [.posixPermissions: 0o600])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        try Data(certificate.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: keyPath))
    } catch {
        abort("cert", "could not write to \(folder): \(error.localizedDescription)")
    }
    print(certificatePath)
    print(keyPath)
    note("for \(names.joined(separator: ", ")), valid \(days) days; in the config (a host off loopback needs auth.secret too): "
         + #"{"http": {"listen": "0.0.0.0:8443", "tls": {"certificate": "\#(certificatePath)", "key": "\#(keyPath)"}}}"#)
}

func serve(_ arguments: ArraySlice<String>) -> Never {
    let given = serveCommand.parse(arguments)
    if let path = given["check-config"] {
        guard given["config"] == nil else { serveCommand.fail("--check-config takes the file to check; give no --config with it") }
        do { _ = try HostConfig.load(path: path) } catch { abort("serve", error.description) }
        print("config \(path): valid")
        exit(0)
    }
    let config = resolveConfig(serveCommand, explicitPath: given["config"])

    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // this thread alone takes them with sigwait.
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGINT)
    sigaddset(&stopSignals, SIGTERM)
    sigaddset(&stopSignals, SIGUSR1)  // drain
    pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
    let exitWhenDrained = given.flags.contains("exit-when-drained")

    let host: ConferenceHost
    do { host = try ConferenceHost(config: config) } catch { abort("serve", "\(error)") }
    FileHandle.standardOutput.write(Data((host.readyLine + "\n").utf8))

    // Signals as they come; with --exit-when-drained, every half second whether the drain is
    // done (sigtimedwait's timeout), so the last room's close ends the process without a signal.
    var timeout = timespec(tv_sec: 0, tv_nsec: 500_000_000)
    while true {
        let signal = exitWhenDrained ? sigtimedwait(&stopSignals, nil, &timeout) : { var s: Int32 = 0; sigwait(&stopSignals, &s); return s }()
        switch signal {
        case SIGUSR1:
            host.drain()
        case SIGINT, SIGTERM:
            host.stop(reason: signal == SIGTERM ? "SIGTERM" : "SIGINT")
            exit(0)
        default:  // the timeout (or EINTR)
            if exitWhenDrained, host.isDrainedAndEmpty {
                host.stop(reason: "drained")
                exit(0)
            }
        }
    }
}

func compose(_ arguments: ArraySlice<String>) {
    let given = composeCommand.parse(arguments)
    guard let templatePath = given["template"], let output = given["out"] else { composeCommand.fail("needs --template and --out") }
    guard !given.operands.isEmpty else { composeCommand.fail("needs at least one INPUT file") }
    let template: Data
    do { template = try Data(contentsOf: URL(fileURLWithPath: templatePath)) } catch {
        abort("compose", "cannot read \(templatePath): \(error.localizedDescription)")
    }
    do {
        let summary = try OfflineComposer(templateJSON: template, inputPaths: given.operands, outputPath: output)
            .run(realtime: given.flags.contains("realtime"))
        let seconds = summary.elapsed.seconds
        print(String(format: "compose: %@: %d frames, %.1f s of media in %.2f s (%.1f frames/s; codecs %.0f%% of the time)",
                     output, summary.videoFramesComposed, summary.duration.seconds, seconds,
                     Double(summary.videoFramesComposed) / max(seconds, 0.001), 100 * summary.codecTime.seconds / max(seconds, 0.001)))
        for warning in summary.warnings { FileHandle.standardError.write(Data("compose: warning: \(warning)\n".utf8)) }
    } catch {
        abort("compose", error.description)
    }
}

func view(_ arguments: ArraySlice<String>) -> Never {
    let given = viewCommand.parse(ArraySlice(splitEquals(arguments)))
    guard let viewers = Int(given["viewers"] ?? "10"), (1...500).contains(viewers) else { viewCommand.fail("--viewers takes 1 to 500") }
    guard let seconds = parseDuration(given["duration"] ?? "30s"), seconds <= 86_400 else { viewCommand.fail("--duration takes a duration like 30s or 2m") }
    guard let rate = Double(given["join-rate"] ?? "20"), rate > 0, rate <= 1000 else { viewCommand.fail("--join-rate takes joins per second, up to 1000") }
    let url = given["url"] ?? "http://127.0.0.1:8080"
    guard url.hasPrefix("http://") || url.hasPrefix("https://") else { viewCommand.fail("--url is http://HOST:PORT or https://HOST:PORT") }
    let room = given["room"] ?? "load"
    guard HostAPI.isValidName(room) else { viewCommand.fail("--room is 1 to 64 of A-Z a-z 0-9 - _ .") }
    let swarm = ViewerSwarm(options: .init(url: url, room: room, viewers: viewers, duration: .seconds(seconds), joinRate: rate, token: given["token"]))
    let results: [ViewerSwarm.Result]
    do { results = try swarm.run() } catch { abort("view", "\(error)") }
    let connected = results.filter(\.connected).count
    let frames = results.map(\.videoFrames).sorted()
    let audio = results.map(\.audioPackets).sorted()
    print("view: viewers \(viewers), connected \(connected)")
    print("view: composite frames per viewer: min \(frames.first ?? 0), median \(frames[frames.count / 2]), max \(frames.last ?? 0)")
    print("view: mix packets per viewer: min \(audio.first ?? 0), median \(audio[audio.count / 2]), max \(audio.last ?? 0)")
    for failure in results.compactMap(\.failure).prefix(10) { print("view: \(failure)") }
    exit(connected == viewers && (frames.first ?? 0) > 0 && (audio.first ?? 0) > 0 ? 0 : 1)
}

func load(_ arguments: ArraySlice<String>) -> Never {
    if arguments.contains("--help") || arguments.contains("-h") { loadCommand.printUsage() }
    let options: LoadOptions
    do { options = try LoadOptions(arguments: splitEquals(arguments)) } catch { loadCommand.fail(error.description) }
    let standardError = FileHandle.standardError
    let live = isatty(2) == 1 && !options.quiet
    // Tokens last the run and an hour (a run's own length is at most a day).
    let expires = Int64(Date().timeIntervalSince1970) + Int64(options.duration.seconds) + 3600
    var sign: LoadRun.TokenSigner?
    if let secret = options.secret {
        sign = { room, identity, admin in
            JoinToken(room: room, identity: identity, expires: expires, admin: admin).signed(secret: secret)
        }
    }
    let run = LoadRun(options: options, sign: sign, log: { standardError.write(Data(($0 + "\n").utf8)) }, progress: { line in
        if options.quiet { return }
        standardError.write(Data((live ? "\r\u{1B}[K" + line : line + "\n").utf8))
    })
    let report: LoadReport
    do { report = try run.run() } catch { abort("load", error.description) }
    if live { standardError.write(Data("\n".utf8)) }
    print(report.table)
    let path: String?
    switch options.report {
    case .none: path = nil
    case .path(let given): path = given
    case .defaultFolder:
        let stamp = DateFormatter()
        stamp.dateFormat = "yyyyMMdd-HHmmss"
        stamp.timeZone = TimeZone(identifier: "UTC")
        path = "\(LoadOptions.defaultReportFolder)/tessera-load-\(stamp.string(from: Date()))"
    }
    if let path {
        do {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try report.json().write(to: URL(fileURLWithPath: path + ".json"))
            try Data(report.html.utf8).write(to: URL(fileURLWithPath: path + ".html"))
            print("report: \(path).json, \(path).html")
        } catch {
            abort("load", "cannot write the report at \(path): \(error.localizedDescription)")
        }
    }
    for check in report.checks where !check.passed { print("load: FAILED \(check.name): \(check.detail)") }
    print(report.passed ? "load: every check passed" : "load: \(report.checks.filter { !$0.passed }.count) checks failed")
    exit(report.passed ? 0 : 1)
}

func printVersions(_ arguments: ArraySlice<String>) {
    _ = versionCommand.parse(arguments)
    print("tessera \(tesseraVersion)")
    for (name, version) in TransportLibraries.versions + MediaLibraries.versions + ServerLibraries.versions {
        print("\(name): \(version)")
    }
}

func help(_ arguments: ArraySlice<String>) {
    let given = helpCommand.parse(arguments)
    guard let name = given.operands.first else { print(overview); return }
    guard given.operands.count == 1, let command = subcommands.first(where: { $0.name == name }) else {
        helpCommand.fail("no command \(given.operands.joined(separator: " ")); one of \(subcommands.map(\.name).joined(separator: ", "))")
    }
    print(command.usage)
}

var arguments = CommandLine.arguments.dropFirst()
switch arguments.popFirst() {
case "serve": serve(arguments)
case "bench": runBenchmarks(benchCommand.parse(arguments).operands)
case "token": token(arguments)
case "cert": cert(arguments)
case "load": load(arguments)
case "view": view(arguments)
case "compose": compose(arguments)
case "version", "--version": printVersions(arguments)
case "help", "-h", "--help": help(arguments)
case let other?:
    FileHandle.standardError.write(Data("tessera: unknown command \(other)\n\n\(overview)\n".utf8))
    exit(2)
case nil:
    FileHandle.standardError.write(Data("\(overview)\n".utf8))
    exit(2)
}
