import Media
import RTP
import SDP
import Streams
import Wire

/// What the room sends a participant, sans-IO: its mix on its first audio section's host SSRC,
/// and the composite on its first video section's host SSRC, re-headered from the room's
/// packets (its SSRC, payload type and sequence numbers, continuous across the two encodings),
/// and which encoding its bandwidth estimate calls for. Returns bytes to send; sends nothing.
public struct ParticipantOutbound {
    /// Where its mix goes; nil when the host sends nothing on its audio section (sendonly peer).
    private var audioSender: AudioRTPSender?
    /// The mix as sent to it, through Streams' send stream (counts for sender reports, and a
    /// short history for NACKs).
    private var audioStream: RTPSendStream?
    /// Where the composite goes: the host SSRC, VP8 payload type and the next sequence number.
    private var videoOut: (ssrc: SSRC, payloadType: PayloadType, sequenceNumber: UInt16)?
    /// The composite as sent to it, through Streams' send stream: its retransmission history
    /// answers the participant's NACKs (RFC 4585 §6.2.1) with the packets as it was sent them.
    private var videoStream: RTPSendStream?
    /// Whether its bandwidth estimate calls for the lower encoding; nil when it gets no video.
    private var bandwidth: LowBandwidthDetector?
    /// The composite encoding it is sent now; the room changes it at a key frame of the other.
    public var videoEncoding: CompositeEncoding.Kind = .main
    /// Whether a key frame of `wantedVideoEncoding` was asked for its switch (asked once).
    public var videoSwitchRequested = false

    /// How much of the composite each receiver's history keeps for NACKs: about a second and a
    /// half at 1.5 Mbit/s (older packets are past use: the picture has moved on).
    static let retransmission: RetransmissionBuffer.Configuration = {
        var configuration = RetransmissionBuffer.Configuration()
        configuration.capacity = 256
        return configuration
    }()

    public init(negotiated: NegotiatedSession, seed: UInt64, now: Instant) {
        var generator = SplitMix64(seed: seed)
        let inbound = InboundSections(negotiated)
        audioSender = inbound.sections.first { !$0.isVideo }.flatMap { section in
            section.hostSender.map {
                AudioRTPSender(ssrc: SSRC(rawValue: $0.ssrc), payloadType: section.codecPayloadType,
                               sequenceNumber: .random(in: 0...UInt16.max, using: &generator),
                               timestamp: .random(in: 0...UInt32.max, using: &generator))
            }
        }
        videoOut = inbound.sections.first(where: \.isVideo).flatMap { section in
            section.hostSender.map { (SSRC(rawValue: $0.ssrc), section.codecPayloadType, UInt16.random(in: 0...UInt16.max, using: &generator)) }
        }
        bandwidth = videoOut.map { LowBandwidthDetector(hostVideo: $0.ssrc) }
        audioStream = audioSender.map { sender in
            var configuration = RTPSendStream.Configuration(ssrc: sender.ssrc, clockRate: 48_000)
            configuration.retransmission.capacity = 64
            return RTPSendStream(configuration: configuration, clock: NTPClockMapping(instant: now, ntp: NTPTimestamp(rawValue: 0)))
        }
        videoStream = videoOut.map { out in
            var configuration = RTPSendStream.Configuration(ssrc: out.ssrc, clockRate: 90_000)
            configuration.retransmission = Self.retransmission
            return RTPSendStream(configuration: configuration, clock: NTPClockMapping(instant: now, ntp: NTPTimestamp(rawValue: 0)))
        }
    }

    /// Composite packets sent again because it asked (NACK).
    public var packetsResent: Int64 { videoStream?.retransmissionBuffer.packetsResent ?? 0 }

    /// Whether it is sent a mix.
    public var receivesAudio: Bool { audioSender != nil }
    /// Whether it is sent the composite.
    public var receivesVideo: Bool { videoOut != nil }
    /// The encoding it should be sent, from its bandwidth estimate (with hysteresis).
    public var wantedVideoEncoding: CompositeEncoding.Kind { bandwidth?.isLow == true ? .low : .main }
    /// Its bandwidth estimate (bits/s); nil when it receives no video.
    public func bandwidthEstimate(now: Instant) -> Int? { bandwidth?.estimate.estimate(now: now).bitsPerSecond }

    /// One packet of its mix (one 20 ms Opus frame), serialized; nil when it gets no mix.
    public mutating func mixPacket(_ payload: [UInt8], now: Instant) -> [UInt8]? {
        guard let bytes = audioSender?.packet(payload) else { return nil }
        audioStream?.packetSent(bytes: bytes, timestamp: audioSender?.lastTimestamp ?? 0, payloadSize: payload.count, now: now)
        return bytes
    }

    /// One encoded frame of the composite as this participant gets it: the room's packets with
    /// its SSRC, payload type and sequence numbers; payload and timestamp unchanged.
    public mutating func compositePackets(_ packets: [RTPPacket], now: Instant) -> [[UInt8]] {
        guard var out = videoOut else { return [] }
        var serialized: [[UInt8]] = []
        serialized.reserveCapacity(packets.count)
        var bytes = 0
        for var packet in packets {
            packet.ssrc = out.ssrc
            packet.payloadType = out.payloadType
            packet.sequenceNumber = out.sequenceNumber
            out.sequenceNumber &+= 1
            if let data = try? packet.serialized() {
                serialized.append(data)
                bytes += data.count
                videoStream?.packetSent(bytes: data, timestamp: packet.timestamp, payloadSize: packet.payload.count, now: now)
            }
        }
        videoOut = out
        bandwidth?.videoSent(bytes: bytes, now: now)
        return serialized
    }

    /// A key frame request about the composite it gets.
    public enum KeyFrameRequest: Equatable, Sendable {
        case pictureLoss(sender: SSRC)
        case fullIntra(sender: SSRC, sequenceNumber: UInt8)
    }

    /// Takes its RTCP about what it is sent: reports and REMB feed the bandwidth estimate; NACKs
    /// about the composite are answered from its history (`retransmissions`); PLI and FIR about
    /// its host video SSRC are returned for the room's key frame pacer.
    public mutating func receiveRTCP(_ packets: [RTCPPacket], now: Instant) -> (keyFrameRequests: [KeyFrameRequest], retransmissions: [[UInt8]]) {
        bandwidth?.receive(packets, now: now)
        let retransmissions = (videoStream?.receivedRTCP(packets, now: now) ?? []) + (audioStream?.receivedRTCP(packets, now: now) ?? [])
        guard let out = videoOut else { return ([], retransmissions) }
        var requests: [KeyFrameRequest] = []
        for packet in packets {
            switch packet {
            case .pictureLossIndication(let pli) where pli.mediaSSRC == out.ssrc:
                requests.append(.pictureLoss(sender: pli.senderSSRC))
            case .fullIntraRequest(let fir):
                for entry in fir.entries where entry.ssrc == out.ssrc {
                    requests.append(.fullIntra(sender: fir.senderSSRC, sequenceNumber: entry.sequenceNumber))
                }
            default:
                break
            }
        }
        return (requests, retransmissions)
    }
}
