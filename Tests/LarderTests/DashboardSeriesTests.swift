import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Every query of the Grafana dashboard (its variables' too) and of the alert rules reads
/// series a real Larder exports, with the labels it names: a Larder with two pass-through
/// routes is scraped after hits, misses and an origin's 5xx, and each `larder_…` selector,
/// each of its label matchers and each `by (…)` label is looked for in that scrape.
@Suite(.timeLimit(.minutes(1))) struct DashboardSeriesTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// One series of a scrape: its name and labels.
    struct Series {
        let name: String
        let labels: [String: String]
    }

    static func parse(_ scrape: String) -> [Series] {
        scrape.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            guard let name = line.firstMatch(of: /^[a-zA-Z_:][a-zA-Z0-9_:]*/)?.output else { return nil }
            var labels: [String: String] = [:]
            if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") {
                for pair in line[open..<close].matches(of: /(\w+)="((?:[^"\\]|\\.)*)"/) { labels[String(pair.output.1)] = String(pair.output.2) }
            }
            return Series(name: String(name), labels: labels)
        }
    }

    /// What in `expression` no series of `scrape` bears out: a `larder_…` name with no series,
    /// a matcher's label no series of it has or a matcher no series meets (a `$variable`
    /// matching anything), a `by (…)` label missing from one of its selectors' series.
    static func problems(_ expression: String, in scrape: [Series]) -> [String] {
        var problems: [String] = []
        let selectors = expression.matches(of: /(larder_[a-z_]+)\s*(?:\{([^}]*)\})?/).map { (String($0.output.1), String($0.output.2 ?? "")) }
        for (name, matchers) in selectors {
            let named = scrape.filter { $0.name == name }
            guard !named.isEmpty else {
                problems.append("\(name): no such series")
                continue
            }
            let wanted = matchers.matches(of: /(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"/).map { (String($0.output.1), String($0.output.2), String($0.output.3)) }
            for (label, _, _) in wanted where !named.contains(where: { $0.labels[label] != nil }) {
                problems.append("\(name): no label \(label)")
            }
            let met = named.contains { series in
                wanted.allSatisfy { label, op, value in
                    let have = series.labels[label] ?? ""
                    let pattern = value.contains("$") ? ".*" : value
                    let matches = (try? Regex(pattern)).map { have.wholeMatch(of: $0) != nil } ?? false
                    switch op {
                    case "=": return have == value || value.contains("$")
                    case "!=": return have != value
                    case "=~": return matches
                    default: return !matches
                    }
                }
            }
            if !met { problems.append("\(name){\(matchers)}: no series meets it") }
        }
        for grouping in expression.matches(of: /by \(([^)]*)\)/) {
            for label in grouping.output.1.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                for (name, _) in selectors where !scrape.contains(where: { $0.name == name && $0.labels[label] != nil }) {
                    problems.append("\(name): no label \(label) to group by")
                }
            }
        }
        return problems
    }

    /// The dashboard's queries: each panel target's, and each variable's `label_values(metric, label)` as a grouping.
    static func dashboardExpressions() throws -> [String] {
        let data = try Data(contentsOf: root.appendingPathComponent("deploy/grafana/larder-dashboard.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        let targets = panels.flatMap { ($0["targets"] as? [[String: Any]]) ?? [] }.compactMap { $0["expr"] as? String }
        let variables = ((dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []).compactMap { $0["definition"] as? String }
        return targets + variables.map { definition in
            definition.replacing(/label_values\((\w+), (\w+)\)/) { "sum by (\($0.output.2)) (\($0.output.1))" }
        }
    }

    /// The alert rules' expressions (`expr:` on one line, or a folded block below it).
    static func alertExpressions() throws -> [String] {
        let lines = try String(contentsOf: root.appendingPathComponent("deploy/prometheus/larder-alerts.yaml"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        var expressions: [String] = []
        for (index, line) in lines.enumerated() {
            guard let value = line.firstMatch(of: /^(\s*)expr:\s*(.*)$/) else { continue }
            if value.output.2 != ">-" {
                expressions.append(String(value.output.2))
                continue
            }
            let indent = value.output.1.count
            let block = lines[(index + 1)...].prefix { $0.prefix { $0 == " " }.count > indent }
            expressions.append(block.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))
        }
        return expressions
    }

    @Test func everyDashboardAndAlertQueryReadsSeriesATwoRouteLarderExports() async throws {
        let origin = try TestOrigin { request in
            request.path.hasSuffix("/fail") ? HTTPResponse(status: 500, body: "down")
                : HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "fine")
        }
        let other = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "other") }
        try await withLarder({ $0.routes = [RouteMount("/api=\(origin.url)")!, RouteMount("/media=\(other.url)")!] }) { h in
            for target in ["/api/a", "/api/a", "/api/fail", "/media/b", "/media/b", "/weather?lat=1&lon=1", "/overview?lat=1&lon=1"] {
                _ = try await h.get(target)
            }
            let scrape = Self.parse(try await h.get("/metrics").text)
            // The scrape has both routes and both origins under the labels the queries group by.
            #expect(scrape.contains { $0.name == "larder_http_requests_total" && $0.labels == ["route": "/api", "status": "500"] })
            #expect(scrape.contains { $0.name == "larder_upstream_requests_total" && $0.labels["upstream"] == other.url })

            let dashboard = try Self.dashboardExpressions()
            let alerts = try Self.alertExpressions()
            #expect(dashboard.count >= 20 && alerts.count >= 5)
            // Per route and per origin: request rate, 5xx share, hit ratio, by the labels `/metrics` gives.
            #expect(dashboard.contains { $0.contains("sum by (route)") && $0.contains(#"status=~"5..""#) })
            #expect(dashboard.contains { $0.contains("sum by (route)") && $0.contains(#"cache="hit""#) })
            #expect(dashboard.contains { $0.contains("sum by (upstream)") && $0.contains("larder_upstream_requests_total") })
            for expression in dashboard + alerts {
                let problems = Self.problems(expression, in: scrape)
                #expect(problems.isEmpty, "\(expression): \(problems)")
            }
            // The check does find what a scrape lacks.
            #expect(!Self.problems(#"sum by (origin) (rate(larder_http_requests_total{route=~"$route"}[5m]))"#, in: scrape).isEmpty)
            #expect(!Self.problems(#"rate(larder_http_requests_total{cache="hit"}[5m])"#, in: scrape).isEmpty)
            #expect(!Self.problems(#"rate(larder_upstream_requests_total{outcome="teapot"}[5m])"#, in: scrape).isEmpty)
            #expect(!Self.problems("rate(larder_http_requests_totals[5m])", in: scrape).isEmpty)
        }
        await origin.stop()
        await other.stop()
    }
}
