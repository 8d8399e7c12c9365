// swift-tools-version:6.0
// Tessera: a conference MCU host. One module per layer; a lower layer never imports a higher one:
//   C* system libraries, Wire  <  RTP, SDP, Sockets, Cluster  <  Media  <  Streams, Transport, Compositing  <  Client, Conference  <  Server, Load  <  tessera
import PackageDescription

/// A system-library target: a modulemap plus a shim header of `static inline` wrappers for the
/// macros and variadic functions Swift cannot call.
func system(_ name: String, pkgConfig: String?, apt: [String]) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "Tessera",
    products: [
        .executable(name: "tessera", targets: ["tessera"]),
        .library(name: "TesseraRTP", targets: ["RTP"]),
        .library(name: "TesseraSDP", targets: ["SDP"]),
        .library(name: "TesseraTransport", targets: ["Transport"]),
    ],
    targets: [
        system("COpenSSL", pkgConfig: "openssl", apt: ["libssl-dev"]),
        system("CSRTP", pkgConfig: "libsrtp2", apt: ["libsrtp2-dev"]),
        system("CVPX", pkgConfig: "vpx", apt: ["libvpx-dev"]),
        system("COpus", pkgConfig: "opus", apt: ["libopus-dev"]),
        system("CYUV", pkgConfig: nil, apt: ["libyuv-dev"]),  // libyuv ships no .pc file
        system("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
        system("CFreeType", pkgConfig: "freetype2", apt: ["libfreetype-dev"]),
        system("COgg", pkgConfig: "ogg", apt: ["libogg-dev"]),
        system("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
        system("CTurboJPEG", pkgConfig: "libturbojpeg", apt: ["libturbojpeg0-dev"]),
        system("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
        // hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM refuses (with a warning); the headers
        // are in /usr/include and the modulemap links the library, so pkg-config is not needed.
        system("CHiredis", pkgConfig: nil, apt: ["libhiredis-dev"]),
        // epoll, eventfd and recvmmsg/sendmmsg, which Glibc's Swift module leaves out.
        .target(name: "CLinux"),
        // libsrtp2's AES-CM, AES-GCM and HMAC-SHA1 on OpenSSL's EVP, installed into libsrtp's crypto
        // kernel in place of its own (Debian's libsrtp2 does them on NSS, at a high per-packet cost).
        .target(name: "CSRTPCrypto", dependencies: ["CSRTP", "COpenSSL"]),
        // libwebm's WebM parser (C++) behind a C interface: MediaFileReader's WebM and Matroska.
        .target(name: "CWebM", linkerSettings: [.linkedLibrary("webm")]),
        // Which blocks of two picture planes match within a tolerance (the VP8 encoder's settled blocks).
        .target(name: "CPictureDifference"),

        // Wire formats, pure Swift, sans-IO.
        .target(name: "Wire"),
        .target(name: "RTP", dependencies: ["Wire"]),
        .target(name: "SDP"),
        // Receive/send streams: NACK, RTX, PLI/FIR, SR/RR, bandwidth estimate.
        .target(name: "Streams", dependencies: ["Wire", "RTP"]),
        // STUN/ICE-lite, DTLS-SRTP, SRTP: the per-peer transport.
        .target(name: "Transport", dependencies: ["Wire", "RTP", "COpenSSL", "CSRTP", "CSRTPCrypto", "CZlib"]),
        // Codecs, frames, containers, text, still pictures: thin owners of the media C libraries; VP8 over RTP in and out
        // (RTP is a pure wire-format layer beside SDP, below Media).
        .target(name: "Media", dependencies: ["Wire", "RTP", "CVPX", "COpus", "CYUV", "CFreeType", "CPNG", "CTurboJPEG", "CPictureDifference", "CWebM", "COgg"]),
        // Tracks, compositors, layout templates, recording: the seed's public API.
        .target(name: "Compositing", dependencies: ["Wire", "Media"]),
        // The room as sans-IO engines: participants' receive and send halves, the per-guest mixer,
        // the bandwidth rule, room events. Bytes and time in, actions out.
        .target(name: "Conference", dependencies: ["Wire", "RTP", "SDP", "Streams", "Media", "Compositing"]),
        // tessera compose: recordings composed offline by the compositing engines on a manual
        // clock (a driver with its own clock and sleeps, so above the engine layer).
        .target(name: "Compose", dependencies: ["Wire", "Media", "Compositing"]),
        // The socket boundary: an epoll event loop with deadlines, batched UDP sockets, media ticks.
        .target(name: "Sockets", dependencies: ["Wire", "CLinux"]),
        // Many hosts, one service: the Redis client (hiredis), node records, placement, room
        // leases, all Redis I/O on one worker thread. Knows nothing of rooms' media.
        .target(name: "Cluster", dependencies: ["Wire", "CHiredis"]),
        // The host: rooms, mixes, the composite, the HTTP API, config.
        .target(name: "Server", dependencies: ["Wire", "RTP", "SDP", "Streams", "Transport", "Client", "Sockets", "Media", "Compositing", "Conference", "Cluster", "CMicroHTTPD"],
                resources: [.copy("Web")]),
        // Tessera's stack in the client role: the offer a client writes and the answer it reads
        // (ClientOffer/ClientAnswer), and the host's HTTP API as a client calls it. Used by
        // `tessera load` and by an edge host pulling a room from its owner (docs/cluster.md).
        .target(name: "Client", dependencies: ["Wire", "RTP", "SDP", "Streams", "Transport"]),
        // tessera load: synthetic participants in the client role, their checks and the report.
        .target(name: "Load", dependencies: ["Wire", "RTP", "SDP", "Streams", "Transport", "Client", "Sockets", "Media", "Compositing"]),
        .executableTarget(name: "tessera", dependencies: ["Wire", "Server", "Load", "Sockets", "RTP", "SDP", "Transport", "Media", "Compositing", "Conference", "Compose", "Client", "Streams"]),

        // Seeded mutation of valid messages, shared by every parser's robustness test.
        .target(name: "WireTesting", dependencies: ["Wire"], path: "Tests/WireTesting"),
        // Media for tests: tones, and (later) in-memory peers made of the project's own client stack.
        .target(name: "MediaTesting", dependencies: ["Media", "Wire", "WireTesting"], path: "Tests/MediaTesting"),
        .testTarget(name: "WireTests", dependencies: ["Wire", "WireTesting"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "Wire", "WireTesting"]),
        .testTarget(name: "SDPTests", dependencies: ["SDP", "WireTesting"], resources: [.copy("Fixtures")]),
        .testTarget(name: "StreamsTests", dependencies: ["Streams", "RTP", "Wire", "WireTesting"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "RTP", "Wire", "WireTesting", "CSRTP", "CSRTPCrypto", "COpenSSL"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "RTP", "Wire", "WireTesting"]),
        .testTarget(name: "CompositingTests", dependencies: ["Compositing", "Media", "Wire", "WireTesting"]),
        // The seeds' usage examples, as a program that embeds the library writes them.
        .testTarget(name: "SeedExamplesTests", dependencies: ["Compositing", "Media", "Wire"]),
        .testTarget(name: "ComposeTests", dependencies: ["Compose", "Compositing", "Media", "Wire", "WireTesting"]),
        .testTarget(name: "SocketsTests", dependencies: ["Sockets", "Transport", "Wire"]),
        .testTarget(name: "LoadTests", dependencies: ["Load", "Client", "Media", "Compositing", "WireTesting"]),
        .testTarget(name: "ConferenceTests", dependencies: ["Conference", "Compositing", "Media", "RTP", "SDP", "Streams", "Transport", "Client", "Load", "Wire", "WireTesting", "MediaTesting"]),
        .testTarget(name: "ClusterTests", dependencies: ["Cluster", "Wire", "WireTesting"]),
        .testTarget(name: "ServerTests", dependencies: ["Server", "Sockets", "Client", "Load", "Compositing", "Conference", "WireTesting", "MediaTesting"]),
    ],
    swiftLanguageModes: [.v6]
)

// The fuzz product of the upper layers' parsers (Fuzz/Host), only when scripts/fuzz.sh builds it:
// its entry point is libFuzzer's, so it cannot link in an ordinary build.
if Context.environment["TESSERA_FUZZ"] == "1" {
    package.targets.append(.executableTarget(name: "TesseraFuzz", dependencies: ["Server", "Compositing", "Transport"], path: "Fuzz/Host",
                                             swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
    package.products.append(.executable(name: "TesseraFuzz", targets: ["TesseraFuzz"]))
}
