import Cluster
import Foundation
import Testing
import Wire
import WireTesting

@Suite struct NodeRecordTests {
    static let record = NodeRecord(name: "a", url: "http://127.0.0.1:8081", draining: false, cores: 2, cpu: 0.31, spare: 1.29, maxRooms: 100,
                                   rooms: [NodeRecord.Room(name: "standup", participants: 4, viewers: 1), NodeRecord.Room(name: "x.y-z_1", participants: 0)])

    @Test func aRecordReadsBackAsWritten() throws {
        let back = try NodeRecord(json: Self.record.json)
        #expect(back == Self.record)
        #expect(back.participants == 4 && back.viewers == 1)
        let text = String(decoding: Self.record.json, as: UTF8.self)
        #expect(text.contains(#""participants":4"#) && text.contains(#""draining":false"#) && text.contains(#""version":1"#))
    }

    /// An edge host's viewers of rooms others own count among its viewers (not as rooms of its
    /// own); a record from before edge hosts reads as none.
    @Test func anEdgesViewersAreItsOwnNotItsRooms() throws {
        var edge = Self.record
        edge.edgeViewers = 50
        let back = try NodeRecord(json: edge.json)
        #expect(back.edgeViewers == 50 && back.viewers == 51 && back.rooms.count == 2)
        let older = #"{"name":"b","url":"http://h:1","draining":false,"cores":2,"cpu":0,"spare":1.6,"maxRooms":5,"rooms":[]}"#
        #expect(try NodeRecord(json: Array(older.utf8)).edgeViewers == 0)
        let bad = #"{"name":"b","url":"http://h:1","draining":false,"cores":2,"cpu":0,"spare":1.6,"maxRooms":5,"rooms":[],"edgeViewers":-1}"#
        #expect(throws: NodeRecord.ParseError.self) { try NodeRecord(json: Array(bad.utf8)) }
    }

    @Test func unknownKeysAreIgnoredAndBadFieldsNamed() throws {
        let newer = #"{"name":"b","url":"https://h:1","draining":true,"cores":4,"cpu":0,"spare":3.2,"maxRooms":5,"rooms":[],"gpu":1}"#
        #expect(try NodeRecord(json: Array(newer.utf8)).draining)
        let cases: [(String, String)] = [
            (#"{"url":"http://h:1","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "name"),
            (#"{"name":"a b","url":"http://h:1","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "name"),
            (#"{"name":"a","url":"ftp://h","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "url"),
            (#"{"name":"a","url":"http://h:1/path?q","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "url"),
            (#"{"name":"a","url":"http://h:1","draining":0,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "draining"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":0,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "cores"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":1.5,"cpu":0,"spare":0,"maxRooms":1,"rooms":[]}"#, "cores"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":1,"cpu":-1,"spare":0,"maxRooms":1,"rooms":[]}"#, "cpu"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":{}}"#, "rooms"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[{"name":"r","participants":-1,"viewers":0}]}"#, "rooms[0].participants"),
            (#"{"name":"a","url":"http://h:1","draining":false,"cores":1,"cpu":0,"spare":0,"maxRooms":1,"rooms":[{"name":"","participants":1,"viewers":0}]}"#, "rooms[0].name"),
        ]
        for (json, field) in cases {
            #expect(throws: NodeRecord.ParseError.self, "\(field)") { try NodeRecord(json: Array(json.utf8)) }
            do { _ = try NodeRecord(json: Array(json.utf8)) } catch { #expect(error.description.contains("`\(field)`"), "\(error)") }
        }
        #expect(throws: NodeRecord.ParseError.self) { try NodeRecord(json: Array("[1]".utf8)) }
    }

    @Test func truncatedAndMutatedRecordsNeverTrap() {
        let valid = Self.record.json
        for prefix in Mutator.truncations(of: valid) {
            #expect(throws: NodeRecord.ParseError.self) { try NodeRecord(json: prefix) }
        }
        var mutator = Mutator(seed: 5000)
        var read = 0
        for _ in 0..<20_000 {
            if let record = try? NodeRecord(json: mutator.mutate(valid)) {
                read += 1
                #expect(ClusterNames.isValid(record.name) && ClusterNames.isValidURL(record.url) && record.cores >= 1)
                #expect(record.rooms.allSatisfy { ClusterNames.isValid($0.name) && $0.participants >= 0 })
            }
        }
        #expect(read > 0, "some mutations leave a valid record (a digit changed)")
    }
}

@Suite struct PlacementTests {
    func node(_ name: String, spare: Double, draining: Bool = false, rooms: Int = 0, maxRooms: Int = 100) -> NodeRecord {
        NodeRecord(name: name, url: "http://127.0.0.1:808\(name.count)", draining: draining, cores: 2, cpu: 0, spare: spare, maxRooms: maxRooms,
                   rooms: (0..<rooms).map { NodeRecord.Room(name: "r\($0)", participants: 1) })
    }

    @Test func theNodeWithTheMostSpareCapacityIsChosen() {
        #expect(Placement.choose(among: [node("a", spare: 0.5), node("b", spare: 1.2), node("c", spare: 0.9)])?.name == "b")
        #expect(Placement.choose(among: [node("a", spare: -0.2), node("b", spare: -0.1)])?.name == "b", "over capacity: the least over")
    }

    @Test func tiesGoToTheFirstNameSoEveryHostChoosesAlike() {
        let nodes = [node("c", spare: 1), node("a", spare: 1), node("b", spare: 1)]
        #expect(Placement.choose(among: nodes)?.name == "a")
        #expect(Placement.choose(among: nodes.reversed())?.name == "a")
    }

    @Test func drainingAndFullNodesAreSkipped() {
        #expect(Placement.choose(among: [node("a", spare: 5, draining: true), node("b", spare: 0.1)])?.name == "b")
        #expect(Placement.choose(among: [node("a", spare: 5, rooms: 2, maxRooms: 2), node("b", spare: 0.1)])?.name == "b")
        #expect(Placement.choose(among: [node("a", spare: 5, draining: true)]) == nil)
        #expect(Placement.choose(among: []) == nil)
    }

    /// Rooms placed since a record was written count against it, so a burst of new rooms
    /// within a second spreads instead of all going to one node.
    @Test func pendingPlacementsCountAgainstANode() {
        let nodes = [node("a", spare: 1.0), node("b", spare: 0.9)]
        #expect(Placement.choose(among: nodes)?.name == "a")
        #expect(Placement.choose(among: nodes, pending: ["a": 1])?.name == "b", "1.0 - 0.25 < 0.9")
        #expect(Placement.choose(among: [node("a", spare: 9, rooms: 1, maxRooms: 2), node("b", spare: 0)], pending: ["a": 1])?.name == "b")
    }

    @Test func theCapacityModelUsesTheMeasuredFigures() {
        let model = CapacityModel()
        // A room of 4 video guests: 0.25 + 4 × 1.5 % = 0.31 cores (measured: 0.29 to 0.34).
        #expect(abs(model.modelledCores(rooms: 1, videoGuests: 4, otherGuests: 0) - 0.31) < 1e-9)
        // 500 audio guests in one room: 0.25 + 0.75 = 1.0 (measured 0.828).
        #expect(abs(model.modelledCores(rooms: 1, videoGuests: 0, otherGuests: 500) - 1.0) < 1e-9)
        // A 2-core host offers 1.6; the larger of measured and modelled counts.
        #expect(abs(model.spare(cores: 2, measuredCores: 0.1, modelledCores: 0.31) - 1.29) < 1e-9)
        #expect(abs(model.spare(cores: 2, measuredCores: 0.9, modelledCores: 0.31) - 0.7) < 1e-9)
    }
}
