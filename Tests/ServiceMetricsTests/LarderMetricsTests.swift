import Caching
import ServiceMetrics
import Testing

@Suite struct LarderMetricsTests {
    private static func exposition(_ metrics: LarderMetrics, shared: SharedTierReading? = nil) -> String {
        String(decoding: metrics.render(memory: MemoryTier(budget: 1 << 20), disk: nil, shared: shared, openConnections: 0), as: UTF8.self)
    }

    /// A miss counts as a miss at each tier it passed; the shared tier is passed only when there is one.
    @Test func aMissCountsAtEveryTierItPassed() {
        let metrics = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, version: "9.9.9")
        metrics.lookup(CacheStatus(hit: true))
        metrics.lookup(CacheStatus(forward: .miss))
        let text = Self.exposition(metrics)
        #expect(text.contains(#"larder_cache_lookups_total{tier="memory",result="hit"} 1"#))
        #expect(text.contains(#"larder_cache_lookups_total{tier="memory",result="miss"} 1"#))
        #expect(text.contains(#"larder_cache_lookups_total{tier="disk",result="miss"} 1"#))
        #expect(!text.contains(#"larder_cache_lookups_total{tier="redis""#))
        #expect(text.contains(#"larder_build_info{version="9.9.9"}"#))
    }

    /// What the composition reads of Redis is what `/metrics` shows of it.
    @Test func theSharedTierIsShownAsRead() {
        let metrics = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, sharedTier: true, version: "9.9.9")
        metrics.lookup(CacheStatus(forward: .miss))
        let text = Self.exposition(metrics, shared: SharedTierReading(stores: 3, errors: 1, waits: 0, corruptions: 0, isUp: false))
        #expect(text.contains(#"larder_cache_lookups_total{tier="redis",result="miss"} 1"#))
        #expect(text.contains(#"larder_cache_stores_total{tier="redis"} 3"#))
        #expect(text.contains("larder_redis_errors_total 1"))
        #expect(text.contains("larder_redis_up 0"))
    }
}
