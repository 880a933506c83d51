import Caching
import Testing
@testable import Routes

/// `/overview` answers with one Cache-Status for two lookups (docs/architecture.md: "Cache-Status on `/overview`").
@Suite(.timeLimit(.minutes(1))) struct OverviewCacheStatusTests {
    @Test func twoHitsAreAHitWithTheSmallerTTL() {
        let combined = AggregateAnswer.combined(CacheStatus(hit: true, ttl: 30, detail: .memory),
                                             CacheStatus(hit: true, ttl: 12, detail: .memory))
        #expect(combined.description == "larder; hit; ttl=12; detail=memory")
        let fromDisk = AggregateAnswer.combined(CacheStatus(hit: true, ttl: 30, detail: .memory),
                                             CacheStatus(hit: true, ttl: 40, detail: .disk))
        #expect(fromDisk.description == "larder; hit; ttl=30; detail=disk")
    }

    @Test func thePartThatWentFurthestSpeaksForBoth() {
        let miss = CacheStatus(forward: .miss, forwardStatus: 200, stored: true)
        let hit = CacheStatus(hit: true, ttl: 5, detail: .memory)
        #expect(AggregateAnswer.combined(hit, miss).description == "larder; fwd=miss; fwd-status=200; stored")
        let revalidated = CacheStatus(forward: .stale, forwardStatus: 304, stored: true)
        let collapsedMiss = CacheStatus(forward: .miss, forwardStatus: 200, collapsed: true)
        #expect(AggregateAnswer.combined(revalidated, collapsedMiss).description
                == "larder; fwd=miss; fwd-status=200; stored; collapsed")
    }
}
