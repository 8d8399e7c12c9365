// libFuzzer target: VP8 payload descriptor, frame header, and the frame assembler.
// Compiled with Wire and RTP.
nonisolated(unsafe) var assembler = VP8FrameAssembler(limits: .init(maxFrames: 16, maxPackets: 256, maxBytes: 1 << 16))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let (descriptor, length) = try? VP8PayloadDescriptor.parse(bytes[...]) {
        let rest = bytes[length...]
        let rebuilt = descriptor.serialized() + rest
        guard let (again, againLength) = try? VP8PayloadDescriptor.parse(rebuilt[...]), again == descriptor,
            rebuilt[againLength...] == rest
        else { fatalError("VP8 descriptor round trip failed") }
        if let header = try? VP8FrameHeader.parse(rest), (try? VP8FrameHeader.parse(header.serialized()[...])) != header {
            fatalError("VP8 frame header round trip failed")
        }
    }
    // The first 7 bytes steer sequence number, timestamp and marker; the rest is the payload.
    if size >= 7 {
        let sequenceNumber = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let timestamp = UInt32(bytes[2]) << 24 | UInt32(bytes[3]) << 16 | UInt32(bytes[4]) << 8 | UInt32(bytes[5])
        assembler.insert(sequenceNumber: sequenceNumber, timestamp: timestamp, marker: bytes[6] & 1 != 0,
                         payload: bytes[7...])
        while assembler.popFrame() != nil {}
        if assembler.readyFrameCount > assembler.limits.maxFrames { fatalError("assembler bound exceeded") }
    }
    return 0
}
