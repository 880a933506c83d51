import Synchronization
import Foundation
import HTTPCore
import HTTPServer
import Locking
import Testing
import TestSupport
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Settings

/// `/metrics` stays as large as the configuration serving now, whatever clients and reloads
/// do: a route, aggregate or origin a reload removes leaves it, reloads that come and go do
/// not pile up series, and no path a client sends becomes a label.
@Suite(.timeLimit(.minutes(3))) struct SeriesBoundsTests {
    /// Each series of `/metrics` by name and labels, its value left out.
    static func series(_ metrics: String) -> Set<String> {
        Set(metrics.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0[..<($0.lastIndex(of: " ") ?? $0.endIndex)]) })
    }

    @Test func aRemovedAggregateAndItsPartsLeaveAndComeBackWithTheirSeries() async throws {
        let origin = try AggregateTests.origin()
        let next = Locked<ServeSettings?>(nil)
        try await withLarder(reload: { next.withLock { $0! } }, { AggregateTests.dashboard(&$0, origin: origin.url) }) { h in
            #expect(try await h.get(AggregateTests.target).status == 200)
            var metrics = try await h.get("/metrics").text
            for line in [#"larder_http_requests_total{route="/dash",status="200"} 1"#, #"route="/rates""#,
                         #"larder_aggregate_parts_total{aggregate="/dash",part="rates",result="miss"} 1"#, "upstream=\"\(origin.url)\""] {
                #expect(metrics.contains(line), "\(line)\n\(metrics)")
            }
            var removed = h.service.settings
            removed.aggregates = []
            removed.routes = []
            next.withLock { $0 = removed }
            #expect(await h.service.reload() == .reloaded(restartNeeded: []))
            // The aggregate's path is the router's (it was there at start): it answers 404 now, counted as `other`.
            #expect(try await h.get(AggregateTests.target).status == 404)
            metrics = try await h.get("/metrics").text
            for gone in [#"route="/dash""#, #"aggregate="/dash""#, #"route="/rates""#, "upstream=\"\(origin.url)\""] {
                #expect(!metrics.contains(gone), "\(gone)\n\(metrics)")
            }
            #expect(metrics.contains(#"larder_http_requests_total{route="other",status="404"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"aggregate="/overview""#) && metrics.contains(#"upstream="weather""#), "\(metrics)")

            // Back again: its series come back, from zero (a new series to Prometheus) or where they were.
            var back = h.service.settings
            AggregateTests.dashboard(&back, origin: origin.url)
            next.withLock { $0 = back }
            #expect(await h.service.reload() == .reloaded(restartNeeded: []))
            metrics = try await h.get("/metrics").text
            for line in [#"larder_http_request_duration_seconds_count{route="/dash",cache="stale"} 0"#,
                         #"larder_aggregate_parts_total{aggregate="/dash",part="rates",result="miss"} 0"#,
                         "larder_upstream_requests_total{upstream=\"\(origin.url)\",outcome=\"ok\"} 0"] {
                #expect(metrics.contains(line), "\(line)\n\(metrics)")
            }
            #expect(try await h.get(AggregateTests.target).status == 200)
        }
        await origin.stop()
    }

    /// 1,000 reloads, each with a route, an origin and an aggregate of its own and one request
    /// on that route: `/metrics` ends the size it was after the first, with the last route's
    /// one request counted once (slots taken again are emptied).
    @Test func aThousandReloadsOfComingAndGoingRoutesKeepMetricsBounded() async throws {
        let origin = try AggregateTests.origin()
        let next = Locked<ServeSettings?>(nil)
        // An origin port nobody listens on: each route's request is a quick 502, counted against that origin.
        let closed = try await Self.closedPort()
        try await withLarder(reload: { next.withLock { $0! } }, { $0.routes = [RouteMount("/keep=\(origin.url)")!] }) { h in
            func configure(_ generation: Int) async throws {
                var settings = h.service.settings
                settings.routes = [RouteMount("/keep=\(origin.url)")!, RouteMount("/r\(generation)=http://127.0.0.\(1 + generation % 200):\(closed)")!]
                settings.aggregates = [AggregateDeclaration(path: "/a\(generation)", parts: [.init(name: "p\(generation)", target: PartTarget("/keep/x")!)])]
                next.withLock { $0 = settings }
                #expect(await h.service.reload() == .reloaded(restartNeeded: []))
                #expect(try await h.get("/r\(generation)/x").status == 502)
            }
            try await configure(0)
            _ = try await h.get("/metrics")  // counted after it answers: the next shows its own series
            let first = Self.series(try await h.get("/metrics").text)
            for generation in 1..<1000 { try await configure(generation) }
            let metrics = try await h.get("/metrics").text
            let last = Self.series(metrics)
            #expect(last.count == first.count, "new: \(last.subtracting(first).sorted())\ngone: \(first.subtracting(last).sorted())")
            #expect(metrics.contains(#"larder_http_requests_total{route="/r999",status="502"} 1"#), "\(metrics)")
            #expect(metrics.contains("larder_upstream_requests_total{upstream=\"http://127.0.0.200:\(closed)\",outcome=\"error\"} 1"), "\(metrics)")
            #expect(!metrics.contains(#"route="/r998""#) && !metrics.contains(#"aggregate="/a998""#) && !metrics.contains("127.0.0.199:"))
        }
        await origin.stop()
    }

    /// Thousands of distinct paths, queries and unknown paths add no series: a label is a route as configured, never a path.
    @Test func thousandsOfDistinctPathsAddNoSeries() async throws {
        let origin = try AggregateTests.origin()
        try await withLarder({ $0.routes = [RouteMount("/api=\(origin.url)")!] }) { h in
            func kinds(_ n: Int) -> [String] { ["/api/\(n)", "/api/items?page=\(n)", "/nowhere/\(n)", "/api/\(n)"] }
            for target in kinds(0) + ["/metrics"] { _ = try await h.get(target) }
            let first = Self.series(try await h.get("/metrics").text)
            for n in 1...700 {
                for target in kinds(n) { _ = try await h.get(target) }
            }
            let metrics = try await h.get("/metrics").text
            let last = Self.series(metrics)
            #expect(last == first, "new: \(last.subtracting(first).sorted())\ngone: \(first.subtracting(last).sorted())")
            #expect(metrics.contains(#"larder_http_requests_total{route="/api",status="200"} 2103"#), "\(metrics)")
            #expect(metrics.contains(#"larder_http_requests_total{route="other",status="404"} 701"#), "\(metrics)")
        }
        await origin.stop()
    }

    /// A port on loopback that refuses connections: bound, then closed.
    static func closedPort() async throws -> Int {
        let server = HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0)) { _ in .now(HTTPResponse(status: 200)) }
        try server.start()
        let port = server.port!
        await server.shutdown()
        return port
    }
}
