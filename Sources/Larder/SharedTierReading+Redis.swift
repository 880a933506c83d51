import RedisTier
import ServiceMetrics
import Caching

extension SharedTierReading {
    /// The shared tier's totals as counted now, and whether Redis is usable.
    init(_ redis: SharedRedis) {
        let counts = redis.tier.counts
        self.init(stores: counts.stores, errors: counts.errors, waits: counts.waits, corruptions: counts.corruptions,
                  isUp: redis.problem == nil)
    }
}
