// libFuzzer target: RTP header and RFC 8285 extensions. Compiled in one module with Wire and RTP.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let packet = try? RTPPacket.parse(bytes) else { return 0 }
    let map = HeaderExtensionMap([.mid: 1, .audioLevel: 2, .transportSequenceNumber: 3, .absoluteSendTime: 4,
                                  .videoOrientation: 5])
    _ = try? packet.headerExtension(MediaIdentification.self, in: map)
    _ = try? packet.headerExtension(AudioLevel.self, in: map)
    _ = try? packet.headerExtension(TransportSequenceNumber.self, in: map)
    _ = try? packet.headerExtension(AbsoluteSendTime.self, in: map)
    _ = try? packet.headerExtension(VideoOrientation.self, in: map)
    guard let serialized = try? packet.serialized(), let again = try? RTPPacket.parse(serialized), again == packet else {
        fatalError("RTP round trip failed")
    }
    return 0
}
