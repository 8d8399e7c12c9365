@testable import Server

/// The config file: strict JSON against the config's shape, decoded with every field's default,
/// then every bound checked. A config that decodes must also encode and decode to itself.
enum ConfigFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let config = try? HostConfig.decode(fileContents: bytes) else { return }
        precondition(config.limits.maxRooms >= 1 && config.video.fps >= 1, "validate let a bound through")
        if let impair = config.testing.impair {
            precondition((0...1).contains(impair.loss) && (1...100).contains(impair.burst), "validate let an impairment through")
        }
    }
}
