import Conference
import Foundation
import Media
import Wire

// Codec benchmarks: what one frame of encode or decode costs on one thread, with the settings
// the host uses. Each line's text ends with the cost of one frame and its size.

/// Moving content that makes the encoder work: a smooth texture panning under a moving bar,
/// `count` pictures made up front so that only coding is measured.
func benchPictures(width: Int, height: Int, count: Int = 60) -> [I420Frame] {
    var generator = SystemRandomNumberGenerator()
    let (fieldWidth, fieldHeight) = ((width + 256) / 8, (height + 256) / 8)
    let chroma = ((fieldWidth + 1) / 2) * ((fieldHeight + 1) / 2)
    let bytes = (0..<(fieldWidth * fieldHeight + 2 * chroma)).map { _ in UInt8.random(in: 40...220, using: &generator) }
    let field = (I420Frame(width: fieldWidth, height: fieldHeight, packed: bytes) ?? I420Frame(width: fieldWidth, height: fieldHeight))
        .scaled(width: width + 256, height: height + 256)
    return (0..<count).map { index in
        var picture = field.cropped(to: PixelRect(x: (index * 4) % 256, y: (index * 2) % 256, width: width, height: height))
        picture.fill(PixelRect(x: (index * width / count) & ~1, y: 0, width: width / 16, height: height),
                     with: YUVColor(red: 250, green: 200, blue: 20))
        picture.timestamp = .milliseconds(UInt64(index) * 33)
        return picture
    }
}

/// Encodes pictures in a loop; the text reports ms and bytes a frame.
func benchVP8Encode(width: Int, height: Int, bitrate: Int, cpuUsed: Int = -6, threads: Int = 1,
                    roundTime: Duration = .milliseconds(600)) throws -> (Measurement, msPerFrame: Double, bytesPerFrame: Double) {
    let run = try benchVP8Encode(benchPictures(width: width, height: height),
                                 .init(width: width, height: height, framesPerSecond: 30, bitrate: bitrate, threads: threads, cpuUsed: cpuUsed),
                                 what: "VP8 enc \(width)x\(height) \(bitrate / 1000)k cpu \(cpuUsed)", roundTime: roundTime)
    return (run.0, run.msPerFrame, run.bytesPerFrame)
}

/// Encodes `pictures` (repeated) with a new encoder of `configuration`, after a second of them to
/// settle the rate control: the median ms and the bytes a frame, and the share of macroblocks
/// skipped as settled.
func benchVP8Encode(_ pictures: [I420Frame], _ configuration: VP8Encoder.Configuration, what: String,
                    roundTime: Duration) throws -> (Measurement, msPerFrame: Double, bytesPerFrame: Double, settledShare: Double) {
    let encoder = try VP8Encoder(configuration)
    var index = 0, bytes = 0, frames = 0, settled = 0
    for picture in pictures.prefix(30) { _ = try encoder.encode(picture) }
    let result = try measure(what, unit: " frame/s", roundTime: roundTime) {
        var picture = pictures[index % pictures.count]
        picture.timestamp = .milliseconds(UInt64(index + 30) * 33)
        index += 1
        for frame in try encoder.encode(picture) {
            bytes += frame.data.count
            frames += 1
        }
        settled += encoder.settledBlocks
    }
    let median = result.rounds.sorted()[result.rounds.count / 2]
    return (result, 1000 / median, Double(bytes) / Double(max(1, frames)), Double(settled) / Double(max(1, index) * encoder.macroblocks))
}

func describe(_ result: (Measurement, msPerFrame: Double, bytesPerFrame: Double)) -> Measurement {
    Measurement(what: result.0.what + String(format: ": %.2f ms %.0f B", result.msPerFrame, result.bytesPerFrame),
                unit: result.0.unit, rounds: result.0.rounds)
}

func benchVP8Encode360p() throws -> Measurement {
    describe(try benchVP8Encode(width: 640, height: 360, bitrate: 600_000))
}

func benchVP8Encode720p() throws -> Measurement {
    describe(try benchVP8Encode(width: 1280, height: 720, bitrate: 1_500_000))
}

/// cpu-used -4 ... -16 at 360p and 720p, one line each with the luma PSNR; returns the line of
/// the default (-6, 720p).
func benchVP8CpuUsed() throws -> Measurement {
    var chosen: Measurement?
    for (width, height, bitrate) in [(640, 360, 600_000), (1280, 720, 1_500_000)] {
        for cpuUsed in [-4, -6, -8, -10, -12, -16] {
            let result = describe(try benchVP8Encode(width: width, height: height, bitrate: bitrate, cpuUsed: cpuUsed,
                                                     roundTime: .milliseconds(400)))
            let psnr = try lumaPSNR(width: width, height: height, bitrate: bitrate, cpuUsed: cpuUsed)
            print(result.line(name: "  cpu-used") + String(format: "  Y-PSNR %.2f dB", psnr))
            if cpuUsed == -6 && width == 1280 { chosen = result }
        }
    }
    guard let chosen else { throw BenchMediaError.noResult }
    return chosen
}

enum BenchMediaError: Error { case noResult }

/// A room's composite as `tessera load` makes it: 1280x720, four tiles of flat colour, each with
/// a white square moving along its bottom and a row of blocks that change every frame.
func benchCompositePictures(count: Int = 60) -> [I420Frame] {
    let colours = [YUVColor(red: 200, green: 40, blue: 40), YUVColor(red: 40, green: 180, blue: 40),
                   YUVColor(red: 40, green: 40, blue: 200), YUVColor(red: 200, green: 180, blue: 40)]
    return (0..<count).map { index in
        var picture = I420Frame(width: 1280, height: 720, color: .black, timestamp: .milliseconds(UInt64(index) * 33))
        for tile in 0..<4 {
            let (x, y) = ((tile % 2) * 640, (tile / 2) * 360)
            picture.fill(PixelRect(x: x, y: y, width: 640, height: 360), with: colours[tile])
            picture.fill(PixelRect(x: x + ((index * 16) % 560) & ~1, y: y + 280, width: 64, height: 64), with: YUVColor(y: 235, u: 128, v: 128))
            for bit in 0..<6 where (index >> bit) & 1 == 1 {
                picture.fill(PixelRect(x: x + 80 + bit * 80, y: y + 160, width: 64, height: 40), with: YUVColor(y: 16, u: 128, v: 128))
            }
        }
        return picture
    }
}

/// The composite encoder's speed steps (`CompositeEncoderSpeed.steps`) at 1280x720 1.5 Mbit/s, and
/// cpu-used -16 beside them: on a composite like a load room's, what a frame costs to encode and
/// to decode (a receiver's cost), and the luma PSNR on the panning texture (`benchPictures`).
func benchVP8CompositeSpeed() throws -> [Measurement] {
    let pictures = benchCompositePictures()
    var results: [Measurement] = []
    let cases = CompositeEncoderSpeed.steps.map { ($0.profile, $0.cpuUsed) } + [(0, -16), (3, -16)]
    for (profile, cpuUsed) in cases {
        let encoder = try VP8Encoder(.init(width: 1280, height: 720, framesPerSecond: 30, bitrate: 1_500_000, cpuUsed: cpuUsed,
                                           profile: profile))
        let decoder = try VP8Decoder()
        var decodeTime = Duration.zero, decoded = 0
        let clock = ContinuousClock()
        for picture in pictures.prefix(30) {
            for frame in try encoder.encode(picture) { _ = try? decoder.decode(frame.data, timestamp: frame.captureTime) }
        }
        var index = 0, bytes = 0, frames = 0
        let result = try measure("composite 720p profile \(profile) cpu \(cpuUsed)", unit: " frame/s", roundTime: .milliseconds(400)) {
            var picture = pictures[index % pictures.count]
            picture.timestamp = .milliseconds(UInt64(index + 30) * 33)
            index += 1
            for frame in try encoder.encode(picture) {
                bytes += frame.data.count
                frames += 1
                let began = clock.now
                _ = try? decoder.decode(frame.data, timestamp: frame.captureTime)
                decodeTime += clock.now - began
                decoded += 1
            }
        }
        let median = result.rounds.sorted()[result.rounds.count / 2]
        let psnr = try lumaPSNR(width: 1280, height: 720, bitrate: 1_500_000, cpuUsed: cpuUsed, profile: profile)
        let decodeMilliseconds = decoded == 0 ? 0 : decodeTime.seconds * 1000 / Double(decoded)
        results.append(Measurement(what: String(format: "720p composite p%d cpu %d: %.2f ms, decode %.2f, %.0f B, %.1f dB",
                                                profile, cpuUsed, 1000 / median, decodeMilliseconds, Double(bytes) / Double(max(1, frames)), psnr),
                                   unit: result.unit, rounds: result.rounds))
    }
    return results
}

/// The mean luma PSNR of 90 frames (3 s at 30 fps) of the panning texture through encoder and
/// decoder, after the first 30.
func lumaPSNR(width: Int, height: Int, bitrate: Int, cpuUsed: Int, profile: Int = 0) throws -> Double {
    try meanLumaPSNR(benchPictures(width: width, height: height),
                     .init(width: width, height: height, bitrate: bitrate, cpuUsed: cpuUsed, profile: profile))
}

/// The mean luma PSNR of 90 frames of `pictures` (repeated) through a new encoder of
/// `configuration` and a decoder, after the first 30.
func meanLumaPSNR(_ pictures: [I420Frame], _ configuration: VP8Encoder.Configuration) throws -> Double {
    let encoder = try VP8Encoder(configuration), decoder = try VP8Decoder()
    var total = 0.0, counted = 0
    for index in 0..<120 {
        var picture = pictures[index % pictures.count]
        picture.timestamp = .milliseconds(UInt64(index) * 33)
        for frame in try encoder.encode(picture) {
            guard let decoded = try decoder.decode(frame.data), index >= 30 else { continue }
            total += decoded.lumaPSNR(against: picture)
            counted += 1
        }
    }
    return total / Double(max(1, counted))
}

/// Decodes 720p frames made at 1.5 Mbit/s, in order, starting again at the key frame.
func benchVP8Decode(width: Int, height: Int, bitrate: Int) throws -> Measurement {
    let encoder = try VP8Encoder(.init(width: width, height: height, bitrate: bitrate))
    let frames = try benchPictures(width: width, height: height).flatMap { try encoder.encode($0) }.map(\.data)
    let decoder = try VP8Decoder()
    var index = 0
    let result = try measure("VP8 dec \(width)x\(height) \(bitrate / 1000)k", unit: " frame/s") {
        consume(try decoder.decode(frames[index % frames.count]))
        index += 1
    }
    let median = result.rounds.sorted()[result.rounds.count / 2]
    let bytes = Double(frames.reduce(0) { $0 + $1.count }) / Double(frames.count)
    return Measurement(what: result.what + String(format: ": %.2f ms %.0f B", 1000 / median, bytes), unit: result.unit, rounds: result.rounds)
}

func benchVP8Decode360p() throws -> Measurement { try benchVP8Decode(width: 640, height: 360, bitrate: 600_000) }
func benchVP8Decode720p() throws -> Measurement { try benchVP8Decode(width: 1280, height: 720, bitrate: 1_500_000) }

/// A second of voice-like audio: a 150 Hz buzz with harmonics, changing loudness, and noise.
func benchSpeech(channels: Int = 1) -> [AudioFrame] {
    var generator = SystemRandomNumberGenerator()
    return (0..<50).map { index in
        let samples = (0..<AudioFrame.samplesPer20ms).flatMap { offset -> [Int16] in
            let t = Double(index * AudioFrame.samplesPer20ms + offset) / 48_000
            let envelope = 0.5 + 0.5 * sin(2 * Double.pi * 3 * t)
            var value = 0.0
            for harmonic in 1...8 { value += sin(2 * Double.pi * 150 * Double(harmonic) * t) / Double(harmonic) }
            let sample = Int16(clamping: Int(4000 * envelope * value) + Int.random(in: -300...300, using: &generator))
            return [Int16](repeating: sample, count: channels)
        }
        return AudioFrame(channels: channels, samples: samples)
    }
}

func benchOpusEncode(complexity: Int) throws -> Measurement {
    let frames = benchSpeech()
    let encoder = try OpusEncoder(.init(channels: 1, application: .voip, bitrate: 32_000, complexity: complexity, inbandFEC: true,
                                        expectedPacketLossPercent: 10))
    var index = 0, bytes = 0
    let result = try measure("Opus enc 20 ms mono 32k FEC cx \(complexity)", unit: " frame/s") {
        bytes += try encoder.encode(frames[index % frames.count]).count
        index += 1
    }
    let median = result.rounds.sorted()[result.rounds.count / 2]
    return Measurement(what: result.what + String(format: ": %.3f ms %.0f B", 1000 / median, Double(bytes) / Double(max(1, index))),
                       unit: result.unit, rounds: result.rounds)
}

func benchOpusEncode10() throws -> Measurement { try benchOpusEncode(complexity: 10) }
func benchOpusEncode5() throws -> Measurement { try benchOpusEncode(complexity: 5) }

func benchOpusDecode() throws -> Measurement {
    let encoder = try OpusEncoder(.init(channels: 1, application: .voip, bitrate: 32_000))
    let packets = try benchSpeech().map { try encoder.encode($0) }
    let decoder = try OpusDecoder(channels: 1)
    var index = 0
    let result = try measure("Opus dec 20 ms mono 32k", unit: " frame/s") {
        consume(try decoder.decode(packets[index % packets.count]))
        index += 1
    }
    let median = result.rounds.sorted()[result.rounds.count / 2]
    return Measurement(what: result.what + String(format: ": %.3f ms", 1000 / median), unit: result.unit, rounds: result.rounds)
}

/// A shared screen: a still page of dark text-like strokes on white (the same page every run),
/// and a pointer moving over it.
func benchSlidePictures(count: Int = 60) -> [I420Frame] {
    var generator = SplitMix64(seed: 2026)
    var page = I420Frame(width: 1280, height: 720, color: YUVColor(red: 250, green: 250, blue: 250))
    for line in 0..<18 {
        var x = 96
        while x < 1160 {
            let word = Int.random(in: 24...120, using: &generator)
            for stroke in stride(from: x, to: min(x + word, 1180), by: 6) where Bool.random(using: &generator) {
                page.fill(PixelRect(x: stroke, y: 80 + line * 34, width: 3, height: 18), with: YUVColor(red: 30, green: 30, blue: 40))
            }
            x += word + 14
        }
    }
    return (0..<count).map { index in
        var picture = page
        picture.fill(PixelRect(x: 200 + (index * 12) % 800, y: 300 + (index * 4) % 200, width: 16, height: 24), with: .black)
        picture.timestamp = .milliseconds(UInt64(index) * 33)
        return picture
    }
}

/// A composite of three cameras and an empty slot: each camera's 640x360 tile a still scene (a
/// seeded smooth texture) with a level or two of sensor noise in every picture and someone moving
/// (a bar crossing it); the fourth tile the background.
func benchCameraGridPictures(count: Int = 60) -> [I420Frame] {
    var generator = SplitMix64(seed: 4)
    let scenes = (0..<3).map { _ in
        let bytes = (0..<(80 * 45 * 3 / 2)).map { _ in UInt8.random(in: 40...220, using: &generator) }
        return (I420Frame(width: 80, height: 45, packed: bytes) ?? I420Frame(width: 80, height: 45)).scaled(width: 640, height: 360)
    }
    return (0..<count).map { index in
        var picture = I420Frame(width: 1280, height: 720, color: .black, timestamp: .milliseconds(UInt64(index) * 33))
        for (tile, scene) in scenes.enumerated() {
            let (x, y) = ((tile % 2) * 640, (tile / 2) * 360)
            picture.draw(scene, at: PixelRect(x: x, y: y, width: 640, height: 360))
            picture.fill(PixelRect(x: x + ((index * 6 + tile * 150) % 560) & ~1, y: y + 60, width: 80, height: 300),
                         with: YUVColor(red: 180, green: 140, blue: 120))
        }
        picture.withMutablePlanes { luma, _, _ in
            for row in 0..<720 {
                for column in 0..<(row < 360 ? 1280 : 640) {
                    luma[row * 1280 + column] = UInt8(clamping: Int(luma[row * 1280 + column]) + Int(generator.next() % 5) - 2)
                }
            }
        }
        return picture
    }
}

/// The composite encoder with and without settled blocks (`skipsSettledBlocks`) at 1280x720
/// 1.5 Mbit/s, on a load room's composite (flat tiles, moving squares), a shared screen (a still
/// page, a moving pointer), three noisy cameras and an empty slot (what leaving settled blocks
/// unfiltered costs the cameras' quality, libvpx's cyclic refresh gone) and a camera-like panning
/// texture (nothing settles: what the comparison costs): ms a frame, bytes, the share of blocks
/// settled and the luma PSNR.
func benchVP8Settled() throws -> [Measurement] {
    var results: [Measurement] = []
    for (content, pictures) in [("composite", benchCompositePictures()), ("screen", benchSlidePictures()),
                                ("cameras", benchCameraGridPictures()), ("camera", benchPictures(width: 1280, height: 720))] {
        for skips in [false, true] {
            let configuration = VP8Encoder.Configuration(width: 1280, height: 720, framesPerSecond: 30, bitrate: 1_500_000,
                                                         skipsSettledBlocks: skips)
            let run = try benchVP8Encode(pictures, configuration, what: "\(content) \(skips ? "skipping" : "all coded")",
                                         roundTime: .milliseconds(400))
            let psnr = try meanLumaPSNR(pictures, configuration)
            results.append(Measurement(what: run.0.what + String(format: ": %.2f ms %.0f B %.0f%% settled %.1f dB",
                                                                 run.msPerFrame, run.bytesPerFrame, run.settledShare * 100, psnr),
                                       unit: run.0.unit, rounds: run.0.rounds))
        }
    }
    return results
}
