/// EBML (RFC 8794) elements written into a byte buffer: what a WebM file is made of. Only the
/// element kinds WebMWriter needs: unsigned integers, strings, binary, 64-bit floats and masters.
struct EBMLBuffer {
    var bytes: [UInt8] = []

    /// An element ID as written: its own length marker is part of the ID (RFC 8794 §5).
    mutating func id(_ id: UInt32) {
        let count = id > 0xFF_FFFF ? 4 : id > 0xFFFF ? 3 : id > 0xFF ? 2 : 1
        for shift in stride(from: (count - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: id >> UInt32(shift))) }
    }

    /// A data size as a variable-length integer in the fewest bytes (RFC 8794 §6); a value of
    /// all ones is "unknown size", so it takes one more byte.
    mutating func size(_ value: UInt64) {
        var length = 1
        while length < 8, value >= (UInt64(1) << (7 * UInt64(length))) - 1 { length += 1 }
        size(value, length: length)
    }

    /// A data size in exactly `length` bytes (a size patched in place later keeps its length).
    mutating func size(_ value: UInt64, length: Int) {
        let marked = value | UInt64(1) << (7 * UInt64(length))
        for index in stride(from: length - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: marked >> (8 * UInt64(index)))) }
    }

    mutating func unsigned(_ id: UInt32, _ value: UInt64) {
        var count = 1
        while count < 8, value >> (8 * UInt64(count)) != 0 { count += 1 }
        self.id(id)
        size(UInt64(count))
        for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    mutating func string(_ id: UInt32, _ value: String) { binary(id, Array(value.utf8)) }

    mutating func binary(_ id: UInt32, _ value: [UInt8]) {
        self.id(id)
        size(UInt64(value.count))
        bytes += value
    }

    mutating func float(_ id: UInt32, _ value: Double) {
        self.id(id)
        size(8)
        let bits = value.bitPattern
        for index in stride(from: 7, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(index)))) }
    }

    /// A master element whose children `body` writes.
    mutating func master(_ id: UInt32, _ body: (inout EBMLBuffer) -> Void) {
        var children = EBMLBuffer()
        body(&children)
        self.id(id)
        size(UInt64(children.bytes.count))
        bytes += children.bytes
    }

    /// A Void element (RFC 8794 §11.3.1) of exactly `total` bytes, at least 2: space kept for
    /// an element written in its place later.
    mutating func void(total: Int) {
        id(EBMLID.void)
        let sizeLength = total - 1 > 0x7F ? 8 : 1
        size(UInt64(total - 1 - sizeLength), length: sizeLength)
        bytes += [UInt8](repeating: 0, count: total - 1 - sizeLength)
    }
}

/// The EBML and Matroska element IDs WebMWriter writes (RFC 8794 §11, the Matroska schema).
enum EBMLID {
    static let ebml: UInt32 = 0x1A45_DFA3, ebmlVersion: UInt32 = 0x4286, ebmlReadVersion: UInt32 = 0x42F7
    static let ebmlMaxIDLength: UInt32 = 0x42F2, ebmlMaxSizeLength: UInt32 = 0x42F3
    static let docType: UInt32 = 0x4282, docTypeVersion: UInt32 = 0x4287, docTypeReadVersion: UInt32 = 0x4285
    static let void: UInt32 = 0xEC
    static let segment: UInt32 = 0x1853_8067
    static let seekHead: UInt32 = 0x114D_9B74, seek: UInt32 = 0x4DBB, seekID: UInt32 = 0x53AB, seekPosition: UInt32 = 0x53AC
    static let info: UInt32 = 0x1549_A966, timecodeScale: UInt32 = 0x2AD7B1, duration: UInt32 = 0x4489
    static let muxingApp: UInt32 = 0x4D80, writingApp: UInt32 = 0x5741
    static let tracks: UInt32 = 0x1654_AE6B, trackEntry: UInt32 = 0xAE, trackNumber: UInt32 = 0xD7, trackUID: UInt32 = 0x73C5
    static let trackType: UInt32 = 0x83, flagLacing: UInt32 = 0x9C, codecID: UInt32 = 0x86, codecPrivate: UInt32 = 0x63A2
    static let codecDelay: UInt32 = 0x56AA, seekPreRoll: UInt32 = 0x56BB
    static let video: UInt32 = 0xE0, pixelWidth: UInt32 = 0xB0, pixelHeight: UInt32 = 0xBA
    static let audio: UInt32 = 0xE1, samplingFrequency: UInt32 = 0xB5, channels: UInt32 = 0x9F
    static let cluster: UInt32 = 0x1F43_B675, clusterTimecode: UInt32 = 0xE7, simpleBlock: UInt32 = 0xA3
    static let cues: UInt32 = 0x1C53_BB6B, cuePoint: UInt32 = 0xBB, cueTime: UInt32 = 0xB3
    static let cueTrackPositions: UInt32 = 0xB7, cueTrack: UInt32 = 0xF7, cueClusterPosition: UInt32 = 0xF1
}
