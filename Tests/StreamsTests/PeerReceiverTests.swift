import RTP
import Streams
import Testing
import Wire

@Suite struct PeerReceiverTests {
    let camera: SSRC = 0x1111, cameraRTX: SSRC = 0x2222, microphone: SSRC = 0x3333, host: SSRC = 0xAAAA

    private func makeReceiver() -> PeerReceiver {
        var receiver = PeerReceiver(localSSRC: host, cname: "tessera", reducedSize: false, seed: 1, now: start)
        receiver.add(.init(mediaSSRC: camera, clockRate: 90_000, isVideo: true,
                           rtx: RTXConfiguration(ssrc: cameraRTX, payloadType: 97, associatedPayloadType: 96), nack: true))
        receiver.add(.init(mediaSSRC: microphone, clockRate: 48_000, isVideo: false, nack: false))
        return receiver
    }

    private func compounds(_ datagrams: [[UInt8]]) throws -> [[RTCPPacket]] {
        try datagrams.map { try RTCPPacket.parseCompound($0) }
    }

    @Test func aGapIsNACKedAfterTheReorderWaitInACompoundWithTheCNAME() throws {
        var receiver = makeReceiver()
        for seq in UInt16(1)...10 where seq != 5 && seq != 6 {
            #expect(receiver.receive(videoPacket(sequenceNumber: seq, timestamp: 3000), now: at(Int(seq))) == .media(videoPacket(sequenceNumber: seq, timestamp: 3000)))
        }
        var nacked: Set<UInt16> = []
        for ms in stride(from: 10, through: 60, by: 5) {
            for compound in try compounds(receiver.pollRTCP(now: at(ms))) {
                #expect(compound.contains { if case .sourceDescription = $0 { true } else { false } })
                for case .nack(let nack) in compound {
                    #expect(nack.mediaSSRC == camera)
                    #expect(nack.senderSSRC == host)
                    nacked.formUnion(nack.lostSequenceNumbers)
                }
            }
        }
        #expect(nacked == [5, 6])
        #expect(receiver.nacksSent >= 1, "counted for /metrics")
    }

    @Test func aRetransmissionComesOutAsTheOriginalPacket() throws {
        var receiver = makeReceiver()
        _ = receiver.receive(videoPacket(sequenceNumber: 1, timestamp: 0), now: at(0))
        _ = receiver.receive(videoPacket(sequenceNumber: 3, timestamp: 0), now: at(1))
        let lost = videoPacket(sequenceNumber: 2, timestamp: 0)
        let rtx = RTXPacket.wrap(lost, configuration: RTXConfiguration(ssrc: cameraRTX, payloadType: 97, associatedPayloadType: 96),
                                 sequenceNumber: 500)
        #expect(receiver.receive(rtx, now: at(30)) == .media(lost))
        // A second copy is a duplicate.
        #expect(receiver.receive(rtx, now: at(31)) == .dropped)
        #expect(receiver.receive(videoPacket(ssrc: 0x9999, sequenceNumber: 1, timestamp: 0), now: at(32)) == .unknownSource)
    }

    /// A source stopped by renegotiation is forgotten; the others (their RTX too) go on.
    @Test func aRemovedSourceIsForgottenAndTheOthersGoOn() throws {
        var receiver = PeerReceiver(localSSRC: host, cname: "tessera", reducedSize: false, seed: 1, now: start)
        receiver.add(.init(mediaSSRC: microphone, clockRate: 48_000, isVideo: false, nack: false))
        receiver.add(.init(mediaSSRC: camera, clockRate: 90_000, isVideo: true,
                           rtx: RTXConfiguration(ssrc: cameraRTX, payloadType: 97, associatedPayloadType: 96), nack: true))
        _ = receiver.receive(videoPacket(sequenceNumber: 1, timestamp: 0), now: at(0))
        receiver.remove(mediaSSRC: microphone)
        #expect(receiver.sources.map(\.mediaSSRC) == [camera])
        #expect(receiver.receive(videoPacket(ssrc: microphone, sequenceNumber: 1, timestamp: 0), now: at(1)) == .unknownSource)
        let lost = videoPacket(sequenceNumber: 2, timestamp: 0)
        let rtx = RTXPacket.wrap(lost, configuration: RTXConfiguration(ssrc: cameraRTX, payloadType: 97, associatedPayloadType: 96),
                                 sequenceNumber: 9)
        #expect(receiver.receive(rtx, now: at(2)) == .media(lost), "the camera's RTX still finds its stream")
        receiver.remove(mediaSSRC: camera)
        #expect(receiver.sources.isEmpty)
        #expect(receiver.receive(rtx, now: at(3)) == .unknownSource)
        receiver.remove(mediaSSRC: camera)  // twice is nothing
    }

    @Test func regularReportsCarryABlockPerSourceWithTheLoss() throws {
        var receiver = makeReceiver()
        for seq in UInt16(1)...100 where seq % 10 != 0 {
            _ = receiver.receive(videoPacket(sequenceNumber: seq, timestamp: UInt32(seq) * 3000), now: at(Int(seq) * 10))
        }
        var reports: [ReceptionReport] = []
        for ms in stride(from: 0, through: 3000, by: 50) {
            for compound in try compounds(receiver.pollRTCP(now: at(ms))) {
                for case .receiverReport(let rr) in compound where rr.ssrc == host { reports += rr.reports }
            }
        }
        let last = try #require(reports.last { $0.ssrc == camera })
        #expect(last.cumulativeLost == 9)  // seqs 10, 20, … 90 never came (100 is not yet a gap)
        #expect(last.extendedHighestSequenceNumber & 0xFFFF == 99)
        #expect(receiver.nextTimeout != nil)
    }

    /// The regular report carries the SRs of what we send the peer: the SR from the local SSRC
    /// holds the report blocks (RFC 3550 §6.4.1), another stream's SR goes in a compound of its
    /// own with its CNAME; between regular reports none is asked for.
    @Test func regularReportsCarryOurSenderReports() throws {
        var receiver = makeReceiver()
        _ = receiver.receive(videoPacket(sequenceNumber: 1, timestamp: 0), now: at(0))
        let video: SSRC = 0xBBBB
        var asked = 0
        var sent: [[RTCPPacket]] = []
        for ms in stride(from: 0, through: 1500, by: 10) {
            sent += try compounds(receiver.pollRTCP(now: at(ms)) { now in
                asked += 1
                return [SenderReport(ssrc: self.host, ntpTimestamp: 1 << 32, rtpTimestamp: 48_000, packetCount: 10, octetCount: 1000),
                        SenderReport(ssrc: video, ntpTimestamp: 1 << 32, rtpTimestamp: 90_000, packetCount: 20, octetCount: 9000)]
            })
        }
        #expect(asked >= 1 && sent.count == 2 * asked, "two compounds per regular report")
        let first = try #require(sent.first)
        guard case .senderReport(let own) = first.first else {
            Issue.record("the first compound starts with our SR: \(first)")
            return
        }
        #expect(own.ssrc == host && own.reports.contains { $0.ssrc == camera })
        let second = try #require(sent.dropFirst().first)
        guard case .senderReport(let other) = second.first else {
            Issue.record("the second compound starts with the video SR: \(second)")
            return
        }
        #expect(other.ssrc == video && other.reports.isEmpty)
        #expect(second.contains { if case .sourceDescription = $0 { true } else { false } })
    }
}
