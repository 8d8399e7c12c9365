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

    @Test func nothingWaitingReturnsAtOnce() throws {
        let socket = try UDPSocket(bind: TransportAddress(ipv4: 127, 0, 0, 1, port: 0))
        #expect(socket.receiveBatch().isEmpty)
    }
}
