import Logging
import Synchronization
import Foundation
import HTTPCore
import HTTPServer
import Locking
import Testing
import TestSupport
@testable import Larder
@testable @_spi(Bench) import Observability
@testable @_spi(Bench) import AccessLogging
@testable import Settings
import CacheVocabulary

/// Each pass-through route and aggregate counts under its own label, the route as configured
/// (never a raw path), in `/metrics` and in the access line; a route a reload adds gets its
/// own series too.
@Suite(.timeLimit(.minutes(1))) struct RouteSeriesTests {
    static func origin(_ body: String) throws -> TestOrigin {
        try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: body) }
    }

    @Test func twoRoutesCountApartAndAReloadedRouteGetsItsOwnSeries() async throws {
        let (a, b, c) = (try Self.origin("from A"), try Self.origin("from B"), try Self.origin("from C"))
        let next = Locked<ServeSettings?>(nil)
        let log = RecordedLog()
        try await withLarder(reload: { next.withLock { $0! } }, logger: log.logger(level: .info), { settings in
            settings.routes = [RouteMount("/api=\(a.url)")!, RouteMount("/media=\(b.url)")!]
        }) { h in
            for target in ["/api/x", "/api/y?q=1", "/api/x"] { #expect(try await h.get(target).text == "from A") }
            #expect(try await h.get("/media/1.png").text == "from B")
            #expect(try await h.get("/nowhere").status == 404)
            var metrics = try await h.get("/metrics").text
            for line in [#"larder_http_requests_total{route="/api",status="200"} 3"#,
                         #"larder_http_requests_total{route="/media",status="200"} 1"#,
                         #"larder_http_requests_total{route="other",status="404"} 1"#,
                         #"larder_http_request_duration_seconds_count{route="/api",cache="hit"} 1"#,
                         #"larder_http_request_duration_seconds_count{route="/api",cache="miss"} 2"#,
                         // A route's stale series is there from the start, for the alert on it.
                         #"larder_http_request_duration_seconds_count{route="/media",cache="stale"} 0"#] {
                #expect(metrics.contains(line), "\(line)\n\(metrics)")
            }
            // Each origin its own upstream series, named `scheme://host:port`.
            for line in ["larder_upstream_requests_total{upstream=\"\(a.url)\",outcome=\"ok\"} 2",
                         "larder_upstream_requests_total{upstream=\"\(b.url)\",outcome=\"ok\"} 1",
                         "larder_upstream_request_duration_seconds_count{upstream=\"\(b.url)\"} 1",
                         "larder_upstream_backoffs_total{upstream=\"\(a.url)\"} 0"] {
                #expect(metrics.contains(line), "\(line)\n\(metrics)")
            }
            #expect(!metrics.contains(#"upstream="origin""#), "\(metrics)")
            #expect(!metrics.contains(#"route="pass-through""#) && !metrics.contains("route=\"/api/x\""), "\(metrics)")

            var changed = h.service.settings
            changed.routes = [RouteMount("/api=\(a.url)")!, RouteMount("/files=\(c.url)")!]
            next.withLock { $0 = changed }
            #expect(await h.service.reload() == .reloaded(restartNeeded: []))
            #expect(try await h.get("/files/z").text == "from C")
            #expect(try await h.get("/api/z").text == "from A")
            metrics = try await h.get("/metrics").text
            for line in [#"larder_http_requests_total{route="/files",status="200"} 1"#,
                         #"larder_http_requests_total{route="/api",status="200"} 4"#,
                         "larder_upstream_requests_total{upstream=\"\(c.url)\",outcome=\"ok\"} 1",
                         "larder_upstream_requests_total{upstream=\"\(a.url)\",outcome=\"ok\"} 3"] {
                #expect(metrics.contains(line), "\(line)\n\(metrics)")
            }
            // The removed route and its origin leave `/metrics`, as if never configured.
            #expect(!metrics.contains(#"route="/media""#) && !metrics.contains("upstream=\"\(b.url)\""), "\(metrics)")
            #expect(!metrics.contains(#"route="other",status="200""#), "\(metrics)")
        }
        let routes = log.all.filter { $0.metadata["log"] == "access" }
            .map { "\($0.message) \($0.metadata["route"] ?? "-") \($0.metadata["origin"] ?? "-")" }
        for line in ["GET /api/y?q=1 200 /api \(a.url)", "GET /media/1.png 200 /media \(b.url)", "GET /nowhere 404 other -",
                     "GET /files/z 200 /files \(c.url)", "GET /metrics 200 /metrics -"] {
            #expect(routes.contains(line), "\(line)\n\(routes)")
        }
        for origin in [a, b, c] { await origin.stop() }
    }

    /// An origin's name keeps no credentials, path or default-port ambiguity.
    @Test func originNamesAreSchemeHostAndPort() {
        #expect(OriginName.of("http://user:secret@API.example:8000/base") == "http://api.example:8000")
        #expect(OriginName.of("HTTPS://api.example") == "https://api.example:443")
        #expect(OriginName.of("http://api.example/v1") == "http://api.example:80")
        #expect(OriginName.of("http://[::1]:9000/x") == "http://[::1]:9000")
        #expect(OriginName.of("http://[::1]") == "http://[::1]:80")
    }

    /// Labels configuration gives are bounded by the labels serving at once: past the limit a
    /// route counts as `pass-through`; a label let go keeps its slot until another needs it,
    /// then its slot is emptied for the next (the one let go longest ago first).
    @Test func labelsAreBoundedByThoseServingAndSlotsLetGoAreEmptiedForTheNext() {
        let series = RequestSeries(routes: ["/weather"])
        let first = series.configure(["/r0", "/weather"])
        #expect(first["/r0"] != first["/weather"] && first["/r0"] != .passThrough)
        let full = series.configure((0..<RequestSeries.addedLabelLimit).map { "/r\($0)" } + ["/one-too-many"])
        #expect(full["/r0"] == first["/r0"] && full["/one-too-many"] == .passThrough)
        #expect((0..<RequestSeries.addedLabelLimit).allSatisfy { full["/r\($0)"] != .passThrough })
        series.record(full["/r0"]!, status: 200, result: .hit, nanoseconds: 1000)
        series.record(full["/r1"]!, status: 200, result: .hit, nanoseconds: 1000)
        #expect(series.render().contains(#"larder_http_requests_total{route="/r0",status="200"} 1"#))
        // `/r0` and `/r1` are let go; `/r0` is back before its slot is taken, its count kept; `/new` takes `/r1`'s, emptied.
        _ = series.configure((2..<RequestSeries.addedLabelLimit).map { "/r\($0)" })
        let back = series.configure((0..<RequestSeries.addedLabelLimit).filter { $0 != 1 }.map { "/r\($0)" } + ["/new"])
        #expect(back["/r0"] == first["/r0"] && back["/new"] == full["/r1"])
        #expect(series.label(back["/new"]!) == "/new")
        let text = series.render()
        #expect(text.contains(#"larder_http_requests_total{route="/r0",status="200"} 1"#), "\(text)")
        #expect(!text.contains(#"route="/r1""#) && !text.contains(#"route="/new",status"#), "\(text)")
        #expect(!text.contains(#"route="/new",cache="hit""#), "\(text)")
        #expect(text.contains(#"larder_http_request_duration_seconds_count{route="/new",cache="stale"} 0"#), "\(text)")
    }
}
