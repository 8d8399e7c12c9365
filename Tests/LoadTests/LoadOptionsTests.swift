import Foundation
import Testing
import WireTesting
@testable import Load

@Suite struct LoadOptionsTests {
    @Test func noArgumentsGiveTheDefaultsAgainstTheDefaultHost() throws {
        let options = try LoadOptions(arguments: [])
        #expect(options.url == "http://127.0.0.1:8080")
        #expect(options.participants == 10 && options.speakers == 3 && options.decoders == 2)
        #expect(options.video == LoadOptions.VideoFormat(width: 640, height: 360, framesPerSecond: 30))
        #expect(options.duration == .seconds(30))
        #expect(options.audioLevels)
    }

    @Test func everyOptionIsRead() throws {
        let options = try LoadOptions(arguments: [
            "--url", "http://[::1]:9000/", "--room", "bench-1", "--participants", "200", "--duration", "1500ms",
            "--join-rate", "25", "--video", "off", "--speakers", "5", "--churn", "0.5", "--decoders", "3", "--audio-levels", "off",
            "--report", "none", "--max-audio-latency", "300ms", "--max-video-latency", "1s", "--max-loss", "1%", "--quiet",
        ])
        #expect(options.url == "http://[::1]:9000" && options.host == "::1")
        #expect(options.room == "bench-1" && options.participants == 200 && options.duration == .milliseconds(1500))
        #expect(options.joinRate == 25 && options.video == nil && options.speakers == 5 && options.churn == 0.5)
        #expect(options.decoders == 0)  // nothing to decode without video
        #expect(options.report == .none && options.quiet && !options.audioLevels)
        #expect(options.maxAudioLatencyMilliseconds == 300 && options.maxVideoLatencyMilliseconds == 1000)
        #expect(options.maxLossFraction == 0.01)
    }

    @Test func rejoinTakesTheHostsOfACommaSeparatedURL() throws {
        let options = try LoadOptions(arguments: ["--url", "http://127.0.0.1:8081, http://127.0.0.1:8082/", "--rejoin"])
        #expect(options.rejoin)
        #expect(options.url == "http://127.0.0.1:8081" && options.host == "127.0.0.1")
        #expect(options.urls == ["http://127.0.0.1:8081", "http://127.0.0.1:8082"])
        let plain = try LoadOptions(arguments: ["--url", "http://127.0.0.1:9000"])
        #expect(!plain.rejoin && plain.urls == ["http://127.0.0.1:9000"])
        #expect(throws: LoadOptionsError.remoteRefused("10.0.0.2")) {
            try LoadOptions(arguments: ["--url", "http://127.0.0.1:8081,http://10.0.0.2:8082"])
        }
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--url", "http://127.0.0.1:8081,"]) }
    }

    @Test func theImpairmentOptionsMakeTheNetworkEachParticipantMeets() throws {
        let options = try LoadOptions(arguments: ["--loss", "5%", "--burst", "3", "--jitter", "50ms", "--reorder", "0.01", "--seed", "9"])
        let impairment = try #require(options.impairment)
        #expect(impairment.loss == 0.05 && impairment.burstLength == 3 && impairment.jitter == .milliseconds(50))
        #expect(impairment.reorder == 0.01 && impairment.delay == .zero && options.seed == 9)
        #expect(try LoadOptions(arguments: []).impairment == nil)
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--loss", "150%"]) }
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--burst", "0.5"]) }
    }

    @Test func aRecordingIsCheckedFromTheHostsFolderAndNeedsVideo() throws {
        #expect(try LoadOptions(arguments: ["--record", "/srv/recordings"]).recordingsFolder == "/srv/recordings")
        #expect(try LoadOptions(arguments: []).recordingsFolder == nil)
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--record", "/tmp", "--video", "off"]) }
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--record", ""]) }
    }

    /// `--secret`: each participant's join carries a token for its own identity, every other
    /// call of the run the room's admin token.
    @Test func aSecretSignsEachJoinForItsIdentityAndTheRestAsTheRoomsAdmin() throws {
        #expect(try LoadOptions(arguments: ["--secret", "s3cret"]).secret == "s3cret")
        #expect(throws: LoadOptionsError.self) { try LoadOptions(arguments: ["--secret", ""]) }
        let credentials = LoadRun.credentials(room: "load") { room, identity, admin in "\(room)|\(identity)|\(admin)" }
        #expect(credentials("POST", "/v1/rooms/load/participants?identity=load-3&name=x") == "load|load-3|false")
        #expect(credentials("DELETE", "/v1/rooms/load/participants/abc") == "load|tessera-load|true")
        #expect(credentials("GET", "/v1/rooms/load/layout") == "load|tessera-load|true")
        #expect(credentials("GET", "/metrics") == "load|tessera-load|true")
    }

    /// `--attack`; its hostile SDP of thousands of m-lines stays under the host's 64 KiB body
    /// limit, so the SDP reader meets it (not the body limit), and every request names its room.
    @Test func anAttackIsAskedForAndItsSDPReachesTheReader() throws {
        #expect(try LoadOptions(arguments: ["--attack"]).attack)
        #expect(try !LoadOptions(arguments: []).attack)
        let requests = LoadAttacker.hostileRequests(room: "load-hostile", guestRoom: "load", own: "/v1/rooms/load/participants/p1",
                                                    neverConnecting: Array("v=0\r\n".utf8), round: 1)
        let thousands = try #require(requests.first { $0.0.contains("3000 m-lines") }?.1)
        let text = String(decoding: thousands, as: UTF8.self)
        let body = try #require(text.range(of: "\r\n\r\n")).upperBound
        #expect(text[body...].utf8.count < 64 * 1024)
        #expect(text.components(separatedBy: "m=audio").count - 1 == 3000)
        #expect(requests.filter { String(decoding: $0.1.prefix(200), as: UTF8.self).contains("/participants?identity=") }
            .allSatisfy { String(decoding: $0.1.prefix(200), as: UTF8.self).contains("/v1/rooms/load-hostile/") })
    }

    @Test func speakersAndDecodersNeverOutnumberTheParticipants() throws {
        let options = try LoadOptions(arguments: ["--participants", "2", "--speakers", "3", "--decoders", "5"])
        #expect(options.speakers == 2 && options.decoders == 2)
    }

    @Test func badValuesNameTheOptionAndWhy() {
        let cases: [([String], String)] = [
            (["--participants", "0"], "--participants 0"),
            (["--participants", "many"], "--participants many"),
            (["--duration", "forever"], "--duration forever"),
            (["--duration", "0s"], "--duration 0s"),
            (["--video", "640x361@30"], "--video 640x361@30"),
            (["--video", "640x360"], "--video 640x360"),
            (["--room", "a/b"], "--room a/b"),
            (["--max-loss", "150%"], "--max-loss 150%"),
            (["--audio-levels", "yes"], "--audio-levels yes: on or off"),
            (["--url", "https://127.0.0.1:8080"], "only http://"),
            (["--url", "http://127.0.0.1:8080/v1"], "no path"),
            (["--url", "http://127.0.0.1:99999"], "bad port"),
            (["--speakers"], "--speakers needs a value"),
            (["--bogus", "1"], "unknown option --bogus"),
            (["stray"], "unexpected argument stray"),
        ]
        for (arguments, expected) in cases {
            do {
                _ = try LoadOptions(arguments: arguments)
                Issue.record("\(arguments) was accepted")
            } catch {
                #expect(error.description.contains(expected), "\(arguments): \(error.description)")
            }
        }
    }

    @Test func aHostOutsideLoopbackNeedsAllowRemote() throws {
        #expect(throws: LoadOptionsError.remoteRefused("192.0.2.7")) { try LoadOptions(arguments: ["--url", "http://192.0.2.7:8080"]) }
        #expect(throws: LoadOptionsError.remoteRefused("example.net")) { try LoadOptions(arguments: ["--url", "http://example.net"]) }
        #expect(throws: LoadOptionsError.remoteRefused("127.0.0.1.example.net")) {
            try LoadOptions(arguments: ["--url", "http://127.0.0.1.example.net:80"])
        }
        let remote = try LoadOptions(arguments: ["--url", "http://192.0.2.7:8080", "--allow-remote"])
        #expect(remote.host == "192.0.2.7")
        #expect(try LoadOptions(arguments: ["--url", "http://localhost:8080"]).host == "localhost")
        #expect(try LoadOptions(arguments: ["--url", "http://127.8.9.10:1"]).host == "127.8.9.10")
    }

    /// Mutated and truncated command lines: each is read or refused with an error, never a trap.
    @Test func mutatedCommandLinesAreReadOrRefused() {
        let valid = ["--url", "http://127.0.0.1:8080", "--room", "r", "--participants", "12", "--duration", "20s",
                     "--join-rate", "5", "--video", "320x180@15", "--speakers", "2", "--churn", "1", "--max-loss", "2%"]
        var mutator = Mutator(seed: 0x10AD)
        var accepted = 0, refused = 0
        for round in 0..<5000 {
            var arguments = valid
            if round % 5 == 0 {
                arguments = Array(arguments.prefix(round % arguments.count))
            } else {
                let index = round % arguments.count
                arguments[index] = String(decoding: mutator.mutate(Array(arguments[index].utf8)), as: UTF8.self)
            }
            do {
                let options = try LoadOptions(arguments: arguments)
                #expect(options.participants >= 1 && options.speakers <= options.participants)
                accepted += 1
            } catch {
                #expect(!error.description.isEmpty)
                refused += 1
            }
        }
        #expect(accepted > 0 && refused > 0)
    }
}

@Suite struct MetricsParsingTests {
    @Test func prometheusLinesAreReadByNameAndLabels() {
        let text = """
            # HELP process_cpu_seconds_total CPU.
            # TYPE process_cpu_seconds_total counter
            process_cpu_seconds_total 12.5
            tessera_datagrams_total{direction="in"} 4096
            tessera_video_frames_composed 900
            garbage line
            tessera_half
            """
        let values = LoadRun.parseMetrics(text)
        #expect(values["process_cpu_seconds_total"] == 12.5)
        #expect(values["tessera_datagrams_total{direction=\"in\"}"] == 4096)
        #expect(values["tessera_video_frames_composed"] == 900)
        #expect(values.count == 3)
    }

    @Test func mutatedMetricsNeverTrap() {
        let text = Array("process_cpu_seconds_total 12.5\ntessera_participants 10\n# HELP x y\n".utf8)
        var mutator = Mutator(seed: 7)
        for _ in 0..<5000 {
            _ = LoadRun.parseMetrics(String(decoding: mutator.mutate(text), as: UTF8.self))
        }
        for truncated in Mutator.truncations(of: text) {
            _ = LoadRun.parseMetrics(String(decoding: truncated, as: UTF8.self))
        }
    }
}
