import Testing
import Transport

@Suite struct DatagramDemuxTests {
    @Test func everyFirstByteHasTheKindRFC7983Gives() {
        for byte in 0...255 {
            let kind = DatagramKind(firstByte: UInt8(byte))
            switch byte {
            case 0...3: #expect(kind == .stun)
            case 20...63: #expect(kind == .dtls)
            case 128...191: #expect(kind == .rtpOrRTCP)
            default: #expect(kind == .unknown, "byte \(byte)")
            }
        }
        #expect(DatagramKind(datagram: [UInt8]()) == .unknown)
        #expect(DatagramKind(datagram: [0x16, 0xFE, 0xFD]) == .dtls)  // a DTLS 1.2 handshake record
    }
}
