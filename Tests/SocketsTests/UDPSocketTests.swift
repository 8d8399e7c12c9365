import Foundation
import Wire
import Testing
import Transport
@testable import Sockets

@Suite struct UDPSocketTests {
    @Test func datagramsCrossLoopbackInBatchesWithTheirSource() throws {
        let loopback = TransportAddress(ipv4: 127, 0, 0, 1, port: 0)
        let receiver = try UDPSocket(bind: loopback)
        let sender = try UDPSocket(bind: loopback)
        #expect(receiver.localAddress.port != 0)
        let datagrams = (0..<100).map { index in (bytes: [UInt8](repeating: UInt8(index), count: 200 + index), destination: receiver.localAddress) }
        #expect(sender.send(datagrams) == 100)
        var received: [UDPSocket.Datagram] = []
        for _ in 0..<10 where received.count < 100 { received += receiver.receiveBatch() }
        #expect(received.count == 100)
        #expect(received.allSatisfy { $0.source == sender.localAddress })
        #expect(received.enumerated().allSatisfy { index, datagram in datagram.bytes == [UInt8](repeating: UInt8(index), count: 200 + index) })
    }

    @Test func anOversizedDatagramIsCountedNotDelivered() throws {
        let loopback = TransportAddress(ipv4: 127, 0, 0, 1, port: 0)
        let receiver = try UDPSocket(bind: loopback)
        let sender = try UDPSocket(bind: loopback)
        sender.send([(bytes: [UInt8](repeating: 1, count: 5000), destination: receiver.localAddress),
                     (bytes: [2, 2], destination: receiver.localAddress)])
        let received = receiver.receiveBatch()
        #expect(received.map(\.bytes) == [[2, 2]])
        #expect(receiver.truncatedDatagrams == 1)
    }

    @Test func socketAddressesReadBackAsWritten() {
        let addresses = [TransportAddress(ipv4: 192, 0, 2, 1, port: 32_853), TransportAddress(ipv4: 255, 255, 255, 255, port: 0),
                         TransportAddress(ip: .v6(high: 0x2001_0db8_0000_0000, low: 0x0000_0000_0000_0001), port: 443),
                         TransportAddress(ip: .v6(high: .max, low: 0x0102_0304_0506_0708), port: 65_535)]
        for address in addresses {
            var storage = sockaddr_storage()
            _ = address.store(into: &storage)
            #expect(TransportAddress(storage) == address)
        }
        var unknown = sockaddr_storage()
        unknown.ss_family = sa_family_t(AF_UNIX)
        #expect(TransportAddress(unknown) == nil)
    }

    @Test func nothingWaitingReturnsAtOnce() throws {
        let socket = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        #expect(socket.receiveBatch().isEmpty)
    }
}
