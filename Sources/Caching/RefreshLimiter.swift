import Foundation
import Synchronization
import Locking

/// When each key last had a client-forced refresh, so a route can allow at most one per
/// interval. Bounded: past `capacity` keys, those whose interval has passed are dropped
/// (they no longer limit anything), so a stream of new keys cannot grow it without end.
final class RefreshLimiter: Sendable {
    private let interval: TimeInterval
    private let capacity: Int
    private let last = Locked<[CacheKey: Date]>([:])

    init(interval: TimeInterval, capacity: Int = 10_000) {
        self.interval = interval
        self.capacity = capacity
    }

    /// Whether a forced refresh of `key` at `now` falls within the interval of the last one.
    func isLimited(_ key: CacheKey, now: Date) -> Bool {
        guard interval > 0 else { return false }
        return last.withLock { $0[key].map { now.timeIntervalSince($0) < interval } ?? false }
    }

    /// Notes that a forced refresh of `key` starts at `now`.
    func record(_ key: CacheKey, now: Date) {
        guard interval > 0 else { return }
        last.withLock { last in
            if last.count >= capacity { last = last.filter { now.timeIntervalSince($0.value) < interval } }
            last[key] = now
        }
    }
}
