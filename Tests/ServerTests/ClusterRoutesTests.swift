import Foundation
import Testing
@testable import Server

/// The pure parts of the cluster's routes; the routes themselves run against redis-server and
/// three hosts in Interop/cluster_check.sh.
@Suite struct ClusterRoutesTests {
    /// A redirect repeats the query: each name and value percent-encoded again (they come
    /// decoded from libmicrohttpd), in a stable order.
    @Test func aRedirectsQueryIsRebuiltEncoded() {
        #expect(HostAPI.queryString([:]) == "")
        #expect(HostAPI.queryString(["identity": "bob"]) == "?identity=bob")
        #expect(HostAPI.queryString(["token": "a.b-c_d~e", "identity": "bob", "name": "Bob Ø&=?/#"])
                == "?identity=bob&name=Bob%20%C3%98%26%3D%3F%2F%23&token=a.b-c_d~e")
    }

    @Test func drainingStartsOnceAndStays() {
        let drain = DrainState()
        #expect(!drain.isDraining)
        #expect(drain.start())
        #expect(!drain.start(), "the second call is not the first")
        #expect(drain.isDraining)
    }
}
