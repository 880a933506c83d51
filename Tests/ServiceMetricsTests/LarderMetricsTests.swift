import Caching
import MetricsTestKit
import ServiceMetrics
import Testing

/// Each test hands its metrics a factory of its own (swift-metrics' `TestMetrics`): the
/// process's one `MetricsSystem.bootstrap` is the executable's, never a test's.
@Suite struct LarderMetricsTests {
    /// The hit path's families, after the facade's series are brought up to date.
    private static func hitPath(_ metrics: LarderMetrics, shared: SharedTierReading? = nil) -> String {
        metrics.update(memory: MemoryTier(budget: 1 << 20), disk: nil, shared: shared, openConnections: 0)
        return metrics.renderHitPath()
    }

    /// A miss counts as a miss at each tier it passed; the shared tier is passed only when there is one.
    @Test func aMissCountsAtEveryTierItPassed() throws {
        let backend = TestMetrics()
        let metrics = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, version: "9.9.9", factory: backend)
        metrics.lookup(CacheStatus(hit: true))
        metrics.lookup(CacheStatus(forward: .miss))
        let text = Self.hitPath(metrics)
        #expect(text.contains(#"larder_cache_lookups_total{tier="memory",result="hit"} 1"#))
        #expect(text.contains(#"larder_cache_lookups_total{tier="memory",result="miss"} 1"#))
        #expect(text.contains(#"larder_cache_lookups_total{tier="disk",result="miss"} 1"#))
        #expect(!text.contains(#"larder_cache_lookups_total{tier="redis""#))
        #expect(try backend.expectGauge("larder_build_info", [("version", "9.9.9")]).lastValue == 1)
    }

    /// What the composition reads of Redis is what the backend is told of it.
    @Test func theSharedTierIsShownAsRead() throws {
        let backend = TestMetrics()
        let metrics = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, sharedTier: true, version: "9.9.9", factory: backend)
        metrics.lookup(CacheStatus(forward: .miss))
        let text = Self.hitPath(metrics, shared: SharedTierReading(stores: 3, errors: 1, waits: 0, corruptions: 0, isUp: false))
        #expect(text.contains(#"larder_cache_lookups_total{tier="redis",result="miss"} 1"#))
        #expect(try backend.expectCounter("larder_cache_stores_total", [("tier", "redis")]).totalValue == 3)
        #expect(try backend.expectCounter("larder_redis_errors_total").totalValue == 1)
        #expect(try backend.expectGauge("larder_redis_up").lastValue == 0)
        // A running total read again counts only what it grew by.
        _ = Self.hitPath(metrics, shared: SharedTierReading(stores: 5, errors: 1, waits: 0, corruptions: 0, isUp: true))
        #expect(try backend.expectCounter("larder_cache_stores_total", [("tier", "redis")]).totalValue == 5)
        #expect(try backend.expectGauge("larder_redis_up").lastValue == 1)
    }

    /// An upstream's series exist from `configure` on, at zero, and leave the backend when no
    /// route has the upstream any more; what is reported of an unknown upstream is not counted.
    @Test func upstreamSeriesFollowTheConfiguredUpstreams() throws {
        let backend = TestMetrics()
        let metrics = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, version: "9.9.9", factory: backend)
        metrics.configure(upstreams: ["weather"], aggregateParts: [])
        #expect(try backend.expectCounter("larder_upstream_requests_total", [("upstream", "weather"), ("outcome", "timeout")]).totalValue == 0)
        metrics.upstream("weather", outcome: "ok", duration: .milliseconds(30))
        metrics.upstream("gone", outcome: "ok", duration: .milliseconds(30))
        #expect(try backend.expectCounter("larder_upstream_requests_total", [("upstream", "weather"), ("outcome", "ok")]).totalValue == 1)
        #expect(try backend.expectTimer("larder_upstream_request_duration_seconds", [("upstream", "weather")]).values == [30_000_000])
        #expect(backend.counters(label: "larder_upstream_requests_total", dimensions: [("upstream", "gone")]).isEmpty)
        metrics.configure(upstreams: [], aggregateParts: [])
        #expect(backend.counters(label: "larder_upstream_requests_total").isEmpty)
        #expect(backend.timers(label: "larder_upstream_request_duration_seconds").isEmpty)
    }
}
