// libFuzzer target: RTCP compound packets and every feedback type. Compiled with Wire and RTP.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = MuxedPacketKind.classify(bytes)
    guard let packets = try? RTCPPacket.parseCompound(bytes) else { return 0 }
    for case .nack(let nack) in packets { _ = nack.lostSequenceNumbers }
    for case .transportCC(let feedback) in packets { _ = feedback.packets }
    guard let serialized = try? RTCPPacket.serializeCompound(packets),
        let again = try? RTCPPacket.parseCompound(serialized), again == packets
    else {
        fatalError("RTCP round trip failed")
    }
    return 0
}
