import Foundation
import Media
import Testing
import Wire
import WireTesting

@Suite struct MediaFileReaderTests {
    @Test func anIVFFileYieldsVP8FramesAtThirtyPerSecondStartingWithAKeyFrame() throws {
        let files = try MediaFixtures.require()
        let reader = try MediaFileReader(path: files.videoIVF)
        #expect(reader.formatName == "ivf")
        #expect(reader.video == MediaFileReader.VideoInfo(width: 320, height: 240))
        #expect(reader.audio == nil)
        let packets = try reader.readAll()
        #expect(packets.count == 150)
        #expect(packets.allSatisfy { $0.kind == .video && !$0.data.isEmpty })
        #expect(packets.first?.isKeyFrame == true)
        #expect(packets.filter(\.isKeyFrame).count == 5)  // -g 30
        #expect(packets[1].timestamp - packets[0].timestamp == .nanoseconds(33_333_333))
        #expect(try reader.nextPacket() == nil)  // stays at the end
    }

    @Test func anOggFileYieldsOpusPacketsTwentyMillisecondsApart() throws {
        let files = try MediaFixtures.require()
        let reader = try MediaFileReader(path: files.audioOgg)
        #expect(reader.formatName == "ogg")
        #expect(reader.audio == MediaFileReader.AudioInfo(channels: 1, preSkip: 312))
        let packets = try reader.readAll()
        #expect((250...252).contains(packets.count))
        #expect(packets.allSatisfy { $0.kind == .audio && $0.isKeyFrame })
        // The first packet starts before zero by the pre-skip (312 samples = 6.5 ms).
        #expect(packets[0].timestamp == .microseconds(-6500))
        #expect(packets[2].timestamp - packets[1].timestamp == .milliseconds(20))
    }

    @Test func aMissingFileIsFileNotFound() {
        #expect(throws: MediaContainerError.fileNotFound(path: "/nonexistent-tessera/x.webm")) {
            try MediaFileReader(path: "/nonexistent-tessera/x.webm")
        }
    }

    @Test func otherContainersAndCodecsAreRefusedByName() throws {
        let files = try MediaFixtures.require()
        let wav = files.directory.appendingPathComponent("tone-\(UUID().uuidString).wav").path
        let mkv = files.directory.appendingPathComponent("pcm-\(UUID().uuidString).mkv").path
        try MediaFixtures.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine", "-t", "0.1", wav])
        try MediaFixtures.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine", "-t", "0.1", "-c:a", "pcm_s16le", mkv])
        #expect(throws: MediaContainerError.unsupportedFormat("wav")) { try MediaFileReader(path: wav) }
        #expect(throws: MediaContainerError.unsupportedCodec("A_PCM/INT/LIT")) { try MediaFileReader(path: mkv) }
        let vorbis = files.directory.appendingPathComponent("vorbis-\(UUID().uuidString).ogg").path
        let vp9 = files.directory.appendingPathComponent("vp9-\(UUID().uuidString).ivf").path
        try MediaFixtures.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine", "-t", "0.1", "-c:a", "libvorbis", vorbis])
        try MediaFixtures.run("ffmpeg", ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=64x64:rate=10", "-t", "0.2",
                                         "-c:v", "libvpx-vp9", "-f", "ivf", vp9])
        #expect(throws: MediaContainerError.unsupportedCodec("vorbis")) { try MediaFileReader(path: vorbis) }
        #expect(throws: MediaContainerError.unsupportedCodec("vp9")) { try MediaFileReader(path: vp9) }
        // A path with a colon is a file name, never a URL.
        #expect(throws: MediaContainerError.fileNotFound(path: "http://127.0.0.1:9/x.webm")) {
            try MediaFileReader(path: "http://127.0.0.1:9/x.webm")
        }
    }

    @Test func aTruncatedFileEndsEarlyOrThrowsButNeverTraps() throws {
        let files = try MediaFixtures.require()
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files.smallWebM)))
        let complete = try MediaFileReader(path: files.smallWebM).readAll()
        #expect(complete.contains { $0.kind == .video } && complete.contains { $0.kind == .audio })
        let path = files.directory.appendingPathComponent("truncated-\(UUID().uuidString).webm").path
        for length in [0, 3, 40, 200, whole.count / 2, whole.count - 1] {
            try Data(whole.prefix(length)).write(to: URL(fileURLWithPath: path))
            do {
                let packets = try MediaFileReader(path: path).readAll()
                #expect(packets.count < complete.count || length == whole.count - 1, "\(length) bytes")
            } catch {
                #expect(length < whole.count, "\(length) bytes: \(error)")
            }
        }
        // Cut inside the header: not a WebM any more.
        try Data(whole.prefix(40)).write(to: URL(fileURLWithPath: path))
        #expect(throws: MediaContainerError.self) { try MediaFileReader(path: path) }
    }

    @Test func aMutatedHeaderIsATypedError() throws {
        let files = try MediaFixtures.require()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files.smallWebM)))
        bytes.replaceSubrange(0..<4, with: [0, 0, 0, 0])  // the EBML magic
        let path = files.directory.appendingPathComponent("mutated-\(UUID().uuidString).webm").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: MediaContainerError.self) { try MediaFileReader(path: path) }
    }

    /// A few hundred seeded mutations of a small WebM (bit flips, overwrites, cuts, insertions,
    /// repeated spans, length fields): the reader opens, reads or refuses each one, with a typed
    /// error at opening or at the damaged packet, and never traps. A failure names the seed and
    /// index to reproduce it.
    @Test func mutatedFilesNeverTrapTheReader() throws {
        let files = try MediaFixtures.require()
        let seed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: files.smallWebM)))
        let path = files.directory.appendingPathComponent("fuzz-\(UUID().uuidString).webm").path
        var mutator = Mutator(seed: 0x7E55_E12A)
        var opened = 0, refused = 0, readToTheEnd = 0, packets = 0
        for _ in 0..<300 {
            try Data(mutator.mutate(seed)).write(to: URL(fileURLWithPath: path))
            let reader: MediaFileReader
            do { reader = try MediaFileReader(path: path) } catch {
                refused += 1
                continue
            }
            opened += 1
            do {
                while let packet = try reader.nextPacket() {
                    packets += 1
                    #expect(!packet.data.isEmpty)
                }
                readToTheEnd += 1
            } catch {
                #expect(throws: MediaContainerError.self) { throw error }  // typed, at the damage
            }
        }
        #expect(opened + refused == 300)
        #expect(readToTheEnd > 0 && packets > 0)  // many mutations leave a readable file
    }

    /// The IVF and Ogg readers, mutated and cut short the same way: every file opens, reads to
    /// its end or refuses with a typed error, and nothing traps. Ogg pages carry a CRC, so most
    /// mutations lose a page (libogg skips it) rather than reach the Opus packets.
    @Test(arguments: ["ivf", "ogg"])
    func mutatedAndTruncatedIVFAndOggFilesNeverTrapTheReader(format: String) throws {
        let files = try MediaFixtures.require()
        let source = format == "ivf" ? files.videoIVF : files.audioOgg
        let whole = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)).prefix(40_000))
        let path = files.directory.appendingPathComponent("fuzz-\(UUID().uuidString).\(format)").path
        var mutator = Mutator(seed: format == "ivf" ? 0x1F_0001 : 0x066_0001)
        var readToTheEnd = 0, packets = 0
        // Cut inside each header and at a spread of lengths, then mutated.
        let cuts = [0, 1, 4, 12, 27, 28, 31, 32, 33, 43, 44, 45, 60] + Array(stride(from: 100, to: whole.count, by: 997))
        for input in cuts.map({ Array(whole.prefix($0)) }) + (0..<200).map({ _ in mutator.mutate(whole) }) {
            try Data(input).write(to: URL(fileURLWithPath: path))
            do {
                let reader = try MediaFileReader(path: path)
                while let packet = try reader.nextPacket() {
                    packets += 1
                    #expect(!packet.data.isEmpty && packet.kind == (format == "ivf" ? .video : .audio))
                }
                readToTheEnd += 1
            } catch {
                #expect(throws: MediaContainerError.self) { throw error }
            }
        }
        #expect(readToTheEnd > 0 && packets > 0)
    }
}
