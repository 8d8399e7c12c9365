import Foundation
import Media
import Testing
import Wire

@Suite struct WebMWriterTests {
    /// Writes `packets` into a new WebM file and returns its path.
    func record(_ packets: [EncodedPacket], into path: String, video: WebMWriter.VideoTrack?, audio: WebMWriter.AudioTrack?,
                beforeFinish: (String) throws -> Void = { _ in }) throws {
        let writer = try WebMWriter(path: path, video: video, audio: audio)
        for packet in packets {
            switch packet.kind {
            case .video: try writer.writeVideo(packet.data, isKeyFrame: packet.isKeyFrame, timestamp: packet.timestamp)
            case .audio: try writer.writeAudio(packet.data, timestamp: packet.timestamp)
            }
        }
        try beforeFinish(path)
        try writer.finish()
    }

    @Test func vp8FromIVFAndOpusFromOggRecordIntoAWebMThatPlays() throws {
        let files = try MediaFixtures.require()
        let video = try MediaFileReader(path: files.videoIVF), audio = try MediaFileReader(path: files.audioOgg)
        // The first 2 s.
        let packets = try MediaFixtures.interleaved(files.videoIVF, files.audioOgg, before: .seconds(2))
        let output = files.directory.appendingPathComponent("roundtrip-\(UUID().uuidString).webm").path
        try record(packets, into: output, video: WebMWriter.VideoTrack(width: video.video!.width, height: video.video!.height),
                   audio: WebMWriter.AudioTrack(channels: audio.audio!.channels, preSkip: audio.audio!.preSkip))

        let probe = try MediaFixtures.probe(output)
        #expect(probe.format.format_name?.contains("webm") == true)
        #expect(Set(probe.streams.compactMap(\.codec_name)) == ["vp8", "opus"])
        #expect(probe.streams.first { $0.codec_name == "vp8" }?.width == 320)
        #expect(probe.streams.first { $0.codec_name == "opus" }?.channels == 1)
        let duration = try #require(probe.durationSeconds)
        #expect(abs(duration - 2.0) <= 0.1, "duration \(duration)")
        #expect(try MediaFixtures.decodeErrors(output) == "")

        // Read back: every packet, in the same order per stream, with the same bytes.
        let readBack = try MediaFileReader(path: output)
        #expect(readBack.formatName.contains("webm"))
        #expect(readBack.video == MediaFileReader.VideoInfo(width: 320, height: 240))
        #expect(readBack.audio?.channels == 1 && readBack.audio?.preSkip == 312)
        let again = try readBack.readAll()
        for kind in [PacketKind.video, .audio] {
            let written = packets.filter { $0.kind == kind }, read = again.filter { $0.kind == kind }
            #expect(read.map(\.data) == written.map(\.data), "\(kind) bytes")
            #expect(read.map(\.isKeyFrame) == written.map(\.isKeyFrame), "\(kind) key frames")
            // Milliseconds in WebM: within half of one of the source's.
            for (r, w) in zip(read, written) { #expect(abs((r.timestamp - w.timestamp).nanosecondsClamped) <= 500_000) }
        }
    }

    /// A recorder killed with SIGKILL leaves what it had handed to the kernel: the bytes written
    /// so far, without the cluster still in memory and without the trailer. Copying the file before
    /// `finish()` captures exactly that, so the copy is the file a crash leaves behind.
    @Test func aRecordingCutShortByACrashPlaysUpToItsLastSecond() throws {
        let files = try MediaFixtures.require()
        let packets = try MediaFixtures.interleaved(files.videoIVF, files.audioOgg)
        let lastWritten = try #require(packets.last).timestamp
        let output = files.directory.appendingPathComponent("crash-\(UUID().uuidString).webm").path
        let cut = output + ".cut.webm"
        try record(packets, into: output, video: WebMWriter.VideoTrack(width: 320, height: 240),
                   audio: WebMWriter.AudioTrack(channels: 1)) { path in
            try FileManager.default.copyItem(atPath: path, toPath: cut)
        }

        #expect(try MediaFixtures.decodeErrors(cut) == "")
        let written = Double(lastWritten.nanosecondsClamped) / 1e9
        let lastDecoded = try MediaFixtures.lastDecodedTimes(cut)
        let lastVideo = try #require(lastDecoded[0]), lastAudio = try #require(lastDecoded[1])
        #expect(written - lastVideo <= 2.0, "video decodes to \(lastVideo) s of \(written) s written")
        #expect(written - lastAudio <= 2.0, "audio decodes to \(lastAudio) s of \(written) s written")
        // And the finished file has all of it, with a duration from the trailer.
        let duration = try #require(try MediaFixtures.probe(output).durationSeconds)
        #expect(abs(duration - 5.0) <= 0.1, "duration \(duration)")
    }

    /// Damage in the middle of a recording (a bad sector, a byte flipped in a copy) costs the
    /// cluster it is in: the reader goes on from the next cluster, as a player does, and reads
    /// the rest of the file with its times.
    @Test func aDamagedClusterCostsOnlyItself() throws {
        let files = try MediaFixtures.require()
        let packets = try MediaFixtures.interleaved(files.videoIVF, files.audioOgg)
        let output = files.directory.appendingPathComponent("damaged-\(UUID().uuidString).webm").path
        try record(packets, into: output, video: WebMWriter.VideoTrack(width: 320, height: 240), audio: WebMWriter.AudioTrack(channels: 1))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        let clusterID: [UInt8] = [0x1F, 0x43, 0xB6, 0x75]
        let clusters = (0..<bytes.count - 4).filter { Array(bytes[$0..<$0 + 4]) == clusterID }
        try #require(clusters.count >= 4, "\(clusters.count) clusters")
        // Zeros (no element ID starts with a zero byte) over the second cluster's first SimpleBlock header.
        let damage = try #require((clusters[1] + 4..<clusters[2]).first { bytes[$0] == 0xA3 })
        bytes.replaceSubrange(damage..<damage + 8, with: [UInt8](repeating: 0, count: 8))
        try Data(bytes).write(to: URL(fileURLWithPath: output))
        let reader = try MediaFileReader(path: output)
        let read = try reader.readAll()
        #expect(reader.skippedDamage?.contains("invalid element ID at byte") == true, "\(String(describing: reader.skippedDamage))")
        #expect(read.count < packets.count, "the damaged cluster's packets are lost")
        #expect(read.count > packets.count / 2, "\(read.count) of \(packets.count) packets read")
        let lastVideo = read.last { $0.kind == .video }?.timestamp, lastWritten = packets.last { $0.kind == .video }?.timestamp
        let missing = try #require(lastWritten) - (try #require(lastVideo))
        #expect(abs(missing.nanosecondsClamped) <= 500_000, "read to the end: \(String(describing: lastVideo)) of \(String(describing: lastWritten))")
    }

    @Test func theOpusHeaderIsTheNineteenBytesRFC7845Describes() throws {
        let files = try MediaFixtures.require()
        let output = files.directory.appendingPathComponent("head-\(UUID().uuidString).webm").path
        let packets = try MediaFixtures.interleaved(files.audioOgg, before: .seconds(1))
        try record(packets, into: output, video: nil, audio: WebMWriter.AudioTrack(channels: 2, preSkip: 312))
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        let expected: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0, 0, 0]
        #expect(bytes.firstRange(of: expected) != nil)
        let probe = try MediaFixtures.probe(output)
        #expect(probe.streams.map(\.codec_name) == ["opus"])
        #expect(probe.streams.first?.channels == 2)
    }

    @Test func aTimestampGoingBackwardsIsRefusedAndTheRecordingGoesOn() throws {
        let files = try MediaFixtures.require()
        let packets = try MediaFixtures.interleaved(files.videoIVF, before: .seconds(1))
        let output = files.directory.appendingPathComponent("backwards-\(UUID().uuidString).webm").path
        let writer = try WebMWriter(path: output, video: WebMWriter.VideoTrack(width: 320, height: 240), audio: nil)
        for packet in packets.prefix(10) { try writer.writeVideo(packet.data, isKeyFrame: packet.isKeyFrame, timestamp: packet.timestamp) }
        let previous = packets[9].timestamp
        #expect(throws: MediaContainerError.timestampWentBackwards(.video, previous: previous, given: .milliseconds(100))) {
            try writer.writeVideo(packets[10].data, isKeyFrame: false, timestamp: .milliseconds(100))
        }
        // The same time again is allowed (WebM stores milliseconds; two frames may share one).
        for packet in packets.dropFirst(10) { try writer.writeVideo(packet.data, isKeyFrame: packet.isKeyFrame, timestamp: packet.timestamp) }
        try writer.finish()
        #expect(try MediaFixtures.decodeErrors(output) == "")
        let reader = try MediaFileReader(path: output)
        #expect(try reader.readAll().count == packets.count)
        #expect(reader.skippedDamage == nil)
    }

    @Test func misuseGetsTypedErrorsNotTraps() throws {
        let directory = MediaFixtures.temporaryDirectory()
        let path = directory.appendingPathComponent("misuse.webm").path
        #expect(throws: MediaContainerError.self) { try WebMWriter(path: path, video: nil, audio: nil) }
        #expect(throws: MediaContainerError.self) { try WebMWriter(path: path, video: WebMWriter.VideoTrack(width: 0, height: 240), audio: nil) }
        #expect(throws: MediaContainerError.self) { try WebMWriter(path: path, video: nil, audio: WebMWriter.AudioTrack(channels: 6)) }
        do {
            _ = try WebMWriter(path: "/nonexistent-tessera-dir/x.webm", video: nil, audio: WebMWriter.AudioTrack(channels: 1))
            Issue.record("opened a file in a directory that does not exist")
        } catch {
            guard case .io(let operation, _, let message) = error else { Issue.record("\(error)"); return }
            #expect(operation.hasPrefix("open") && message.contains("No such file"))
        }

        let writer = try WebMWriter(path: path, video: WebMWriter.VideoTrack(width: 64, height: 48), audio: nil)
        #expect(throws: MediaContainerError.noSuchStream(.audio)) { try writer.writeAudio([0xF8, 0xFF, 0xFE], timestamp: .zero) }
        #expect(throws: MediaContainerError.firstVideoFrameIsNotKey) { try writer.writeVideo([1, 2, 3], isKeyFrame: false, timestamp: .zero) }
        #expect(throws: MediaContainerError.emptyPacket(.video)) { try writer.writeVideo([], isKeyFrame: true, timestamp: .zero) }
        #expect(throws: MediaContainerError.timestampWentBackwards(.video, previous: .zero, given: .milliseconds(-5))) {
            try writer.writeVideo([1, 2, 3], isKeyFrame: true, timestamp: .milliseconds(-5))
        }
        try writer.finish()
        try writer.finish()  // a second finish does nothing
        #expect(throws: MediaContainerError.finished) { try writer.writeVideo([1], isKeyFrame: true, timestamp: .seconds(1)) }
    }

    @Test func aWriterDroppedWithoutFinishStillWritesTheTrailer() throws {
        let files = try MediaFixtures.require()
        let output = files.directory.appendingPathComponent("dropped-\(UUID().uuidString).webm").path
        do {
            let writer = try WebMWriter(path: output, video: nil, audio: WebMWriter.AudioTrack(channels: 1))
            for packet in try MediaFixtures.interleaved(files.audioOgg, before: .seconds(2)) {
                try writer.writeAudio(packet.data, timestamp: packet.timestamp)
            }
        }
        let duration = try #require(try MediaFixtures.probe(output).durationSeconds)
        #expect(abs(duration - 2.0) <= 0.1)
    }
}
