// The libFuzzer targets whose parsers sit in the host's upper layers (the config file, join
// tokens, the API's JSON bodies), built as one SwiftPM product with every module instrumented
// (`TESSERA_FUZZ=1 swift build --product TesseraFuzz -Xswiftc -sanitize=fuzzer,address`, as
// scripts/fuzz.sh does). TESSERA_FUZZ_TARGET picks the target; each keeps its own corpus.
import Foundation

nonisolated(unsafe) let target: ([UInt8]) -> Void = {
    switch ProcessInfo.processInfo.environment["TESSERA_FUZZ_TARGET"] {
    case "ConfigFuzz": ConfigFuzz.run
    case "TokenFuzz": TokenFuzz.run
    case "BodiesFuzz": BodiesFuzz.run
    default: fatalError("TESSERA_FUZZ_TARGET must be ConfigFuzz, TokenFuzz or BodiesFuzz")
    }
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    target(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

// SwiftPM links an executable's entry point as `main` under the name TesseraFuzz_main, so
// libFuzzer's own main is not linked: this hands the command line to its driver.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt) -> CInt

@_cdecl("TesseraFuzz_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    // Globals built once on first use (the JSON shapes, the decoders' tables) would otherwise be
    // reported as leaks of the first input that touched them.
    for first: UInt8 in 0...3 {
        for warmUp in ["", "{}", #"{"preset": "grid"}"#, "a.b.c"] { target([first] + Array(warmUp.utf8)) }
    }
    var argc = argc, argv = argv
    return runFuzzerDriver(&argc, &argv, fuzz)
}
