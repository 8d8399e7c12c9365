import Testing
import Transport
import WireTesting

/// Hostile input never traps the parser or the verifiers, and no mutant passes a check whose
/// covered bytes changed.
@Suite("STUN: robustness under truncation and seeded mutation")
struct STUNRobustnessTests {
    /// The RFC 5769 vectors and our own messages, each with the key that verifies it.
    static let corpus: [(name: String, bytes: [UInt8], key: STUNIntegrityKey)] = {
        let built = (try? BuiltMessages.all()) ?? []
        return RFC5769.all + built
    }()

    static let totalMutations = 100_000

    /// What MESSAGE-INTEGRITY covers (RFC 8489 §14.5): the bytes up to the end of the attribute,
    /// the header length field set to that extent, whatever the datagram said.
    static func integrityCoveredBytes(_ message: STUNMessage) -> [UInt8]? {
        guard let offset = message.messageIntegrityOffset else { return nil }
        var covered = Array(message.bytes[..<(offset + 24)])
        covered[2] = UInt8((offset + 4) >> 8)
        covered[3] = UInt8((offset + 4) & 0xFF)
        return covered
    }

    /// What FINGERPRINT covers (RFC 8489 §14.7).
    static func fingerprintCoveredBytes(_ message: STUNMessage) -> [UInt8]? {
        guard let offset = message.fingerprintOffset else { return nil }
        return Array(message.bytes[..<(offset + 8)])
    }

    @Test("The corpus is what it claims: eight messages that parse, verify and have integrity")
    func corpusIsValid() throws {
        #expect(Self.corpus.count == 8)
        for entry in Self.corpus {
            let message = try STUNMessage(parsing: entry.bytes)
            #expect(message.verifyIntegrity(key: entry.key), "\(entry.name)")
            #expect(message.verifyFingerprint() == message.hasFingerprint, "\(entry.name)")
        }
    }

    @Test("Every truncation of every vector and built message gives a typed error, never a trap")
    func truncations() {
        for entry in Self.corpus {
            for prefix in Mutator.truncations(of: entry.bytes) {
                // Each prefix is shorter than its header length says: always an error.
                #expect(throws: STUNParseError.self, "\(entry.name) cut at \(prefix.count)") {
                    try STUNMessage(parsing: prefix)
                }
            }
        }
    }

    @Test("Seeded mutants parse or fail cleanly; none passes integrity or fingerprint over changed bytes",
          arguments: 0..<corpus.count)
    func mutations(corpusIndex: Int) throws {
        let (name, original, key) = Self.corpus[corpusIndex]
        let originalMessage = try STUNMessage(parsing: original)
        let originalIntegrity = Self.integrityCoveredBytes(originalMessage)
        let originalFingerprint = Self.fingerprintCoveredBytes(originalMessage)

        var mutator = Mutator(seed: 0x5354_554E_0000 + UInt64(corpusIndex))
        let count = Self.totalMutations / Self.corpus.count
        var parsed = 0, passedIntegrity = 0
        for index in 0..<count {
            var mutant = mutator.mutate(original)
            if index % 2 == 1, mutant.count >= 4 {
                // Half the mutants get a header length that matches, so that they reach the
                // attribute walk instead of stopping at the length check.
                let length = max(0, mutant.count - 20)
                mutant[2] = UInt8(truncatingIfNeeded: length >> 8)
                mutant[3] = UInt8(truncatingIfNeeded: length)
            }
            let message: STUNMessage
            do {
                message = try STUNMessage(parsing: mutant)
            } catch {
                continue  // a typed error: the outcome bad input should have
            }
            parsed += 1
            if message.verifyIntegrity(key: key) {
                passedIntegrity += 1
                if Self.integrityCoveredBytes(message) != originalIntegrity {
                    Issue.record("\(name) mutant \(index) passed MESSAGE-INTEGRITY over changed bytes: \(mutant)")
                }
            }
            _ = message.verifyIntegritySHA256(key: key)
            if message.verifyFingerprint(), Self.fingerprintCoveredBytes(message) != originalFingerprint {
                Issue.record("\(name) mutant \(index) passed FINGERPRINT over changed bytes: \(mutant)")
            }

            // Whatever parses re-encodes, and the re-encoding parses to the same attributes.
            var builder = STUNMessageBuilder(type: message.type, transactionID: message.transactionID)
            do {
                try builder.append(contentsOf: message.attributes)
                let reparsed = try STUNMessage(parsing: builder.finish(integrityKey: key, fingerprint: true))
                if reparsed.attributes != message.attributes || reparsed.type != message.type {
                    Issue.record("\(name) mutant \(index) re-encodes differently: \(mutant)")
                }
            } catch {
                Issue.record("\(name) mutant \(index) parsed but does not re-encode: \(error)")
            }
        }
        // The mutator changes little per round, so a share of mutants must still parse and some
        // (those touching only bytes after the MAC) must still verify: the loop tested something.
        #expect(parsed > count / 20, "\(name): only \(parsed) of \(count) mutants parsed")
        #expect(passedIntegrity > 0, "\(name): no mutant kept its integrity")
    }
}
