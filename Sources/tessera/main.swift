import Foundation
import Media
import Server
import Transport

/// `tessera SUBCOMMAND [options]`: the one executable of the project.
let usage = """
    usage: tessera serve [--config Config/tessera.json]   run the host
           tessera bench [wire]                           measure parse+serialize throughput
           tessera version                                print the versions of the linked libraries
    """

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("tessera: \(message)\n".utf8))
    exit(status)
}

/// Reads `--name value` pairs after the subcommand; refuses unknown names.
func options(_ arguments: ArraySlice<String>, allowed: Set<String>) -> [String: String] {
    var result: [String: String] = [:]
    var rest = arguments
    while let name = rest.popFirst() {
        guard name.hasPrefix("--"), allowed.contains(String(name.dropFirst(2))) else {
            fail("unknown option \(name)\n\(usage)")
        }
        guard let value = rest.popFirst() else { fail("\(name) needs a value") }
        result[String(name.dropFirst(2))] = value
    }
    return result
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

func printVersions() {
    for (name, version) in TransportLibraries.versions + MediaLibraries.versions + ServerLibraries.versions {
        print("\(name): \(version)")
    }
}

var arguments = CommandLine.arguments.dropFirst()
switch arguments.popFirst() {
case "serve": serve(arguments)
case "bench": runBenchmarks(arguments)
case "version", "--version": printVersions()
case "-h", "--help", "help": print(usage)
case let other?: fail("unknown command \(other)\n\(usage)")
case nil: fail(usage)
}
