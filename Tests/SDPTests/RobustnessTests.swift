import SDP
import Testing
import WireTesting

/// Seeded mutations and truncations of each real offer: parse and negotiate never trap, and
/// whatever parses serializes to text that parses back to the same description (and so does the
/// answer to it).
@Suite struct RobustnessTests {
    /// Mutations per offer: 100,000 in all, more for the small offers, whose parse is cheaper,
    /// so that the suite stays within its time budget in debug builds.
    static let mutations: [String: Int] = [
        "gstreamer": 50_000, "aiortc": 20_000, "firefox": 20_000, "chromium": 6_000, "chromium-offer-screenshare": 4_000,
    ]

    /// Checks one input; returns whether it parsed.
    static func check(_ bytes: [UInt8], host: HostParameters, label: @autoclosure () -> String) -> Bool {
        let parsed: SessionDescription
        do throws(SDPError) {
            parsed = try SessionDescription(parsing: bytes)
        } catch {
            return false
        }
        do throws(SDPError) {
            let again = try SessionDescription(parsing: parsed.serializedBytes())
            if again != parsed { Issue.record("re-parse differs: \(label())") }
        } catch {
            Issue.record("serialized description does not parse (\(error)): \(label())")
        }
        if let session = try? negotiate(offer: parsed, host: host),
            (try? SessionDescription(parsing: session.answer.serializedBytes())) != session.answer {
            Issue.record("answer does not re-parse equal: \(label())")
        }
        return true
    }

    @Test func mutationBudgetIsAtLeastOneHundredThousand() {
        #expect(Self.mutations.values.reduce(0, +) >= 100_000)
        #expect(Set(Self.mutations.keys) == Set(Fixture.offers))
    }

    @Test(arguments: Fixture.offers)
    func seededMutationsNeverTrapAndRoundTrip(name: String) throws {
        let original = try Fixture.bytes(Fixture.offerFile(name))
        let host = Fixture.host(for: try Fixture.offer(name))
        let seed = UInt64(0x5D9_0000) &+ UInt64(Fixture.offers.firstIndex(of: name) ?? 0)
        let count = Self.mutations[name] ?? 0
        var mutator = Mutator(seed: seed)
        var parsedCount = 0
        for index in 0..<count {
            let mutated = mutator.mutate(original)
            if Self.check(mutated, host: host, label: "\(name) seed \(seed) mutation \(index)") { parsedCount += 1 }
        }
        // Mutations in free text (ids, ufrags, URIs) still parse: the round trip is exercised,
        // not only the refusals.
        #expect(parsedCount > count / 20, "only \(parsedCount) of \(count) mutations parsed")
    }

    /// Every prefix of the small offers (WireTesting's truncations); for the two Chromium offers
    /// (6 and 10 KiB, whose every prefix would cost 70 MB of parsing in debug builds) every eleventh
    /// prefix and every prefix within two bytes of a line end.
    static func truncations(of bytes: [UInt8]) -> [[UInt8]] {
        if bytes.count <= 4096 { return Mutator.truncations(of: bytes) }
        var lengths = Set(stride(from: 0, to: bytes.count, by: 11))
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            for length in index - 2...index + 2 where length >= 0 && length < bytes.count { lengths.insert(length) }
        }
        return lengths.sorted().map { Array(bytes[..<$0]) }
    }

    @Test(arguments: Fixture.offers)
    func truncationsAreRefusedOrRoundTrip(name: String) throws {
        let original = try Fixture.bytes(Fixture.offerFile(name))
        let host = Fixture.host(for: try Fixture.offer(name))
        var parsedCount = 0
        let prefixes = Self.truncations(of: original)
        for prefix in prefixes where Self.check(prefix, host: host, label: "\(name) truncated to \(prefix.count)") {
            parsedCount += 1
        }
        #expect(parsedCount > 0 && parsedCount < prefixes.count)
    }
}
