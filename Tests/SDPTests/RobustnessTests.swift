import SDP
import Testing
import WireTesting

/// Seeded mutations and every truncation of each real offer: parse and negotiate never trap,
/// and whatever parses serializes to text that parses back to the same description.
@Suite struct RobustnessTests {
    /// 5 offers × 20,000 = 100,000 mutations per run.
    static let mutationsPerOffer = 20_000

    /// Checks one input; returns whether it parsed.
    static func check(_ bytes: [UInt8], host: HostParameters, label: @autoclosure () -> String) -> Bool {
        let parsed: SessionDescription
        do throws(SDPError) {
            parsed = try SessionDescription(parsing: bytes)
        } catch {
            return false
        }
        let text = parsed.serializedBytes()
        do throws(SDPError) {
            let again = try SessionDescription(parsing: text)
            if again != parsed { Issue.record("re-parse differs: \(label())") }
        } catch {
            Issue.record("serialized description does not parse (\(error)): \(label())")
        }
        if let session = try? negotiate(offer: parsed, host: host) {
            if (try? SessionDescription(parsing: session.answer.serializedBytes())) != session.answer {
                Issue.record("answer does not re-parse equal: \(label())")
            }
        }
        return true
    }

    @Test(arguments: Fixture.offers)
    func seededMutationsNeverTrapAndRoundTrip(name: String) throws {
        let original = try Fixture.bytes(Fixture.offerFile(name))
        let host = Fixture.host(for: try Fixture.offer(name))
        let seed = UInt64(0x5D9_0000) &+ UInt64(Fixture.offers.firstIndex(of: name) ?? 0)
        var mutator = Mutator(seed: seed)
        var parsedCount = 0
        for index in 0..<Self.mutationsPerOffer {
            let mutated = mutator.mutate(original)
            if Self.check(mutated, host: host, label: "\(name) seed \(seed) mutation \(index)") { parsedCount += 1 }
        }
        // Many mutations land in free text (ids, ufrags, URIs) and still parse: the round trip is
        // exercised, not only the refusals.
        #expect(parsedCount > Self.mutationsPerOffer / 20, "only \(parsedCount) mutations parsed")
    }

    @Test(arguments: Fixture.offers)
    func everyTruncationIsRefusedOrRoundTrips(name: String) throws {
        let original = try Fixture.bytes(Fixture.offerFile(name))
        let host = Fixture.host(for: try Fixture.offer(name))
        for length in 0..<original.count {
            _ = Self.check(Array(original[..<length]), host: host, label: "\(name) truncated to \(length)")
        }
    }
}
