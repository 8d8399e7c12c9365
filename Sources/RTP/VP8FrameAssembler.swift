/// A complete VP8 frame put together from RTP packets (RFC 7741 §4.5).
public struct VP8Frame: Equatable, Sendable {
    /// The RTP timestamp all its packets share.
    public var timestamp: UInt32
    /// The encoded frame: every payload without its descriptor, in sequence order.
    public var data: [UInt8]
    /// The frame decodes without earlier frames (P bit clear, RFC 7741 §4.3).
    public var isKeyFrame: Bool
    /// The picture id of its first packet, if the sender sends one.
    public var pictureID: VP8PictureID?
    /// Extended sequence number of the first packet.
    public var firstSequenceNumber: Int64
    /// Extended sequence number of the last packet (the one with the marker bit).
    public var lastSequenceNumber: Int64
}

/// Puts VP8 frames back together from RTP packets that may arrive out of order, duplicated or not
/// at all (RFC 7741 §4.5). Sans-IO: packets go in with `insert`, frames come out with `popFrame`.
///
/// Frames come out in sequence order, each one only when every packet from its start (S bit,
/// partition 0) through its marker is present, and only when it follows the previous frame without
/// a gap, or is a key frame. A frame is given up as lost when:
/// - it can never complete: a packet in its range belongs to another timestamp, its first packet
///   after the previous frame is not a start, its packets run into the next frame without a marker,
///   or one of its payloads is malformed;
/// - a later key frame is complete (decoding restarts there);
/// - the buffer exceeds its `Limits` (the oldest frame goes first);
/// - the caller calls `abandonIncompleteFrames()`, for example when its NACK wait has run out.
///
/// After a loss `needsKeyFrame` is true (send a PLI or FIR) and frames that are not key frames are
/// discarded, since they would decode to garbage, until a key frame comes out.
public struct VP8FrameAssembler: Sendable {
    /// Bounds on what is buffered; exceeding one drops the oldest frame.
    public struct Limits: Equatable, Sendable {
        /// Frames waiting (incomplete, or complete behind a gap) plus frames ready to pop.
        public var maxFrames: Int
        /// Packets waiting.
        public var maxPackets: Int
        /// Payload bytes waiting.
        public var maxBytes: Int

        /// Limits with these values (each at least 1).
        public init(maxFrames: Int = 64, maxPackets: Int = 2048, maxBytes: Int = 4 << 20) {
            self.maxFrames = max(1, maxFrames)
            self.maxPackets = max(1, maxPackets)
            self.maxBytes = max(1, maxBytes)
        }
    }

    /// Counters for metrics and tests.
    public struct Statistics: Equatable, Sendable {
        /// Frames handed to `popFrame`.
        public var framesAssembled = 0
        /// Frames given up as lost or incomplete.
        public var framesLost = 0
        /// Complete frames thrown away because they followed a loss and were not key frames.
        public var framesDiscarded = 0
        /// Gaps in sequence numbers skipped over to reach a key frame.
        public var sequenceGapsSkipped = 0
        /// Packets ignored as duplicates or as too late (their frame was already out or given up).
        public var packetsIgnored = 0
        /// Packets whose VP8 payload descriptor did not parse.
        public var packetsMalformed = 0
    }

    /// What `insert` did with a packet.
    public enum InsertResult: Equatable, Sendable {
        /// The packet is buffered (and may have completed frames).
        case accepted
        /// A packet with this sequence number is already buffered.
        case duplicate
        /// The packet's frame already came out or was given up.
        case late
        /// The payload descriptor did not parse; the packet's frame is lost.
        case malformed(VP8ParseError)
    }

    private struct Packet: Sendable {
        var sequenceNumber: Int64
        var isStart: Bool
        var marker: Bool
        var isKeyFrame: Bool
        var pictureID: VP8PictureID?
        var data: ArraySlice<UInt8>
    }

    private struct PendingFrame: Sendable {
        var timestamp: UInt32
        var packets: [Packet]  // sorted by sequence number, no duplicates, never empty
        var bytes = 0
        var broken = false
        var startSequenceNumber: Int64?
        var endSequenceNumber: Int64?

        var lowest: Int64 { packets[0].sequenceNumber }
        var highest: Int64 { packets[packets.count - 1].sequenceNumber }
        var isKeyFrame: Bool { packets[0].isStart && packets[0].isKeyFrame }

        var isComplete: Bool {
            guard !broken, let start = startSequenceNumber, let end = endSequenceNumber, start <= end else {
                return false
            }
            return lowest == start && highest == end && Int64(packets.count) == end - start + 1
        }
    }

    /// The bounds in force.
    public let limits: Limits
    /// True after a loss until a key frame comes out: the caller should ask for a key frame.
    public private(set) var needsKeyFrame = false
    /// Counters.
    public private(set) var statistics = Statistics()

    private var unwrapper = SequenceUnwrapper()
    private var frames: [PendingFrame] = []  // sorted by lowest sequence number
    private var ready: [VP8Frame] = []
    private var readyHead = 0
    private var packetCount = 0
    private var byteCount = 0
    /// Last sequence number that came out or was given up; packets at or before it are late.
    private var delivered: Int64?
    private var deliveredTimestamp: UInt32?

    /// An empty assembler with these limits.
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Frames ready to pop.
    public var readyFrameCount: Int { ready.count - readyHead }

    /// The next complete frame, in decode order.
    public mutating func popFrame() -> VP8Frame? {
        guard readyHead < ready.count else { return nil }
        let frame = ready[readyHead]
        readyHead += 1
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        }
        return frame
    }

    /// Adds a parsed RTP packet.
    @discardableResult
    public mutating func insert(_ packet: RTPPacket) -> InsertResult {
        insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, marker: packet.marker,
               payload: packet.payload)
    }

    /// Adds one packet: its RTP sequence number, timestamp, marker bit and payload.
    @discardableResult
    public mutating func insert(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool, payload: ArraySlice<UInt8>)
        -> InsertResult
    {
        let extended = unwrapper.unwrap(sequenceNumber)
        if let delivered, extended <= delivered {
            statistics.packetsIgnored += 1
            return .late
        }
        var packet = Packet(
            sequenceNumber: extended, isStart: false, marker: marker, isKeyFrame: false, pictureID: nil, data: [])
        var result = InsertResult.accepted
        do {
            let (descriptor, length) = try VP8PayloadDescriptor.parse(payload)
            packet.data = payload.dropFirst(length)
            packet.isStart = descriptor.isStartOfFrame
            packet.pictureID = descriptor.pictureID
            if packet.isStart, let first = packet.data.first {
                packet.isKeyFrame = VP8FrameHeader.isKeyFrame(firstByte: first)
            }
        } catch {
            statistics.packetsMalformed += 1
            result = .malformed(error)
        }
        let malformed = result != .accepted
        // The rest of a frame that was given up: not a new frame (a start packet would be one).
        if timestamp == deliveredTimestamp, !packet.isStart {
            statistics.packetsIgnored += 1
            return .late
        }

        if let index = frames.firstIndex(where: { $0.timestamp == timestamp }) {
            guard add(packet, to: &frames[index], malformed: malformed) else {
                statistics.packetsIgnored += 1
                return .duplicate
            }
            if index > 0, frames[index].lowest < frames[index - 1].lowest { sortFrames() }
        } else {
            var frame = PendingFrame(timestamp: timestamp, packets: [])
            _ = add(packet, to: &frame, malformed: malformed)
            let position = frames.firstIndex { $0.lowest > extended } ?? frames.count
            frames.insert(frame, at: position)
        }
        packetCount += 1
        byteCount += packet.data.count
        enforceLimits()
        deliverReadyFrames()
        return result
    }

    /// Gives up on every frame before the first complete one (and on the gap before it): call this
    /// when waiting for retransmissions has taken too long. Sets `needsKeyFrame` when anything was
    /// given up.
    public mutating func abandonIncompleteFrames() {
        while let head = frames.first, !head.isComplete { dropHead(asLost: true) }
        if let head = frames.first, let delivered, let start = head.startSequenceNumber, start > delivered + 1 {
            statistics.sequenceGapsSkipped += 1
            needsKeyFrame = true
            self.delivered = start - 1
        }
        // Nothing came out yet and delta frames wait for the stream's first key frame: it was lost
        // (or the stream was joined mid-way). Waiting longer cannot help; they are given up and
        // `needsKeyFrame` asks for a new one.
        if delivered == nil, let head = frames.first, !head.isKeyFrame {
            while let head = frames.first, !head.isKeyFrame { dropHead(asLost: true) }
        }
        deliverReadyFrames()
    }

    /// Forgets everything buffered and ready, keeping the statistics.
    public mutating func reset() {
        frames.removeAll()
        ready.removeAll()
        readyHead = 0
        packetCount = 0
        byteCount = 0
        delivered = nil
        deliveredTimestamp = nil
        unwrapper = SequenceUnwrapper()
        needsKeyFrame = false
    }

    // MARK: - Internals

    /// Inserts `packet` in sequence order; false for a duplicate sequence number.
    private func add(_ packet: Packet, to frame: inout PendingFrame, malformed: Bool) -> Bool {
        var position = frame.packets.count
        while position > 0, frame.packets[position - 1].sequenceNumber >= packet.sequenceNumber {
            if frame.packets[position - 1].sequenceNumber == packet.sequenceNumber { return false }
            position -= 1
        }
        frame.packets.insert(packet, at: position)
        frame.bytes += packet.data.count
        if malformed { frame.broken = true }
        if packet.isStart {
            // Two different starts: the frame is not one frame.
            if let start = frame.startSequenceNumber, start != packet.sequenceNumber { frame.broken = true }
            frame.startSequenceNumber = min(frame.startSequenceNumber ?? packet.sequenceNumber, packet.sequenceNumber)
        }
        if packet.marker {
            if let end = frame.endSequenceNumber, end != packet.sequenceNumber { frame.broken = true }
            frame.endSequenceNumber = min(frame.endSequenceNumber ?? packet.sequenceNumber, packet.sequenceNumber)
        }
        if let start = frame.startSequenceNumber, frame.lowest < start { frame.broken = true }
        if let end = frame.endSequenceNumber, frame.highest > end { frame.broken = true }
        return true
    }

    private mutating func sortFrames() {
        frames.sort { $0.lowest < $1.lowest }
    }

    /// Whether the head frame can never complete, given what follows it.
    private func headCanNeverComplete() -> Bool {
        guard let head = frames.first else { return false }
        if head.broken { return true }
        // The first packet after the previous frame must start this one.
        if let delivered, head.lowest == delivered + 1, !head.packets[0].isStart { return true }
        if frames.count > 1 {
            let next = frames[1].lowest
            // Frames occupy disjoint sequence ranges.
            if head.highest > next { return true }
            // No room left for the marker: everything up to the next frame is here, without one.
            if head.endSequenceNumber == nil, head.highest + 1 == next,
                Int64(head.packets.count) == head.highest - head.lowest + 1
            {
                return true
            }
        }
        return false
    }

    private mutating func enforceLimits() {
        while !frames.isEmpty,
            frames.count + readyFrameCount > limits.maxFrames || packetCount > limits.maxPackets
                || byteCount > limits.maxBytes
        {
            dropHead(asLost: true)
        }
        // Ready frames the caller has not popped count too; the oldest go first.
        while readyFrameCount > limits.maxFrames {
            readyHead += 1
            statistics.framesLost += 1
            needsKeyFrame = true
        }
    }

    /// Removes the head frame; a lost frame means a key frame is needed.
    private mutating func dropHead(asLost lost: Bool) {
        let head = frames.removeFirst()
        packetCount -= head.packets.count
        byteCount -= head.bytes
        let started = delivered != nil
        delivered = max(delivered ?? head.highest, head.highest)
        deliveredTimestamp = head.timestamp
        if lost, !started {
            // Nothing came out yet: the stream is joined mid-way rather than lossy.
            statistics.framesDiscarded += 1
            needsKeyFrame = true
        } else if lost {
            statistics.framesLost += 1
            needsKeyFrame = true
        } else {
            statistics.framesDiscarded += 1
        }
    }

    private mutating func deliverReadyFrames() {
        while let head = frames.first {
            if headCanNeverComplete() {
                dropHead(asLost: true)
                continue
            }
            if head.isComplete {
                let follows = delivered.map { head.lowest == $0 + 1 } ?? false
                if head.isKeyFrame {
                    if let delivered, head.lowest > delivered + 1 { statistics.sequenceGapsSkipped += 1 }
                    emitHead()
                    continue
                }
                if follows {
                    if needsKeyFrame {
                        dropHead(asLost: false)  // undecodable without the frame that was lost
                    } else {
                        emitHead()
                    }
                    continue
                }
                // Before the first frame a delta frame waits: its key frame may still be on the way.
            }
            // The head waits for packets. A complete key frame later makes waiting pointless.
            if let keyIndex = frames.firstIndex(where: { $0.isKeyFrame && $0.isComplete }), keyIndex > 0 {
                for _ in 0..<keyIndex { dropHead(asLost: true) }
                continue
            }
            return
        }
    }

    private mutating func emitHead() {
        let head = frames.removeFirst()
        packetCount -= head.packets.count
        byteCount -= head.bytes
        var data: [UInt8] = []
        data.reserveCapacity(head.bytes)
        for packet in head.packets { data.append(contentsOf: packet.data) }
        ready.append(VP8Frame(
            timestamp: head.timestamp, data: data, isKeyFrame: head.isKeyFrame, pictureID: head.packets[0].pictureID,
            firstSequenceNumber: head.lowest, lastSequenceNumber: head.highest))
        delivered = head.highest
        deliveredTimestamp = head.timestamp
        statistics.framesAssembled += 1
        if head.isKeyFrame { needsKeyFrame = false }
        enforceLimits()
    }
}
