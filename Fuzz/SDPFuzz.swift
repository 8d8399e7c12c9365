// libFuzzer entry point for the SDP parser and the answer builder. Built by a script together
// with Sources/SDP/*.swift as one module:
//   swiftc -sanitize=fuzzer,address -parse-as-library -module-name FuzzTarget Sources/SDP/*.swift Fuzz/SDPFuzz.swift
// so the SDP API is used without `import SDP`. Any trap, sanitizer report, or broken round trip
// (parse → serialize → parse giving a different description) is a finding. Seed corpus:
// Tests/SDPTests/Fixtures/*-offer*.sdp.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let offer = try? SessionDescription(parsing: bytes) else { return 0 }
    guard let again = try? SessionDescription(parsing: offer.serializedBytes()), again == offer else {
        fatalError("SDP round trip changed the description")
    }
    // Fixed host parameters, so the answer path runs on every input that parses.
    let host = HostParameters(
        iceUsernameFragment: "Fuzz", icePassword: "FuzzPasswordFuzzPassword",
        fingerprintSHA256: "00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF",
        candidateAddresses: [HostCandidateAddress(address: "127.0.0.1", port: 50000)],
        senders: [
            "0": HostSender(ssrc: 1, cname: "fuzz", streamID: "fuzz", trackID: "audio"),
            "1": HostSender(ssrc: 2, rtxSSRC: 3, cname: "fuzz", streamID: "fuzz", trackID: "video"),
        ],
        sessionID: 1)
    if let session = try? negotiate(offer: offer, host: host),
        (try? SessionDescription(parsing: session.answer.serializedBytes())) != session.answer {
        fatalError("the answer does not parse back to itself")
    }
    return 0
}
