import Sockets
import Foundation
import RTP
import Server
import Transport
import Wire

/// `tessera bench [NAME...]`: throughput of the per-packet work, measured in this process on one
/// thread. Each benchmark runs 5 rounds after a warm-up and prints the median; build with
/// `-c release` for figures worth comparing.
/// Each benchmark prints one line per case it measures (`srtp`: four).
var benchmarks: [(name: String, run: () throws -> [Measurement])] {
    [
    one("rtp", benchRTP), one("rtcp", benchRTCP), one("stun", benchSTUN), one("stun-check", benchSTUNCheck),
    ("srtp", benchSRTP), one("srtp-loop", benchSRTPLoop),
    one("mix-10", benchMix10), one("mix-100", benchMix100), one("mix-1000", benchMix1000),
    one("mixminus-10", benchMixMinus10), one("mixminus-100", benchMixMinus100), one("mixminus-1000", benchMixMinus1000),
    one("vp8-encode-360p", benchVP8Encode360p), one("vp8-encode-720p", benchVP8Encode720p),
    one("vp8-decode-360p", benchVP8Decode360p), one("vp8-decode-720p", benchVP8Decode720p), one("vp8-cpu-used", benchVP8CpuUsed),
    ("vp8-composite-speed", benchVP8CompositeSpeed), ("vp8-settled", benchVP8Settled),
    one("opus-encode-10", benchOpusEncode10), one("opus-encode-5", benchOpusEncode5), one("opus-decode", benchOpusDecode),
    one("room-audio-500", benchRoomAudio500),
    ]
}
/// A benchmark of one case.
private func one(_ name: String, _ run: @escaping () throws -> Measurement) -> (name: String, run: () throws -> [Measurement]) {
    (name, { [try run()] })
}
var benchmarkNames: [String] { benchmarks.map(\.name) }

func runBenchmarks(_ names: [String]) {
    let all = benchmarks
    let wanted = names.isEmpty ? benchmarkNames : names
    for name in wanted where !benchmarkNames.contains(name) {
        benchCommand.fail("no benchmark \(name); choose from \(benchmarkNames.joined(separator: ", "))")
    }
    #if DEBUG
    print("bench: this is a debug build; use `swift run -c release tessera bench` for real figures")
    #endif
    print("benchmark       what is measured" + String(repeating: " ", count: 46) + "median        (min .. max)")
    for (name, run) in all where wanted.contains(name) {
        do {
            for result in try run() { print(result.line(name: name)) }
        } catch {
            abort("bench", "\(name): \(error)")
        }
    }
}

/// Operations per second over 5 rounds.
struct Measurement {
    let what: String
    let unit: String
    let rounds: [Double]

    func line(name: String) -> String {
        let sorted = rounds.sorted()
        func format(_ value: Double) -> String {
            value >= 1_000_000 ? String(format: "%.2f M", value / 1_000_000)
                : value >= 10_000 ? String(format: "%.0f k", value / 1_000) : String(format: "%.0f ", value)
        }
        return name.padding(toLength: 16, withPad: " ", startingAt: 0) + what.padding(toLength: 62, withPad: " ", startingAt: 0)
            + "\(format(sorted[sorted.count / 2]))\(unit)".padding(toLength: 14, withPad: " ", startingAt: 0)
            + "(\(format(sorted[0])) .. \(format(sorted[sorted.count - 1])))"
    }
}

/// Runs `body` (which does `operationsPerCall` operations) for about `roundTime` per round.
func measure(_ what: String, unit: String = "/s", operationsPerCall: Int = 1, roundTime: Duration = .milliseconds(300),
             _ body: () throws -> Void) rethrows -> Measurement {
    let clock = ContinuousClock()
    // Warm up and find how many calls fill a round.
    var calls = 1
    while true {
        let elapsed = try clock.measure { for _ in 0..<calls { try body() } }
        if elapsed >= roundTime / 10 { calls = max(1, Int(Double(calls) * 10 * (roundTime / elapsed) / 10)); break }
        calls *= 2
    }
    var rounds: [Double] = []
    for _ in 0..<5 {
        let elapsed = try clock.measure { for _ in 0..<calls { try body() } }
        rounds.append(Double(calls * operationsPerCall) / elapsed.seconds)
    }
    return Measurement(what: what, unit: unit, rounds: rounds)
}

/// Keeps the optimizer from removing work whose result is otherwise unused.
@inline(never) func consume<T>(_ value: T) { withExtendedLifetime(value) {} }

/// A 1,200-byte VP8 packet as Chromium sends it: mid, abs-send-time and transport-cc extensions.
func sampleVideoPacket() throws -> [UInt8] {
    try RTPPacket(marker: true, payloadType: 96, sequenceNumber: 4711, timestamp: 90_000, ssrc: 0x1234_5678,
                  extensions: [RTPHeaderExtension(id: 4, data: Array("0".utf8)), RTPHeaderExtension(id: 2, data: [0x12, 0x34, 0x56]),
                               RTPHeaderExtension(id: 3, data: [0x01, 0x02])],
                  payload: ArraySlice((0..<1170).map { UInt8(truncatingIfNeeded: $0) })).serialized()
}

func benchRTP() throws -> Measurement {
    let datagram = try sampleVideoPacket()
    return try measure("RTP parse + serialize, 1200 B, 3 extensions", unit: " pkt/s") {
        consume(try RTPPacket.parse(datagram).serialized())
    }
}

func benchRTCP() throws -> Measurement {
    // What a receiver sends: RR with two report blocks, SDES, a NACK, a PLI and transport-cc for 40 packets.
    let report = ReceptionReport(ssrc: 0x1234_5678, fractionLost: 3, cumulativeLost: 17, extendedHighestSequenceNumber: 70_000,
                                 jitter: 120, lastSenderReport: 0xABCD_0000, delaySinceLastSenderReport: 6553)
    var feedback: [TransportCCPacketStatus] = []
    for index in 0..<40 {
        let delta: Int16? = index % 9 == 0 ? nil : Int16(4 * (index % 5))
        feedback.append(TransportCCPacketStatus(sequenceNumber: UInt16(1000 + index), receiveDelta: delta))
    }
    let compound = try RTCPPacket.serializeCompound([
        .receiverReport(ReceiverReport(ssrc: 1, reports: [report, report])),
        .sourceDescription(SourceDescription(chunks: [SDESChunk(source: 1, cname: "tessera-bench-cname")])),
        .nack(GenericNACK(senderSSRC: 1, mediaSSRC: 0x1234_5678, lostSequenceNumbers: [100, 102, 140])),
        .pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 0x1234_5678)),
        .transportCC(TransportCCFeedback(senderSSRC: 1, mediaSSRC: 0x1234_5678, referenceTime: 7, feedbackPacketCount: 1, packets: feedback)),
    ])
    return try measure("RTCP compound parse + serialize (RR, SDES, NACK, PLI, TWCC)", unit: " pkt/s") {
        consume(try RTCPPacket.serializeCompound(RTCPPacket.parseCompound(compound)))
    }
}

/// A connectivity check as Chromium sends it to a lite host.
func sampleCheck(password: String) throws -> [UInt8] {
    var request = STUNMessageBuilder(type: .bindingRequest, transactionID: .random())
    try request.append(contentsOf: [.username("hostufrg:peerufrg"), .priority(1_853_824_767),
                                    .iceControlling(tieBreaker: 0x0102_0304_0506_0708), .useCandidate])
    return request.finish(integrityKey: .shortTerm(password: password), fingerprint: true)
}

func benchSTUN() throws -> Measurement {
    let check = try sampleCheck(password: "hostpasswordhostpassword")
    return try measure("STUN parse + serialize of a check (no crypto)", unit: " msg/s") {
        let message = try STUNMessage(parsing: check)
        var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID)
        try builder.append(contentsOf: message.attributes)
        consume(builder.finish())
    }
}

func benchSTUNCheck() throws -> Measurement {
    let host = ICECredentials(ufrag: "hostufrg", password: "hostpasswordhostpassword")
    var agent = ICELiteAgent(local: host, remote: ICECredentials(ufrag: "peerufrg", password: "peerpasswordpeerpassword"))
    let check = try sampleCheck(password: host.password)
    let source = TransportAddress(ipv4: 127, 0, 0, 1, port: 40000)
    return try measure("ICE-lite check: parse, verify HMAC + CRC, answer signed", unit: " msg/s") {
        consume(try agent.handleCheck(STUNMessage(parsing: check), from: source, now: .milliseconds(1)))
    }
}

/// A 100-byte Opus packet as Chromium sends it: mid and audio level extensions, 80 B of payload.
func sampleAudioPacket() throws -> [UInt8] {
    try RTPPacket(marker: false, payloadType: 111, sequenceNumber: 4711, timestamp: 48_000, ssrc: 0x8765_4321,
                  extensions: [RTPHeaderExtension(id: 4, data: Array("0".utf8)), RTPHeaderExtension(id: 1, data: [0x80 | 30])],
                  payload: ArraySlice((0..<80).map { UInt8(truncatingIfNeeded: $0 &* 7) })).serialized()
}

/// SRTP protect + unprotect per packet, for both profiles at a video and an audio packet's size,
/// with the crypto this process uses: OpenSSL's, or libsrtp2's own with TESSERA_SRTP_CRYPTO=libsrtp.
func benchSRTP() throws -> [Measurement] {
    let video = try RTPPacket.parse(sampleVideoPacket()), audio = try RTPPacket.parse(sampleAudioPacket())
    let crypto = SRTPSession.crypto == .openssl ? "OpenSSL" : "libsrtp"
    var results: [Measurement] = []
    for (profile, name) in [(SRTPProfile.aeadAES128GCM, "AEAD_AES_128_GCM"), (.aes128CMHMACSHA1_80, "AES128_CM_HMAC_SHA1_80")] {
        for var packet in [video, audio] {
            let keys = (0..<(profile.masterKeyLength + profile.masterSaltLength)).map { UInt8($0) }
            let sender = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys)
            let receiver = try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys)
            let size = try packet.serialized().count
            results.append(try measure("SRTP \(name) protect+unprotect \(size) B, \(crypto)", unit: " pkt/s") {
                packet.sequenceNumber &+= 1
                consume(try receiver.unprotectRTP(sender.protectRTP(packet.serialized())))
            })
        }
    }
    return results
}

/// RTP through the real loop path on one core: protect, sendmmsg to 127.0.0.1, recvmmsg, unprotect.
func benchSRTPLoop() throws -> Measurement {
    let profile = SRTPProfile.aeadAES128GCM
    let keys = (0..<(profile.masterKeyLength + profile.masterSaltLength)).map { UInt8($0) }
    let sender = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys)
    let receiver = try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys)
    let loopback = TransportAddress(ipv4: 127, 0, 0, 1, port: 0)
    let from = try UDPSocket(bind: loopback), to = try UDPSocket(bind: loopback)
    var packet = try RTPPacket.parse(sampleVideoPacket())
    let batch = 32
    var lost = 0
    let result = try measure("SRTP protect + sendmmsg + recvmmsg + unprotect, 1200 B", unit: " pkt/s", operationsPerCall: batch) {
        var datagrams: [(bytes: [UInt8], destination: TransportAddress)] = []
        datagrams.reserveCapacity(batch)
        for _ in 0..<batch {
            packet.sequenceNumber &+= 1
            datagrams.append((try sender.protectRTP(packet.serialized()), to.localAddress))
        }
        from.send(datagrams)
        var received = 0
        for _ in 0..<4 where received < batch {
            for datagram in to.receiveBatch() {
                consume(try receiver.unprotectRTP(datagram.bytes))
                received += 1
            }
        }
        lost += batch - received
    }
    if lost > 0 { print("bench: srtp-loop: \(lost) datagrams were not received (socket buffers)") }
    return result
}
