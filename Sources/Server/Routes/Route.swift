/// One entry of the route table.
struct Route: Sendable {
    /// The path's parameters: `{room}`, `{id}`, and a subscription's `{publisher}` and `{source}`.
    struct Parameters {
        var room = ""
        var id = ""
        var publisher = ""
        var source = ""
    }
    let method: String
    let pattern: [String]
    let grant: @Sendable (Parameters, HTTPRequest) -> HostAPI.Grant
    let handle: @Sendable (HostAPI, HTTPRequest, Parameters) -> HTTPResponse

    init(_ method: String, _ pattern: String, grant: @escaping @Sendable (Parameters, HTTPRequest) -> HostAPI.Grant,
         handle: @escaping @Sendable (HostAPI, HTTPRequest, Parameters) -> HTTPResponse) {
        self.method = method
        self.pattern = pattern.split(separator: "/").map(String.init)
        self.grant = grant
        self.handle = handle
    }

    /// The parameters when `segments` fit the pattern.
    func match(_ segments: [String]) -> Parameters? {
        guard segments.count == pattern.count else { return nil }
        var parameters = Parameters()
        for (segment, expected) in zip(segments, pattern) {
            switch expected {
            case "{room}": parameters.room = segment
            case "{id}": parameters.id = segment
            case "{publisher}": parameters.publisher = segment
            case "{source}": parameters.source = segment
            default: guard segment == expected else { return nil }
            }
        }
        return parameters
    }
}
