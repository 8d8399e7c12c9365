import Foundation

/// The one grammar every subcommand follows: `--name value` and `--name=value` alike, `--flag`s
/// without a value, `--help`/`-h` anywhere prints the command's usage and exits 0, and any error
/// prints one line naming the command, then its usage, and exits 2.
struct Subcommand: Sendable {
    /// The word after `tessera`.
    let name: String
    /// One line for `tessera help`.
    let summary: String
    /// The full usage text: the synopsis, what it does, each option.
    let usage: String
    /// Options that take a value.
    var valued: Set<String> = []
    /// Options that take none.
    var flags: Set<String> = []
    /// Whether arguments that are not options are accepted (compose's inputs, bench's names).
    var takesOperands = false

    /// What a command line gave: named values, flags, and the other arguments in order.
    struct Arguments {
        var values: [String: String] = [:]
        var flags: Set<String> = []
        var operands: [String] = []
        subscript(name: String) -> String? { values[name] }
    }

    /// Reads this command's arguments, or prints the usage (`--help`) or the error and exits.
    func parse(_ arguments: ArraySlice<String>) -> Arguments {
        var given = Arguments()
        var rest = splitEquals(arguments)[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" { printUsage() }
            if argument == "--" {
                guard takesOperands else { fail("unexpected argument --") }
                given.operands.append(contentsOf: rest)
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                guard takesOperands else { fail("unexpected argument \(argument)") }
                given.operands.append(argument)
                continue
            }
            let name = String(argument.drop { $0 == "-" })
            if flags.contains(name) {
                given.flags.insert(name)
            } else if valued.contains(name) {
                guard let value = rest.popFirst() else { fail("\(argument) needs a value") }
                given.values[name] = value
            } else {
                fail("unknown option \(argument)")
            }
        }
        return given
    }

    /// The usage on standard output; exit 0.
    func printUsage() -> Never {
        print(usage)
        exit(0)
    }

    /// One line naming this command and what is wrong, then its usage, on standard error; exit 2.
    func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("tessera \(name): \(message)\n\n\(usage)\n".utf8))
        exit(2)
    }
}

/// `--name=value` as two arguments, so every command reads both spellings alike.
func splitEquals(_ arguments: some Sequence<String>) -> [String] {
    arguments.flatMap { argument -> [String] in
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return [argument] }
        return [String(argument[..<equals]), String(argument[argument.index(after: equals)...])]
    }
}

/// A failure while running (not a usage error): one line on standard error, exit 1.
func abort(_ command: String, _ message: String) -> Never {
    FileHandle.standardError.write(Data("tessera \(command): \(message)\n".utf8))
    exit(1)
}

/// A line on standard error: what a command says about itself (which config it read, where
/// files went) without mixing into its output.
func note(_ message: String) {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
}
