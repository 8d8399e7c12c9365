import Foundation
import SDP
import Testing

/// The real offers captured from each peer (Tests/SDPTests/Fixtures/<name>-offer.sdp).
enum Fixture {
    /// Every captured offer, by peer name.
    static let offers = ["chromium", "chromium-offer-screenshare", "firefox", "aiortc", "gstreamer"]
    /// The four peers whose answers are pinned by golden files.
    static let peers = ["chromium", "firefox", "aiortc", "gstreamer"]

    /// The file name of a peer's offer (`chromium-offer.sdp`; the screenshare capture is named in full).
    static func offerFile(_ name: String) -> String { name.hasSuffix("-screenshare") ? "\(name).sdp" : "\(name)-offer.sdp" }

    /// The bytes of a fixture file, from the test bundle's copied Fixtures folder.
    static func bytes(_ file: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/\(file)", withExtension: nil), "missing fixture \(file)")
        return [UInt8](try Data(contentsOf: url))
    }

    /// The text of a fixture file.
    static func text(_ file: String) throws -> String { String(decoding: try bytes(file), as: UTF8.self) }

    /// A parsed offer.
    static func offer(_ name: String) throws -> SessionDescription {
        try SessionDescription(parsing: try bytes(offerFile(name)))
    }

    /// The source folder of the fixtures, for (re)writing golden answers with SDP_RECORD_GOLDEN=1.
    static var sourceFolder: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures") }

    /// Fixed host parameters: the same answer every run.
    static func host(for offer: SessionDescription) -> HostParameters {
        var senders: [String: HostSender] = [:]
        if let audio = offer.media.first(where: { $0.kind == .audio })?.mid {
            senders[audio] = HostSender(ssrc: 1_111_111_111, cname: "tessera-host", streamID: "tessera", trackID: "tessera-mix")
        }
        if let video = offer.media.first(where: { $0.kind == .video })?.mid {
            senders[video] = HostSender(ssrc: 2_222_222_222, rtxSSRC: 3_333_333_333, cname: "tessera-host",
                                        streamID: "tessera", trackID: "tessera-composite")
        }
        return HostParameters(
            iceUsernameFragment: "TsrA", icePassword: "TesseraFixedPassword0123",
            fingerprintSHA256: hostFingerprint,
            candidateAddresses: [HostCandidateAddress(address: "127.0.0.1", port: 50000)],
            senders: senders, sessionID: 4_611_686_018_427_387_904)
    }

    /// A fixed SHA-256 fingerprint: bytes 0x00, 0x11, … in upper-case hex.
    static let hostFingerprint = (0..<32).map { String(format: "%02X", ($0 * 0x11) & 0xFF) }.joined(separator: ":")
}

/// The lines of an SDP text, without line ends.
func lines(_ text: String) -> [String] {
    text.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }).map(String.init)
}
