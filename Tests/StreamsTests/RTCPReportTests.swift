import RTP
import Streams
import Testing
import Wire

@Suite struct RTCPReportTests {
    /// 2026-01-01 00:00:00 UTC as NTP time.
    static let wallClock = NTPTimestamp(unixNanoseconds: 1_767_225_600_000_000_000)

    static func sendStream() -> RTPSendStream {
        RTPSendStream(configuration: .init(ssrc: 0x1111, clockRate: 90_000),
                      clock: NTPClockMapping(instant: start, ntp: wallClock))
    }

    @Test func ntpTimestampFromUnixTimeAndCompactForm() {
        let ntp = NTPTimestamp(unixNanoseconds: 1_500_000_000)  // 1970-01-01 00:00:01.5
        #expect(ntp.rawValue >> 32 == 2_208_988_801)
        #expect(ntp.rawValue & 0xFFFF_FFFF == 0x8000_0000)
        #expect(ntp.compact == UInt32(truncatingIfNeeded: 2_208_988_801 << 16) | 0x8000)
        #expect((ntp + .milliseconds(500)).rawValue == 2_208_988_802 << 32)
    }

    @Test func senderReportMapsNTPToRTPAtTheClockRateAndCounts() throws {
        var stream = Self.sendStream()
        #expect(stream.makeSenderReport(now: at(0)) == nil)
        for index in 0..<10 {
            let packet = videoPacket(sequenceNumber: UInt16(index), timestamp: 1000 + UInt32(index) * 3000, size: 100)
            _ = try stream.packetSent(packet, now: at(index * 33), captureTime: at(index * 33 + index / 3))
        }
        let first = try #require(stream.makeSenderReport(now: at(400)))
        let second = try #require(stream.makeSenderReport(now: at(1400)))
        #expect(first.ssrc == 0x1111)
        #expect(first.packetCount == 10)
        #expect(first.octetCount == 1000)
        #expect(first.ntpTimestamp == (Self.wallClock + .milliseconds(400)).rawValue)
        // Last packet: ts 28000 captured at 300 ms; 100 ms later at 90 kHz is +9000.
        #expect(first.rtpTimestamp == 28_000 + 9000)
        // One second of NTP is 90000 RTP ticks.
        #expect(second.ntpTimestamp - first.ntpTimestamp == 1 << 32)
        #expect(second.rtpTimestamp &- first.rtpTimestamp == 90_000)
        // And it survives the wire.
        let parsed = try RTCPPacket.parseCompound(RTCPPacket.serializeCompound([.senderReport(first)]))
        #expect(parsed == [.senderReport(first)])
    }

    @Test func receiverReportCarriesABlockPerReceiveStream() throws {
        var streams = (0..<3).map { index in
            RTPReceiveStream(configuration: .init(localSSRC: 0xAAAA, mediaSSRC: SSRC(UInt32(100 + index)),
                                                  clockRate: 90_000, isVideo: true))
        }
        for index in streams.indices {
            for sequence: UInt16 in 0..<20 where !(index == 1 && sequence % 4 == 2) {
                _ = streams[index].receive(videoPacket(ssrc: SSRC(UInt32(100 + index)), sequenceNumber: sequence,
                                                       timestamp: UInt32(sequence) * 3000), now: at(Int(sequence) * 33))
            }
        }
        let blocks = streams.indices.compactMap { streams[$0].makeReceptionReport(now: at(1000)) }
        let builder = RTCPCompoundBuilder(cname: "tessera-host")
        let compound = builder.report(localSSRC: 0xAAAA, senderReport: nil, reports: blocks)
        let parsed = try RTCPPacket.parseCompound(RTCPPacket.serializeCompound(compound))
        guard case .receiverReport(let rr) = parsed.first else {
            Issue.record("RR must come first, got \(parsed)")
            return
        }
        #expect(rr.ssrc == 0xAAAA)
        #expect(rr.reports.map(\.ssrc) == [100, 101, 102])
        #expect(rr.reports.map(\.cumulativeLost) == [0, 5, 0])  // 2, 6, 10, 14, 18 lost on 101
        #expect(rr.reports[1].fractionLost == UInt8(5 * 256 / 20))
        #expect(rr.reports.allSatisfy { $0.extendedHighestSequenceNumber == 19 || $0.ssrc == 101 })
        guard case .sourceDescription(let sdes) = parsed.last else {
            Issue.record("SDES must follow, got \(parsed)")
            return
        }
        #expect(sdes.chunks.first?.cname == "tessera-host")
    }

    @Test func compoundPutsSRFirstSplitsBlocksOver31AndAlwaysCarriesCNAME() throws {
        var stream = Self.sendStream()
        _ = try stream.packetSent(videoPacket(sequenceNumber: 1, timestamp: 0), now: at(0))
        let blocks = (0..<40).map { ReceptionReport(ssrc: SSRC(UInt32($0))) }
        let builder = RTCPCompoundBuilder(cname: "c")
        let compound = builder.report(localSSRC: 0x1111, senderReport: stream.makeSenderReport(now: at(10)),
                                      reports: blocks,
                                      feedback: [.pictureLossIndication(PictureLossIndication(senderSSRC: 0x1111,
                                                                                               mediaSSRC: 7))])
        let parsed = try RTCPPacket.parseCompound(RTCPPacket.serializeCompound(compound))
        #expect(parsed.count == 4)
        guard case .senderReport(let sr) = parsed[0], case .receiverReport(let rr) = parsed[1],
            case .sourceDescription(let sdes) = parsed[2], case .pictureLossIndication = parsed[3]
        else {
            Issue.record("unexpected order \(parsed)")
            return
        }
        #expect(sr.reports.count == 31 && rr.reports.count == 9)
        #expect(sdes.chunks == [SDESChunk(source: 0x1111, cname: "c")])
        // Early feedback: compound unless reduced size was negotiated (RFC 5506).
        let nack: [RTCPPacket] = [.nack(GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [5]))]
        #expect(builder.feedback(localSSRC: 1, nack).count == 3)
        #expect(RTCPCompoundBuilder(cname: "c", reducedSize: true).feedback(localSSRC: 1, nack) == nack)
    }

    /// Sender → 20 ms → receiver holds the SR 500 ms → 20 ms → sender: RTT 40 ms.
    @Test func roundTripTimeFromLSRAndDLSR() throws {
        var sender = Self.sendStream()
        var receiver = RTPReceiveStream(configuration: .init(localSSRC: 0xAAAA, mediaSSRC: 0x1111, clockRate: 90_000,
                                                             isVideo: true))
        for sequence: UInt16 in 0..<3 {
            let bytes = try sender.packetSent(videoPacket(sequenceNumber: sequence, timestamp: 0), now: at(0))
            _ = receiver.receive(try RTPPacket.parse(bytes), now: at(20))
        }
        let sr = try #require(sender.makeSenderReport(now: at(100)))
        receiver.receivedSenderReport(sr, now: at(120))
        let blockValue = receiver.makeReceptionReport(now: at(620))
        let block = try #require(blockValue)
        #expect(block.delaySinceLastSenderReport == 32_768)  // 0.5 s
        _ = sender.receivedRTCP([.receiverReport(ReceiverReport(ssrc: 0xAAAA, reports: [block]))], now: at(640))
        let rtt = try #require(sender.roundTripTime)
        #expect(abs((rtt - .milliseconds(40)).nanosecondsClamped) < 100_000)  // within 1/65536 s rounding
        // A block without an SR reference gives no RTT.
        #expect(ReceptionReport(ssrc: 1).roundTripTime(arrival: Self.wallClock) == nil)
    }

    @Test func schedulerSpreadsReportsBetweenHalfAndOneAndAHalfTheMinimum() {
        var scheduler = RTCPScheduler(configuration: .video, seed: 42, now: at(0))
        #expect(scheduler.nextReportAt >= at(250) && scheduler.nextReportAt <= at(750))
        #expect(!scheduler.isDue(now: at(249)))
        var now = scheduler.nextReportAt
        var total: Duration = .zero
        for _ in 0..<1000 {
            #expect(scheduler.isDue(now: now))
            scheduler.reportSent(size: 100, now: now)
            let interval = scheduler.nextReportAt - now
            #expect(interval >= .milliseconds(500) && interval <= .milliseconds(1500))
            total += interval
            now = scheduler.nextReportAt
        }
        let mean = Double(total.nanosecondsClamped) / 1000 / 1e9
        #expect(abs(mean - 1.0) < 0.05)
        // The same seed gives the same schedule.
        #expect(RTCPScheduler(configuration: .video, seed: 42, now: at(0)).nextReportAt
            == RTCPScheduler(configuration: .video, seed: 42, now: at(0)).nextReportAt)
        // Audio: 5 s minimum.
        var audio = RTCPScheduler(configuration: .audio, seed: 7, now: at(0))
        audio.reportSent(size: 100, now: at(0))
        #expect(audio.nextReportAt >= at(2500) && audio.nextReportAt <= at(7500))
    }

    @Test func schedulerStretchesTheIntervalWhenRTCPBandwidthIsShort() {
        // 1000 receivers sharing 5 % of 64 kbit/s: 0.75 · 400 B/s for 1000 × ~128 B reports ≈ 427 s.
        var scheduler = RTCPScheduler(configuration: .audio, seed: 1, now: at(0))
        scheduler.members = 1000
        scheduler.senders = 1
        scheduler.reportSent(size: 100, now: at(0))
        #expect(scheduler.nextReportAt - at(0) > .seconds(200))
    }
}
