import RTP
import Testing
import Wire
import WireTesting

/// One test per parser: every truncation of its fixtures and 100,000 seeded mutations. Each input
/// must give a value or the parser's typed error, never a trap; a value must serialize and parse
/// back to an equal value. Failures print the seed and index to reproduce.
@Suite struct RobustnessTests {
    static let mutations = 100_000

    /// Tally of outcomes, so the test can show every input was answered.
    struct Outcomes {
        var values = 0
        var errors = 0
        var total: Int { values + errors }
    }

    /// Feeds every truncation and `mutations` mutants of `fixtures` to `check`, which returns
    /// whether the input parsed.
    static func run(_ fixtures: [[UInt8]], seed: UInt64, _ check: ([UInt8], Int) -> Bool) -> (Outcomes, Int) {
        var outcomes = Outcomes()
        var inputs = 0
        for fixture in fixtures {
            for truncation in Mutator.truncations(of: fixture) {
                if check(truncation, -1) { outcomes.values += 1 } else { outcomes.errors += 1 }
                inputs += 1
            }
        }
        var mutator = Mutator(seed: seed)
        for index in 0..<mutations {
            let mutant = mutator.mutate(fixtures[index % fixtures.count])
            if check(mutant, index) { outcomes.values += 1 } else { outcomes.errors += 1 }
            inputs += 1
        }
        return (outcomes, inputs)
    }

    @Test func rtpHeaderAndExtensionsAnswerEveryMutantWithAValueOrATypedError() {
        let map = HeaderExtensionMap([.mid: 1, .audioLevel: 2, .transportSequenceNumber: 3, .absoluteSendTime: 4,
                                      .videoOrientation: 5])
        let otherProfile: [UInt8] = [0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0x12, 0x34, 0x00, 0x01, 1, 2, 3, 4, 0xEE]
        let fixtures = [Fixtures.plainRTP, Fixtures.rtpWithEverything, Fixtures.rtpTwoByteExtensions, otherProfile]
        let (outcomes, inputs) = Self.run(fixtures, seed: 0x5254_5031) { bytes, index in
            let packet: RTPPacket
            do { packet = try RTPPacket.parse(bytes) } catch { return false }
            _ = try? packet.headerExtension(MediaIdentification.self, in: map)
            _ = try? packet.headerExtension(AudioLevel.self, in: map)
            _ = try? packet.headerExtension(TransportSequenceNumber.self, in: map)
            _ = try? packet.headerExtension(AbsoluteSendTime.self, in: map)
            _ = try? packet.headerExtension(VideoOrientation.self, in: map)
            do {
                let reparsed = try RTPPacket.parse(try packet.serialized())
                if reparsed != packet { Issue.record("round trip differs at mutation \(index): \(bytes)") }
            } catch {
                Issue.record("parsed value does not round-trip at mutation \(index): \(error) \(bytes)")
            }
            return true
        }
        #expect(outcomes.total == inputs && inputs >= Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0)
    }

    @Test func rtcpCompoundAndEveryFeedbackTypeAnswerEveryMutantWithAValueOrATypedError() {
        let fixtures = Fixtures.rtcp + [Fixtures.rtcp.reduce([], +)]
        let (outcomes, inputs) = Self.run(fixtures, seed: 0x5254_4350) { bytes, index in
            let packets: [RTCPPacket]
            do { packets = try RTCPPacket.parseCompound(bytes) } catch { return false }
            for case .nack(let nack) in packets { _ = nack.lostSequenceNumbers }
            for case .transportCC(let feedback) in packets { _ = feedback.packets }
            do {
                let reparsed = try RTCPPacket.parseCompound(try RTCPPacket.serializeCompound(packets))
                if reparsed != packets { Issue.record("round trip differs at mutation \(index): \(bytes)") }
            } catch {
                Issue.record("parsed value does not round-trip at mutation \(index): \(error) \(bytes)")
            }
            return true
        }
        #expect(outcomes.total == inputs && inputs >= Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0)
    }

    @Test func vp8DescriptorAndFrameHeaderAnswerEveryMutantWithAValueOrATypedError() {
        let (outcomes, inputs) = Self.run(Fixtures.vp8Payloads, seed: 0x5650_3800) { bytes, index in
            let descriptor: VP8PayloadDescriptor
            let length: Int
            do { (descriptor, length) = try VP8PayloadDescriptor.parse(bytes[...]) } catch { return false }
            let rest = bytes[length...]
            var rebuilt = descriptor.serialized()
            rebuilt += rest
            do {
                let (again, againLength) = try VP8PayloadDescriptor.parse(rebuilt[...])
                if again != descriptor || rebuilt[againLength...] != rest {
                    Issue.record("descriptor round trip differs at mutation \(index): \(bytes)")
                }
            } catch {
                Issue.record("descriptor does not round-trip at mutation \(index): \(error)")
            }
            if let header = try? VP8FrameHeader.parse(rest) {
                if (try? VP8FrameHeader.parse(header.serialized()[...])) != header {
                    Issue.record("frame header round trip differs at mutation \(index): \(bytes)")
                }
            }
            return true
        }
        #expect(outcomes.total == inputs && inputs >= Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0)
    }

    @Test func opusTOCAnswersEveryMutantWithAValueOrATypedError() {
        let (outcomes, inputs) = Self.run(Fixtures.opusPackets, seed: 0x4F50_5553) { bytes, index in
            let info: OpusPacketInfo
            do { info = try OpusPacketInfo.parse(bytes[...]) } catch { return false }
            if info.durationSamples < 120 || info.durationSamples > 5760 {
                Issue.record("duration \(info.durationSamples) out of range at mutation \(index): \(bytes)")
            }
            var packetizer = OpusPacketizer(firstTimestamp: 0)
            if (try? packetizer.packetize(bytes))?.payload != bytes {
                Issue.record("packetizer changed a valid packet at mutation \(index)")
            }
            return true
        }
        #expect(outcomes.total == inputs && inputs >= Self.mutations)
        #expect(outcomes.values > 0 && outcomes.errors > 0)
    }

    @Test func frameAssemblerFedMutatedPacketsStaysBoundedAndNeverTraps() throws {
        let frames = (0..<6).map { Fixtures.frame(size: 120 + 90 * $0, key: $0 % 3 == 0, seed: UInt64($0)) }
        let fixtures = try Fixtures.rtpPackets(frames: frames).map { try $0.serialized() }
        let limits = VP8FrameAssembler.Limits(maxFrames: 16, maxPackets: 128, maxBytes: 32 * 1024)
        var assembler = VP8FrameAssembler(limits: limits)
        var framesOut = 0
        let (outcomes, inputs) = Self.run(fixtures, seed: 0x4153_4D42) { bytes, index in
            guard let packet = try? RTPPacket.parse(bytes) else { return false }
            let result = assembler.insert(packet)
            if assembler.readyFrameCount > limits.maxFrames {
                Issue.record("ready frames exceed the bound at mutation \(index)")
            }
            while let frame = assembler.popFrame() {
                framesOut += 1
                if frame.lastSequenceNumber < frame.firstSequenceNumber {
                    Issue.record("frame with reversed range at mutation \(index)")
                }
            }
            if case .malformed = result { return false }
            return true
        }
        #expect(outcomes.total == inputs && inputs >= Self.mutations)
        #expect(framesOut > 0)
        // After the storm a clean stream from a fresh assembler still assembles.
        var clean = VP8FrameAssembler(limits: limits)
        for bytes in fixtures { clean.insert(try RTPPacket.parse(bytes)) }
        #expect(clean.readyFrameCount == frames.count)
    }
}
