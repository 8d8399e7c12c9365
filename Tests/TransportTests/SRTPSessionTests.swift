import Testing
import Transport

@Suite struct SRTPSessionTests {
    /// A minimal RTP packet: version 2, PT 111, the given sequence number, SSRC 0x11223344.
    private func rtpPacket(seq: UInt16, payload: [UInt8] = Array(repeating: 0xAB, count: 160)) -> [UInt8] {
        [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, 0x03, 0xC0, 0x11, 0x22, 0x33, 0x44] + payload
    }

    private func keys(_ profile: SRTPProfile, seed: UInt8 = 1) -> [UInt8] {
        (0..<(profile.masterKeyLength + profile.masterSaltLength)).map { UInt8(truncatingIfNeeded: Int($0) * 7 + Int(seed)) }
    }

    @Test(arguments: SRTPProfile.allCases)
    func whatOneSideProtectsTheOtherUnprotectsUnchanged(profile: SRTPProfile) throws {
        let sender = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys(profile))
        let receiver = try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys(profile))
        for seq in UInt16(1000)..<1010 {
            let plain = rtpPacket(seq: seq)
            let protected = try sender.protectRTP(plain)
            #expect(protected.count > plain.count)
            #expect(Array(protected[12...]) != Array(plain[12...]), "payload is encrypted")
            #expect(try receiver.unprotectRTP(protected) == plain)
        }
        // SRTCP: a receiver report of SSRC 0x11223344.
        let rtcp: [UInt8] = [0x80, 201, 0x00, 0x01, 0x11, 0x22, 0x33, 0x44]
        #expect(try receiver.unprotectRTCP(sender.protectRTCP(rtcp)) == rtcp)
    }

    @Test(arguments: SRTPProfile.allCases)
    func aFlippedBitFailsAuthentication(profile: SRTPProfile) throws {
        let sender = try SRTPSession(profile: profile, direction: .outbound, masterKeyAndSalt: keys(profile))
        let receiver = try SRTPSession(profile: profile, direction: .inbound, masterKeyAndSalt: keys(profile))
        var protected = try sender.protectRTP(rtpPacket(seq: 7))
        protected[20] ^= 0x01
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(protected) }
        // The context still accepts the next good packet.
        #expect(try receiver.unprotectRTP(sender.protectRTP(rtpPacket(seq: 8))) == rtpPacket(seq: 8))
    }

    @Test func aWrongKeyFailsAuthentication() throws {
        let sender = try SRTPSession(profile: .aeadAES128GCM, direction: .outbound, masterKeyAndSalt: keys(.aeadAES128GCM, seed: 1))
        let receiver = try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: keys(.aeadAES128GCM, seed: 2))
        #expect(throws: SRTPError.authenticationFailed) { try receiver.unprotectRTP(sender.protectRTP(rtpPacket(seq: 1))) }
    }

    @Test func aReplayedPacketIsRefused() throws {
        let sender = try SRTPSession(profile: .aeadAES128GCM, direction: .outbound, masterKeyAndSalt: keys(.aeadAES128GCM))
        let receiver = try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: keys(.aeadAES128GCM))
        let protected = try sender.protectRTP(rtpPacket(seq: 42))
        _ = try receiver.unprotectRTP(protected)
        #expect(throws: SRTPError.replayed) { try receiver.unprotectRTP(protected) }
    }

    @Test func truncatedAndWrongSizedInputIsRefused() throws {
        #expect(throws: SRTPError.badKeyLength(expected: 28, got: 3)) {
            try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: [1, 2, 3])
        }
        let sender = try SRTPSession(profile: .aeadAES128GCM, direction: .outbound, masterKeyAndSalt: keys(.aeadAES128GCM))
        let receiver = try SRTPSession(profile: .aeadAES128GCM, direction: .inbound, masterKeyAndSalt: keys(.aeadAES128GCM))
        let protected = try sender.protectRTP(rtpPacket(seq: 9))
        for length in 0..<protected.count {
            #expect(throws: SRTPError.self) { try receiver.unprotectRTP(Array(protected[..<length])) }
        }
    }
}
