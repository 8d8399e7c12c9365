import Load

/// Tessera's own version, printed first by `tessera version`.
let tesseraVersion = "0.2.0"

// MARK: - The subcommands and their usage

let serveCommand = Subcommand(name: "serve", summary: "run the host", usage: """
    usage: tessera serve [--config FILE] [--exit-when-drained]
           tessera serve --check-config FILE
    Runs the conference host: the HTTP API and web page, and the media port. It prints
    `tessera: listening on http://HOST:PORT` when ready; SIGINT or SIGTERM finishes every
    recording and exits 0. SIGUSR1 (or POST /v1/drain) drains it: no new room opens here, and
    in a cluster (docs/cluster.md) placement skips it; its open rooms go on.
    The config is FILE when --config is given, else Config/tessera.json when it exists in the
    working directory, else the built-in defaults (loopback only, auth off); the first line on
    standard error says which. docs/config.md lists every key.
      --config FILE        the config file to serve with
      --check-config FILE  check FILE (JSON syntax, known keys, every value) and exit: 0 when it is
                           valid, 1 with the reason when not
      --exit-when-drained  once drained (SIGUSR1 or POST /v1/drain), exit 0 when the last room closes
    """, valued: ["config", "check-config"], flags: ["exit-when-drained"])

let tokenCommand = Subcommand(name: "token", summary: "mint a join token from the config's auth.secret", usage: """
    usage: tessera token --room R --identity ID [--admin] [--ttl 1h] [--config FILE]
    Prints an HS256 join token signed with the config's auth.secret, for
    `Authorization: Bearer TOKEN` or `?token=TOKEN`. The config is found as `tessera serve` finds
    it (--config FILE, else Config/tessera.json, else the built-in defaults, which have no secret).
      --room R        the room the token is for (1 to 64 of A-Z a-z 0-9 - _ .)
      --identity ID   the participant's identity (same characters)
      --admin         also grant the room's layout, recording and moderation calls
      --ttl DURATION  how long it is valid: 30m, 1h, 2d, or seconds (default 1h)
      --config FILE   the config whose auth.secret signs it
    """, valued: ["room", "identity", "ttl", "config"], flags: ["admin"])

let composeCommand = Subcommand(name: "compose", summary: "compose recordings offline into one WebM", usage: """
    usage: tessera compose --template T.json --out out.webm [--realtime] INPUT...
    Composes recordings (WebM, IVF or Ogg; VP8 and/or Opus) into one WebM with the composed video
    and the mix of every input's audio. Each input is a participant named by its file name
    without extension (alice for alice.webm). The template is the same JSON as
    `PUT /v1/rooms/{room}/layout` takes (docs/api.md, "Templates"): a template whose positions
    name inputs, or a preset such as {"preset": "grid"}, applied to the inputs in the order given.
      --template FILE  the layout JSON
      --out FILE       the WebM to write
      --realtime       pace the work at media speed instead of as fast as the CPU allows
    """, valued: ["template", "out"], flags: ["realtime"], takesOperands: true)

let benchCommand = Subcommand(name: "bench", summary: "measure per-packet and per-frame throughput", usage: """
    usage: tessera bench [NAME...]
    Measures the per-packet and per-frame work on one thread: medians of 5 rounds after a warm-up.
    Build with `swift build -c release` for figures worth comparing; all of them take about
    2 minutes. Names (all when none is given):
      \(benchmarkNames.joined(separator: " "))
    With TESSERA_SRTP_CRYPTO=libsrtp in the environment, SRTP runs on libsrtp2's own crypto
    instead of OpenSSL's (srtp's lines name which).
    """, takesOperands: true)

let loadCommand = Subcommand(name: "load", summary: "synthetic participants load a host and check what they receive",
                             usage: LoadOptions.usage)

let viewCommand = Subcommand(name: "view", summary: "composite viewers (WHEP) of one room that count what they receive", usage: """
    usage: tessera view [--url http://127.0.0.1:8080] [--room load] [--viewers 10] [--duration 30s] [--join-rate 20] [--token T]
    Joins N composite viewers (POST /v1/rooms/{room}/viewers, recvonly) at the host, each a real
    WebRTC peer of Tessera's client stack on its own UDP port; they count the composite's frames
    and the mix's packets (they decode nothing, so a hundred fit on one core), leave after the
    duration, and print one line per figure. Exits 0 when every viewer connected and received
    composite frames and mix packets. The room must exist (or be owned by another host of the
    cluster, when --url is an edge host: docs/cluster.md).
      --url URL        the host (an edge host of a cluster serves viewers of rooms others own)
      --room NAME      the room (default load)
      --viewers N      how many viewers, 1 to 500 (default 10)
      --duration D     how long they watch: 30s, 2m (default 30s)
      --join-rate R    joins per second (default 20)
      --token T        a join token for the room (hosts with auth on)
    """, valued: ["url", "room", "viewers", "duration", "join-rate", "token"])

let versionCommand = Subcommand(name: "version", summary: "print Tessera's version and the linked libraries' versions", usage: """
    usage: tessera version
    Prints Tessera's version, then the version of each C library it is linked with.
    """)

let helpCommand = Subcommand(name: "help", summary: "print the usage of every command, or of one", usage: """
    usage: tessera help [COMMAND]
    """, takesOperands: true)

let certCommand = Subcommand(name: "cert", summary: "write a self-signed HTTPS certificate and key for trials on a LAN", usage: """
    usage: tessera cert --host NAME[,NAME...] [--out DIR] [--days 90]
    Writes DIR/cert.pem and DIR/key.pem (the key readable by you alone): a self-signed ECDSA P-256
    certificate for each NAME (a DNS name or an IP address), for `http.tls` in the config.
    Browsers warn about a self-signed certificate; once accepted, the page has a secure context
    and gets camera and microphone on other machines too. For a public host, use a CA's.
      --host NAMES  the names the page is reached by, comma-separated (192.168.1.20,meet.lan)
      --out DIR     where to write (default: the current folder); made if missing
      --days N      how long it is valid (default 90; browsers refuse over 398)
    """, valued: ["host", "out", "days"])

let subcommands = [serveCommand, loadCommand, viewCommand, tokenCommand, certCommand, composeCommand, benchCommand, versionCommand, helpCommand]

/// `tessera help` and a bare `tessera`: every command with its summary.
var overview: String {
    let width = subcommands.map(\.name.count).max() ?? 0
    return "usage: tessera COMMAND [OPTIONS]\n\ncommands:\n"
        + subcommands.map { "  \($0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0))\($0.summary)" }.joined(separator: "\n")
        + "\n\n`tessera help COMMAND` or `tessera COMMAND --help` prints a command's usage. Tessera \(tesseraVersion)."
}

