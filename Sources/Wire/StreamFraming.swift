/// RFC 4571 framing: RTP, RTCP, STUN and DTLS over a TCP stream, each message preceded by its
/// length in two bytes, big-endian (ICE-TCP, RFC 6544 §3). Bytes come in as the stream gives
/// them; whole messages come out.
public struct StreamFraming: Sendable {
    /// Bytes received and not yet a whole message (less than 2 + 65535).
    private var buffer: [UInt8] = []

    public init() {}

    /// Takes what the stream delivered; returns the messages now complete, in order. A message of
    /// length 0 is skipped (RFC 4571 gives it no meaning).
    public mutating func append(_ bytes: [UInt8]) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var messages: [[UInt8]] = []
        var start = 0
        while buffer.count - start >= 2 {
            let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
            guard buffer.count - start - 2 >= length else { break }
            if length > 0 { messages.append(Array(buffer[(start + 2)..<(start + 2 + length)])) }
            start += 2 + length
        }
        if start > 0 { buffer.removeSubrange(0..<start) }
        return messages
    }

    /// Bytes waiting for the rest of their message.
    public var buffered: Int { buffer.count }

    /// `message` framed for the stream; nil when it is longer than a frame can say (65535 bytes).
    public static func frame(_ message: [UInt8]) -> [UInt8]? {
        guard message.count <= 0xFFFF else { return nil }
        var framed = [UInt8]()
        framed.reserveCapacity(message.count + 2)
        framed.append(UInt8(message.count >> 8))
        framed.append(UInt8(message.count & 0xFF))
        framed.append(contentsOf: message)
        return framed
    }
}
