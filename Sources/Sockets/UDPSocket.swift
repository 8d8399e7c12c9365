import Foundation
import Wire
private import CLinux

/// A non-blocking UDP socket bound to one address, read and written in batches
/// (recvmmsg/sendmmsg: one system call for up to 64 datagrams).
public final class UDPSocket {
    public enum SocketError: Error, CustomStringConvertible {
        case system(call: String, address: TransportAddress, errno: Int32)
        public var description: String {
            switch self {
            case .system(let call, let address, let code): "\(call) \(address): \(String(cString: strerror(code)))"
            }
        }
    }

    /// A received datagram and where it came from.
    public struct Datagram: Sendable {
        public var bytes: [UInt8]
        public var source: TransportAddress
        public init(bytes: [UInt8], source: TransportAddress) {
            self.bytes = bytes
            self.source = source
        }
    }

    public let fd: Int32
    /// The bound address, with the port the kernel chose when asked for 0.
    public let localAddress: TransportAddress
    /// The largest datagram read (DTLS flights on loopback can exceed an Ethernet MTU); a longer one
    /// is dropped and counted.
    public static let maxDatagramSize = 4096
    public private(set) var truncatedDatagrams = 0

    /// One block of `batchSize` × `maxDatagramSize` bytes that recvmmsg fills: owned by the
    /// socket, so the slots' pointers into it stay valid for its whole life.
    private let receiveArena: UnsafeMutableRawBufferPointer
    private var slots: [tessera_datagram]

    public init(bind address: TransportAddress, batchSize: Int = 32, receiveBufferBytes: Int32 = 4 << 20) throws(SocketError) {
        let family = address.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(call: "socket", address: address, errno: errno) }
        var size = receiveBufferBytes
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw .system(call: "bind", address: address, errno: code)
        }
        self.fd = fd
        localAddress = TransportAddress.bound(to: fd) ?? address
        receiveArena = .allocate(byteCount: batchSize * Self.maxDatagramSize, alignment: 16)
        slots = Array(repeating: tessera_datagram(), count: batchSize)
        for index in 0..<batchSize {
            slots[index].buffer = receiveArena.baseAddress.map { $0 + index * Self.maxDatagramSize }
            slots[index].capacity = Self.maxDatagramSize
        }
    }

    deinit {
        close(fd)
        receiveArena.deallocate()
    }

    /// Reads what is waiting, up to one batch; empty when nothing is.
    public func receiveBatch() -> [Datagram] {
        let count = slots.count
        let received = slots.withUnsafeMutableBufferPointer { tessera_recv_datagrams(fd, $0.baseAddress, UInt32(count)) }
        guard received > 0 else { return [] }
        var datagrams: [Datagram] = []
        datagrams.reserveCapacity(Int(received))
        for index in 0..<Int(received) {
            let slot = slots[index]
            if slot.truncated != 0 {
                truncatedDatagrams += 1
                continue
            }
            guard let source = TransportAddress(slot.address) else { continue }
            let start = index * Self.maxDatagramSize
            datagrams.append(Datagram(bytes: Array(receiveArena[start..<start + slot.length]), source: source))
        }
        return datagrams
    }

    /// Reads what is waiting in at most `batches` batches (a flood cannot hold the loop), and
    /// hands `take` those that came from `source` (a client's one host: anything else is a
    /// stranger's).
    public func receive(from source: TransportAddress?, batches: Int = 16, _ take: (Datagram) -> Void) {
        for _ in 0..<batches {
            let batch = receiveBatch()
            if batch.isEmpty { return }
            for datagram in batch where datagram.source == source { take(datagram) }
        }
    }

    /// Sends datagrams in batches; returns how many the kernel took (the rest are dropped, as
    /// UDP would drop them under load). The payloads are read in place: no copy is made.
    @discardableResult
    public func send(_ datagrams: [(bytes: [UInt8], destination: TransportAddress)]) -> Int {
        var sent = 0
        var start = 0
        while start < datagrams.count {
            let batch = datagrams[start..<min(datagrams.count, start + 64)]
            var slots = [tessera_datagram](repeating: tessera_datagram(), count: batch.count)
            for (index, item) in batch.enumerated() {
                slots[index].address_length = item.destination.store(into: &slots[index].address)
            }
            let fd = self.fd
            // Each payload's pointer is valid only inside its withUnsafeBytes, so the sends
            // happen innermost, with every payload of the batch held open around them.
            func holding(_ offset: Int) -> Int32 {
                guard offset < batch.count else {
                    return slots.withUnsafeBufferPointer { tessera_send_datagrams(fd, $0.baseAddress, UInt32(batch.count)) }
                }
                return batch[batch.startIndex + offset].bytes.withUnsafeBytes { raw in
                    slots[offset].buffer = UnsafeMutableRawPointer(mutating: raw.baseAddress)
                    slots[offset].length = raw.count
                    return holding(offset + 1)
                }
            }
            let result = holding(0)
            guard result > 0 else { break }
            sent += Int(result)
            start += Int(result)
        }
        return sent
    }
}
