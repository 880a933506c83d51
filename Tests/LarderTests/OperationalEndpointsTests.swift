import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Observability
@testable import AccessLogging
@testable import Routes

/// The operational endpoints end to end: health, readiness with the cache directory gone or
/// unwritable, metrics and the OpenAPI document.
extension ServiceEndToEndTests {
    @Test func healthEndpoints() async throws {
        try await withLarder { h in
            let live = try await h.get("/livez")
            #expect(live.status == 200 && live.header("cache-control") == "no-store")
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            #expect(ready.header("content-type") == "application/health+json")
            let body = try json(ready)
            #expect(body["status"] as? String == "pass")
            let checks = try #require(body["checks"] as? [String: Any])
            #expect(Set(checks.keys) == ["cache:directory", "cache:index", "upstream:client", "upstream:weather", "upstream:balance"])
            let r10 = try await h.get("/healthz")
            #expect(r10.status == 200)
        }
    }

    @Test func unwritableCacheDirectoryMakesReadinessFail() async throws {
        try await withLarder { h in
            // A file where the directory belongs cannot be made a directory again.
            try FileManager.default.removeItem(atPath: h.cacheDirectory)
            try Data("not a directory".utf8).write(to: URL(fileURLWithPath: h.cacheDirectory))
            let ready = try await h.get("/readyz")
            #expect(ready.status == 503)
            #expect(try json(ready)["status"] as? String == "fail")
        }
    }

    @Test func aDeletedCacheDirectoryIsMadeAgainAndUsed() async throws {
        try await withLarder { h in
            try FileManager.default.removeItem(atPath: h.cacheDirectory)
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
            #expect(FileManager.default.fileExists(atPath: h.cacheDirectory + "/tmp"))
            #expect(try await h.get("/weather?lat=1&lon=2").status == 200)
            await h.service.waitForDiskWrites()
            let folders = try FileManager.default.contentsOfDirectory(atPath: h.cacheDirectory).filter { $0 != "tmp" }
            #expect(folders.count == 1)
        }
    }

    @Test func metricsCarryTheSeries() async throws {
        try await withLarder { h in
            _ = try await h.get("/weather?lat=13&lon=13")
            _ = try await h.get("/weather?lat=13&lon=13")
            // A request counts under the route that answered it, found from its normalised
            // path; one no route answers counts under `other`.
            #expect(try await h.get("/x/../weather?lat=13&lon=13").status == 200)
            #expect(try await h.get("/nowhere").status == 404)
            let metrics = try await h.get("/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
            for line in ["larder_http_requests_total{route=\"/weather\",status=\"200\"} 3",
                         "larder_http_requests_total{route=\"other\",status=\"404\"} 1",
                         // The miss looked in memory and on disk before the upstream; the hits only in memory.
                         "larder_cache_lookups_total{tier=\"memory\",result=\"hit\"} 2",
                         "larder_cache_lookups_total{tier=\"memory\",result=\"miss\"} 1",
                         "larder_cache_lookups_total{tier=\"disk\",result=\"miss\"} 1",
                         "larder_cache_lookups_total{tier=\"upstream\",result=\"miss\"} 1",
                         "larder_upstream_requests_total{upstream=\"weather\",outcome=\"ok\"} 1",
                         "larder_http_request_duration_seconds_count{route=\"/weather\",cache=\"hit\"} 2",
                         "larder_http_request_duration_seconds_count{route=\"/weather\",cache=\"miss\"} 1",
                         "larder_upstream_request_duration_seconds_count{upstream=\"weather\"} 1",
                         "larder_cache_limit_bytes{tier=\"memory\"} 67108864.0",
                         "larder_build_info{version=\"0.1.0\"} 1.0",
                         "larder_cache_entries{tier=\"memory\"} 1.0"] {
                #expect(metrics.text.contains(line), "\(line)")
            }
            // Every family says what it is; nothing is exported before it has counted something,
            // but the counters an alert reads, which are there at 0 from the start.
            for family in MetricFamily.allCases where metrics.text.contains("# TYPE \(family.name) ") {
                #expect(metrics.text.contains("# HELP \(family.name) \(family.help)\n"), "\(family.name)")
            }
            #expect(!metrics.text.contains("status=\"504\""))
            #expect(!metrics.text.contains("tier=\"disk\",result=\"hit\""))
            for zero in ["larder_upstream_backoffs_total{upstream=\"weather\"} 0", "larder_disk_write_errors_total 0",
                         "larder_cache_admission_rejections_total{tier=\"memory\"} 0",
                         "larder_upstream_requests_total{upstream=\"weather\",outcome=\"timeout\"} 0",
                         "larder_http_request_duration_seconds_count{route=\"/weather\",cache=\"stale\"} 0"] {
                #expect(metrics.text.contains(zero), "\(zero)")
            }
            // At least this scrape's own connection; an earlier one may not have been closed yet.
            let open = metrics.text.firstMatch(of: /larder_open_connections (\d+)/).flatMap { Int($0.1) }
            #expect((open ?? 0) >= 1)
            for series in ["larder_cache_bytes", "larder_upstream_request_duration_seconds_bucket",
                           "larder_disk_write_queue_entries ", "larder_disk_write_queue_bytes "] {
                #expect(metrics.text.contains(series), "\(series)")
            }
        }
    }

    @Test func openAPIDocumentIsServedAsCommitted() async throws {
        try await withLarder { h in
            let served = try await h.get("/openapi.yaml")
            #expect(served.status == 200)
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let committed = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
            #expect(served.text == committed)
        }
    }
}
