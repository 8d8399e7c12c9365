// libFuzzer target: the strict JSON reader (RFC 8259) behind the config file and the API's JSON
// bodies, and the shape check run on what it reads. Compiled with Wire.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONValue(parsing: bytes) else { return 0 }
    let shape: JSONShape = .object([
        "http": .object(["listen": .string, "maxBodyBytes": .integer]),
        "hear": .dictionary(.boolean),
        "positions": .array(.object(["rect": .object(["x": .number]), "contentMode": .string])),
        "auth": .object(["secret": .nullable(.string)]),
    ])
    _ = shape.firstProblem(in: value)
    return 0
}
