// libFuzzer target: Opus TOC and packet framing (RFC 6716 §3). Compiled with Wire and RTP.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let info = try? OpusPacketInfo.parse(bytes[...]) else { return 0 }
    if info.durationSamples < 120 || info.durationSamples > 5760 { fatalError("Opus duration out of range") }
    var packetizer = OpusPacketizer(firstTimestamp: 0)
    guard let packetized = try? packetizer.packetize(bytes), packetized.payload == bytes else {
        fatalError("Opus packetizer changed a valid packet")
    }
    return 0
}
