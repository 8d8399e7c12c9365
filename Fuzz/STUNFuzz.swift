// libFuzzer entry point for the STUN parser and verifiers. Compiled into one module with Wire's
// and the STUN sources (see the build command in docs/architecture.md), so no `import Transport`.
// Any trap, sanitizer report or failed precondition here is a finding.

/// Parses the input as a datagram; whatever parses is verified, re-encoded and parsed again, and
/// must come back with the same type and attributes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let datagram = Array(UnsafeBufferPointer(start: data, count: size))
    _ = STUNMessage.isSTUN(datagram)
    guard let message = try? STUNMessage(parsing: datagram) else { return 0 }

    let key = STUNIntegrityKey.shortTerm(password: "VOkJxbRl1RmTxUk/WvJxBt")
    _ = message.verifyIntegrity(key: key)
    _ = message.verifyIntegritySHA256(key: key)
    _ = message.verifyFingerprint()
    _ = (message.username, message.priority, message.xorMappedAddress, message.errorCode)

    var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID)
    do {
        try builder.append(contentsOf: message.attributes)
    } catch {
        preconditionFailure("a parsed message does not re-encode: \(error)")
    }
    let rebuilt = builder.finish(integrityKey: key, fingerprint: true)
    guard let reparsed = try? STUNMessage(parsing: rebuilt) else {
        preconditionFailure("a re-encoded message does not parse")
    }
    precondition(reparsed.type == message.type && reparsed.attributes == message.attributes, "re-encoding changed the message")
    precondition(reparsed.verifyIntegrity(key: key) && reparsed.verifyFingerprint(), "our own MAC or CRC does not verify")
    return 0
}
