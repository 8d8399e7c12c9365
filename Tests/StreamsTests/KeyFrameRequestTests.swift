import RTP
import Streams
import Testing
import Wire

@Suite struct KeyFrameRequestTests {
    @Test func requesterRepeatsPLIEvery300msUntilAKeyFrameArrives() {
        var requester = KeyFrameRequester(localSSRC: 1, mediaSSRC: 2)
        #expect(requester.poll(now: at(0)) == nil)
        requester.keyFrameNeeded(now: at(0))
        var sentAt: [Int] = []
        for ms in stride(from: 0, through: 1000, by: 10) {
            if let packet = requester.poll(now: at(ms)) {
                #expect(packet == .pictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 2)))
                sentAt.append(ms)
            }
        }
        #expect(sentAt == [0, 300, 600, 900])
        requester.keyFrameReceived()
        #expect(requester.poll(now: at(1200)) == nil)
        #expect(requester.nextTimeout == nil)
    }

    @Test func firKeepsItsSequenceNumberForRepeatsAndIncrementsForNewRequests() {
        var requester = KeyFrameRequester(localSSRC: 1, mediaSSRC: 2, method: .fullIntraRequest)
        func firNumber(_ packet: RTCPPacket?) -> UInt8? {
            guard case .fullIntraRequest(let fir)? = packet, fir.entries.count == 1, fir.entries[0].ssrc == 2 else {
                return nil
            }
            return fir.entries[0].sequenceNumber
        }
        requester.keyFrameNeeded(now: at(0))
        #expect(firNumber(requester.poll(now: at(0))) == 0)
        #expect(firNumber(requester.poll(now: at(300))) == 0)  // a repeat (RFC 5104 §4.3.1.2)
        requester.keyFrameReceived()
        requester.keyFrameNeeded(now: at(1000))
        #expect(firNumber(requester.poll(now: at(1000))) == 1)  // a new request
    }

    @Test func pliStormFromFiftyReceiversCostsOneKeyFramePerInterval() {
        var pacer = KeyFrameRequestPacer(mediaSSRC: 0x1111)
        var keyFrames: [Int] = []
        // 50 receivers each send a PLI every 20 ms for 2 s.
        for ms in stride(from: 0, to: 2000, by: 5) {
            if ms % 20 == 0 {
                for receiver in 0..<50 {
                    pacer.receivedPictureLossIndication(PictureLossIndication(senderSSRC: SSRC(UInt32(receiver)),
                                                                              mediaSSRC: 0x1111))
                }
            }
            if pacer.pollKeyFrame(now: at(ms)) { keyFrames.append(ms) }
        }
        #expect(keyFrames == [0, 500, 1000, 1500])
        #expect(pacer.requestsReceived == 5000)
        // Requests about another stream are not ours.
        var other = KeyFrameRequestPacer(mediaSSRC: 0x1111)
        other.receivedPictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 0x9999))
        #expect((other.pollKeyFrame(now: at(0))) == false)
    }

    @Test func requestJustAfterAKeyFrameIsGrantedWhenTheIntervalEnds() {
        var pacer = KeyFrameRequestPacer(mediaSSRC: 5)
        pacer.keyFrameEncoded(now: at(0))
        pacer.receivedPictureLossIndication(PictureLossIndication(senderSSRC: 1, mediaSSRC: 5))
        #expect((pacer.pollKeyFrame(now: at(100))) == false)
        #expect(pacer.nextTimeout == at(500))
        #expect((pacer.pollKeyFrame(now: at(500))) == true)
        #expect(pacer.nextTimeout == nil)
    }

    @Test func duplicateFIRFromTheSameSenderIsIgnored() {
        var pacer = KeyFrameRequestPacer(mediaSSRC: 5)
        let fir = FullIntraRequest(senderSSRC: 1, entries: [FIREntry(ssrc: 5, sequenceNumber: 7)])
        pacer.receivedFullIntraRequest(fir)
        #expect((pacer.pollKeyFrame(now: at(0))) == true)
        pacer.receivedFullIntraRequest(fir)  // retransmitted FIR, same number
        #expect((pacer.pollKeyFrame(now: at(1000))) == false)
        // Another sender's FIR with the same number is a new request.
        pacer.receivedFullIntraRequest(FullIntraRequest(senderSSRC: 2, entries: [FIREntry(ssrc: 5, sequenceNumber: 7)]))
        #expect((pacer.pollKeyFrame(now: at(1000))) == true)
        pacer.receivedFullIntraRequest(FullIntraRequest(senderSSRC: 1, entries: [FIREntry(ssrc: 5, sequenceNumber: 8)]))
        #expect((pacer.pollKeyFrame(now: at(2000))) == true)
        #expect(pacer.keyFramesRequested == 3)
    }
}
