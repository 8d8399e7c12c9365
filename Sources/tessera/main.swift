import Foundation
import Compositing
import Media
import Load
import Server
import Transport

/// `tessera SUBCOMMAND [options]`: the one executable of the project.
let usage = """
    usage: tessera serve [--config Config/tessera.json]   run the host
           tessera load [--url http://127.0.0.1:8080] [--room R] [--participants N] [--duration 30s] [...]
                                                          synthetic participants load the host and check what they receive
           tessera token --room R --identity ID [--admin] [--ttl 1h] [--config FILE]
                                                          mint a join token from the config's auth.secret
           tessera compose --template T.json --out out.webm [--realtime] INPUT...
                                                          compose recordings offline (inputs: WebM, IVF, Ogg)
           tessera bench [NAME...]                        measure per-packet and per-frame throughput
           tessera version                                print the versions of the linked libraries
    """

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("tessera: \(message)\n".utf8))
    exit(status)
}

/// Reads `--name value` pairs and `--flag`s after the subcommand; refuses unknown names.
func options(_ arguments: ArraySlice<String>, allowed: Set<String>, flags: Set<String> = []) -> [String: String] {
    var result: [String: String] = [:]
    var rest = arguments
    while let argument = rest.popFirst() {
        let name = String(argument.dropFirst(2))
        guard argument.hasPrefix("--"), allowed.contains(name) || flags.contains(name) else {
            fail("unknown option \(argument)\n\(usage)")
        }
        if flags.contains(name) {
            result[name] = "true"
            continue
        }
        guard let value = rest.popFirst() else { fail("\(argument) needs a value") }
        result[name] = value
    }
    return result
}

/// `30s`, `10m`, `1h`, `2d`, or plain seconds.
func parseDuration(_ text: String) -> Int64? {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    if let unit = text.last, let scale = units[unit], let value = Int64(text.dropLast()), value > 0 { return value * scale }
    return Int64(text).flatMap { $0 > 0 ? $0 : nil }
}

func token(_ arguments: ArraySlice<String>) {
    let given = options(arguments, allowed: ["room", "identity", "ttl", "config"], flags: ["admin"])
    guard let room = given["room"], let identity = given["identity"] else { fail("token needs --room and --identity") }
    guard HostAPI.isValidName(room), HostAPI.isValidName(identity) else {
        fail("room and identity are 1 to 64 of A-Z a-z 0-9 - _ .")
    }
    guard let ttl = parseDuration(given["ttl"] ?? "1h") else { fail("--ttl takes a duration like 30m, 1h or 2d") }
    let config: HostConfig
    do { config = try HostConfig.load(path: given["config"] ?? (FileManager.default.fileExists(atPath: "Config/tessera.json") ? "Config/tessera.json" : nil)) } catch {
        fail(error.description)
    }
    guard let secret = config.auth.secret, !secret.isEmpty else {
        fail("the config has no auth.secret: tokens are not needed (auth is off on loopback), and none can be signed")
    }
    let expires = Int64(Date().timeIntervalSince1970) + ttl
    print(JoinToken(room: room, identity: identity, expires: expires, admin: given["admin"] != nil).signed(secret: secret))
}

func serve(_ arguments: ArraySlice<String>) -> Never {
    let path = options(arguments, allowed: ["config"])["config"]
    let config: HostConfig
    do { config = try HostConfig.load(path: path) } catch { fail(error.description) }

    // Block the stop signals before any thread starts, so every thread inherits the mask and
    // this thread alone takes them with sigwait.
    var stopSignals = sigset_t()
    sigemptyset(&stopSignals)
    sigaddset(&stopSignals, SIGINT)
    sigaddset(&stopSignals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

    let host: ConferenceHost
    do { host = try ConferenceHost(config: config) } catch { fail("\(error)", status: 1) }
    FileHandle.standardOutput.write(Data((host.readyLine + "\n").utf8))

    var signal: Int32 = 0
    sigwait(&stopSignals, &signal)
    host.stop()
    exit(0)
}

func compose(_ arguments: ArraySlice<String>) {
    var named: [String] = []
    var inputs: [String] = []
    var rest = arguments
    var realtime = false
    while let argument = rest.popFirst() {
        if argument == "--realtime" {
            realtime = true
        } else if argument.hasPrefix("--") {
            named.append(argument)
            guard let value = rest.popFirst() else { fail("\(argument) needs a value") }
            named.append(value)
        } else {
            inputs.append(argument)
        }
    }
    let given = options(named[...], allowed: ["template", "out"])
    guard let templatePath = given["template"], let output = given["out"] else { fail("compose needs --template and --out") }
    let template: Data
    do { template = try Data(contentsOf: URL(fileURLWithPath: templatePath)) } catch { fail("cannot read \(templatePath): \(error.localizedDescription)") }
    do {
        let summary = try OfflineComposer(templateJSON: template, inputPaths: inputs, outputPath: output).run(realtime: realtime)
        let seconds = Double(summary.elapsed.components.seconds) + Double(summary.elapsed.components.attoseconds) / 1e18
        let codecSeconds = Double(summary.codecTime.components.seconds) + Double(summary.codecTime.components.attoseconds) / 1e18
        print(String(format: "compose: %@: %d frames, %.1f s of media in %.2f s (%.1f frames/s; codecs %.0f%% of the time)",
                     output, summary.videoFramesComposed, Double(summary.duration.components.seconds), seconds,
                     Double(summary.videoFramesComposed) / max(seconds, 0.001), 100 * codecSeconds / max(seconds, 0.001)))
    } catch {
        fail("compose: \(error.description)", status: 1)
    }
}

func load(_ arguments: ArraySlice<String>) -> Never {
    if arguments.contains("--help") || arguments.contains("-h") {
        print(LoadOptions.usage)
        exit(0)
    }
    let options: LoadOptions
    do { options = try LoadOptions(arguments: Array(arguments)) } catch { fail("load: \(error.description)\n\(LoadOptions.usage)") }
    let standardError = FileHandle.standardError
    let live = isatty(2) == 1 && !options.quiet
    let run = LoadRun(options: options, log: { standardError.write(Data(($0 + "\n").utf8)) }, progress: { line in
        if options.quiet { return }
        standardError.write(Data((live ? "\r\u{1B}[K" + line : line + "\n").utf8))
    })
    let report: LoadReport
    do { report = try run.run() } catch { fail("load: \(error.description)", status: 1) }
    if live { standardError.write(Data("\n".utf8)) }
    print(report.table)
    if let path = options.report {
        do {
            try report.json().write(to: URL(fileURLWithPath: path + ".json"))
            try Data(report.html.utf8).write(to: URL(fileURLWithPath: path + ".html"))
            print("report: \(path).json, \(path).html")
        } catch {
            fail("load: cannot write the report at \(path): \(error.localizedDescription)", status: 1)
        }
    }
    for check in report.checks where !check.passed { print("load: FAILED \(check.name): \(check.detail)") }
    print(report.passed ? "load: every check passed" : "load: \(report.checks.filter { !$0.passed }.count) checks failed")
    exit(report.passed ? 0 : 1)
}

func printVersions() {
    for (name, version) in TransportLibraries.versions + MediaLibraries.versions + ServerLibraries.versions {
        print("\(name): \(version)")
    }
}

var arguments = CommandLine.arguments.dropFirst()
switch arguments.popFirst() {
case "serve": serve(arguments)
case "bench": runBenchmarks(arguments)
case "token": token(arguments)
case "load": load(arguments)
case "compose": compose(arguments)
case "version", "--version": printVersions()
case "-h", "--help", "help": print(usage)
case let other?: fail("unknown command \(other)\n\(usage)")
case nil: fail(usage)
}
