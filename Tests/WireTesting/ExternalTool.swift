import Foundation

/// Runs a program the tests check results with (ffprobe, ffmpeg from Debian's packages) and
/// returns what it printed on standard output; standard error is discarded.
public func runTool(_ tool: String, _ arguments: [String]) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : "/usr/bin/\(tool)")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return data
}

/// A still picture of one colour (`rgb` as `RRGGBB`), made by the ffmpeg CLI: `codec` `png` or
/// `mjpeg`, in `pixelFormat` (rgb24, rgba, pal8, gray, yuvj420p, yuvj444p, rgb48be, …).
public func stillPicture(codec: String, pixelFormat: String, rgb: String, width: Int, height: Int) throws -> [UInt8] {
    [UInt8](try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "color=c=0x\(rgb):s=\(width)x\(height)", "-frames:v", "1",
                                   "-pix_fmt", pixelFormat, "-c:v", codec, "-f", "image2pipe", "-"]))
}
