import Client
import Conference
import Foundation
import Load
import RTP
import SDP
import Streams
import Transport
import Wire

/// The audio room of `scripts/bench-load.sh audio500` without the network: a `Room` of 500 guests
/// (3 of them speaking, the rest sending Opus silence with its RFC 6464 level, as browsers do),
/// each guest's packet SRTP-unprotected and handed to the room every 20 ms of a manual clock, the
/// room's ticks run, and every packet it sends SRTP-protected. What it leaves out is the kernel's
/// share (sendmmsg, recvmmsg, loopback delivery: a fifth of the host's time in the load run) and
/// the noise of a load generator beside the host, so a change to the per-packet path shows here
/// when a load run cannot tell it from the machine's noise. Measured: the host thread's CPU time
/// over 2 s of media after 1 s of warm-up, as guests one core carries (100 / the % of a core a
/// guest costs).
func benchRoomAudio500() throws -> Measurement { try benchRoomAudio(guests: 500, speakers: 3) }

func benchRoomAudio(guests: Int, speakers: Int) throws -> Measurement {
    let profile = SRTPProfile.aeadAES128GCM
    let keys = (0..<(profile.masterKeyLength + profile.masterSaltLength)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    let tones = try (0..<speakers).map { try ToneLoop(frequency: 440 + 110 * Double($0)) }
    let silence = try ToneLoop.silence()
    let tick = Duration.milliseconds(20)
    let start = Instant.milliseconds(10_000)
    var rounds: [Double] = []
    for _ in 0..<5 {
        let room = Room(name: "bench", configuration: RoomConfiguration(), labels: nil,
                        wallClock: NTPClockMapping(instant: start, ntp: NTPTimestamp(rawValue: 3_900_000_000 << 32)), seed: 1)
        var members: [(participant: Participant, client: SRTPSession, hostIn: SRTPSession, hostOut: SRTPSession)] = []
        var index: [String: Int] = [:]
        for guest in 0..<guests {
            let offer = ClientOffer(ice: .random(), fingerprint: CertificateFingerprint(algorithm: "sha-256", digest: Array(repeating: 7, count: 32)),
                                    cname: "guest\(guest)", sections: [.opus(mid: "0", ssrc: UInt32(1000 + guest))])
            let negotiated = try negotiate(offer: offer.description, host: benchHost(guest: guest))
            let id = "guest-\(guest)"
            room.join(id: id, identity: id, name: nil, negotiated: negotiated, seed: UInt64(guest), now: start)
            room.connected(id)
            room.secure(id, now: start)
            guard let participant = room.participant(id: id) else { throw BenchError.setup("guest \(guest) did not join") }
            index[id] = members.count
            members.append((participant, try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys),
                            try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys),
                            try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys)))
        }
        var sent = 0
        func drain() {
            while let output = room.pollOutput() {
                switch consume output {
                case .sendRTP(let id, let bytes):
                    if let at = index[id], (try? members[at].hostOut.protectRTP(bytes)) != nil { sent += 1 }
                case .sendRTCP(let id, let bytes):
                    if let at = index[id] { consume(try? members[at].hostOut.protectRTCP(bytes)) }
                default: break
                }
            }
        }
        drain()
        let warmUp = 50, measured = 100
        var cpu = Duration.zero
        var datagrams: [[UInt8]] = []
        datagrams.reserveCapacity(guests)
        for step in 0..<(warmUp + measured) {
            let now = start + tick * step
            // The guests' side (not timed): this tick's packet from each, SRTP-protected.
            datagrams.removeAll(keepingCapacity: true)
            for (guest, member) in members.enumerated() {
                let (payload, level) = guest < tones.count
                    ? (tones[guest].packets[step % ToneLoop.packetsPerLoop], tones[guest].levels[step % ToneLoop.packetsPerLoop])
                    : (silence, ToneLoop.silentLevel)
                let packet = RTPPacket(payloadType: PayloadType(111), sequenceNumber: UInt16(truncatingIfNeeded: step),
                                       timestamp: UInt32(step * 960), ssrc: SSRC(UInt32(1000 + guest)),
                                       extensions: [RTPHeaderExtension(id: UInt8(ClientOffer.midExtensionID), data: Array("0".utf8)),
                                                    RTPHeaderExtension(id: UInt8(ClientOffer.audioLevelExtensionID), data: level.extensionData)],
                                       payload: payload[...])
                datagrams.append(try member.client.protectRTP(packet.serialized()))
            }
            // The host's side, timed: what HostedRoom and its transports do with them.
            let before = threadCPUTime()
            for (guest, datagram) in datagrams.enumerated() {
                if let bytes = try? members[guest].hostIn.unprotectRTP(datagram) {
                    room.receiveRTP(bytes, from: members[guest].participant, now: now)
                    drain()
                }
            }
            while let due = room.nextTimeout, due <= now {
                room.handleTimeout(now: now)
                drain()
            }
            if step >= warmUp { cpu += threadCPUTime() - before }
        }
        guard sent >= guests * measured else { throw BenchError.setup("the room sent \(sent) packets, want at least \(guests * measured)") }
        rounds.append(Double(guests) * (tick * measured).seconds / cpu.seconds)
    }
    return Measurement(what: "audio room of \(guests) (\(speakers) speak), SRTP + room, no kernel", unit: "/core", rounds: rounds)
}

private enum BenchError: Error { case setup(String) }

/// The host's side of a guest's negotiation, as the server makes it (one audio sender).
private func benchHost(guest: Int) -> HostParameters {
    HostParameters(iceUsernameFragment: "bench\(guest)", icePassword: "benchpasswordbenchpassword",
                   fingerprintSHA256: Array(repeating: "AB", count: 32).joined(separator: ":"),
                   candidateAddresses: [HostCandidateAddress(address: "127.0.0.1", port: 50_000)],
                   senders: ["0": HostSender(ssrc: UInt32(500_000 + guest), rtxSSRC: nil, cname: "tessera", streamID: "tessera", trackID: "mix")],
                   sessionID: 1)
}

/// This thread's CPU time (user + system).
private func threadCPUTime() -> Duration {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
}
