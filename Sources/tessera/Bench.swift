import Foundation

/// `tessera bench`: throughput of the wire formats, measured in this process.
func runBenchmarks(_ arguments: ArraySlice<String>) {
    fail("bench: not built yet")
}
