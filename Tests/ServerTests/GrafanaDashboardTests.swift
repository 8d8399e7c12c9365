import Foundation
import Testing
@testable import Server

/// `deploy/grafana-dashboard.json` asks only for what a running host's `/metrics` gives: a
/// metric renamed or removed in `Metrics.swift` fails here, not as an empty panel in production.
@Suite struct GrafanaDashboardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The dashboard, parsed.
    private func dashboard() throws -> [String: Any] {
        let data = try Data(contentsOf: Self.root.appendingPathComponent("deploy/grafana-dashboard.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every PromQL text in the dashboard: each target's `expr`, and the variables' queries.
    private func queries(in value: Any) -> [String] {
        if let object = value as? [String: Any] {
            return object.flatMap { key, member -> [String] in
                if let text = member as? String, ["expr", "definition", "query"].contains(key) { return [text] }
                return queries(in: member)
            }
        }
        if let array = value as? [Any] { return array.flatMap(queries(in:)) }
        return []
    }

    /// The metric names a query uses: identifiers starting `tessera_` or `process_`.
    static func metricNames(in query: String) -> [(name: String, before: Substring)] {
        var names: [(String, Substring)] = []
        var index = query.startIndex
        while index < query.endIndex {
            let rest = query[index...]
            let startsName = rest.hasPrefix("tessera_") || rest.hasPrefix("process_")
            let atBoundary = index == query.startIndex || !Self.isIdentifier(query[query.index(before: index)])
            guard startsName, atBoundary else {
                index = query.index(after: index)
                continue
            }
            let end = rest.firstIndex { !Self.isIdentifier($0) } ?? query.endIndex
            names.append((String(query[index..<end]), query[..<index]))
            index = end
        }
        return names
    }

    private static func isIdentifier(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == ":")
    }

    /// The names and types (`# TYPE name kind`) a host's `/metrics` gives now.
    private func exposedMetrics() throws -> [String: String] {
        var config = HostConfig()
        config.http.listen = "127.0.0.1:0"
        config.media.listen = "127.0.0.1:0"
        let host = try ConferenceHost(config: config, logSink: HostLog.discard)
        defer { host.stop() }
        let response = try HTTPTestClient(port: host.http.address.port).send("GET", "/metrics")
        #expect(response.status == 200)
        var types: [String: String] = [:]
        for line in response.text.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            if parts.count == 4 { types[String(parts[2])] = String(parts[3]) }
        }
        return types
    }

    @Test func everyMetricTheDashboardQueriesIsOneTheHostExposes() throws {
        let used = queries(in: try dashboard()).flatMap { Self.metricNames(in: $0) }
        #expect(used.count > 20, "the dashboard's queries were found")
        let exposed = try exposedMetrics()
        #expect(!exposed.isEmpty)
        let missing = Set(used.map(\.name)).subtracting(exposed.keys).sorted()
        #expect(missing.isEmpty, "the dashboard queries metrics /metrics does not give: \(missing)")
        // A counter only makes sense as a rate or an increase.
        for (name, before) in used where exposed[name] == "counter" {
            #expect(before.hasSuffix("rate(") || before.hasSuffix("increase("), "\(name) is a counter: take its rate()")
        }
    }

    /// Every metric the host exposes is on the dashboard, so a new one is not forgotten there;
    /// but two that repeat another's series: the unroutable count is also
    /// `tessera_datagrams_dropped_total{reason="unroutable"}`, and the lower encoding's receivers
    /// `tessera_video_receivers{encoding="low"}`.
    @Test func everyMetricTheHostExposesIsOnTheDashboard() throws {
        let used = Set(queries(in: try dashboard()).flatMap { Self.metricNames(in: $0).map(\.name) })
        let repeats: Set = ["tessera_datagrams_unroutable_total", "tessera_video_low_receivers"]
        let left = Set(try exposedMetrics().keys).subtracting(used).subtracting(repeats).sorted()
        #expect(left.isEmpty, "on /metrics but on no panel: \(left)")
    }

    /// What Grafana needs to import it: a schema version, one Prometheus data source chosen by
    /// the `DS_PROMETHEUS` variable on every panel and query, distinct panel ids.
    @Test func theDashboardIsImportable() throws {
        let dashboard = try dashboard()
        #expect((dashboard["schemaVersion"] as? Int).map { $0 >= 36 } == true)
        #expect(dashboard["uid"] as? String == "tessera-host")
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        #expect(variables.contains { $0["name"] as? String == "DS_PROMETHEUS" && $0["type"] as? String == "datasource" && $0["query"] as? String == "prometheus" })
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let ids = panels.compactMap { $0["id"] as? Int }
        #expect(ids.count == panels.count && Set(ids).count == ids.count)
        for panel in panels where panel["type"] as? String != "row" {
            let title = panel["title"] as? String ?? "?"
            #expect((panel["datasource"] as? [String: String])?["uid"] == "${DS_PROMETHEUS}", "\(title)")
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(!targets.isEmpty, "\(title) has a query")
            for target in targets {
                #expect((target["datasource"] as? [String: String])?["uid"] == "${DS_PROMETHEUS}", "\(title)")
                #expect((target["expr"] as? String)?.contains(#"instance=~"$instance""#) == true, "\(title) follows the host picked")
            }
            let position = try #require(panel["gridPos"] as? [String: Int], "\(title)")
            #expect((position["x"] ?? 0) + (position["w"] ?? 0) <= 24, "\(title) fits the grid")
        }
    }

    @Test func metricNamesAreFoundInQueries() {
        let names = Self.metricNames(in: #"sum by (reason) (rate(tessera_datagrams_dropped_total{instance=~"$instance"}[$__rate_interval])) / process_max_fds"#)
        #expect(names.map(\.name) == ["tessera_datagrams_dropped_total", "process_max_fds"])
        #expect(names.first?.before.hasSuffix("rate(") == true)
        #expect(Self.metricNames(in: "my_tessera_rooms + label_values(tessera_rooms, instance)").map(\.name) == ["tessera_rooms"])
    }
}
