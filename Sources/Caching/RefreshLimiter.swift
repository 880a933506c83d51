import Foundation
import Synchronization
import HTTPCore
import CacheVocabulary
import Locking

/// When each key last had a client-forced refresh, so a route can allow at most one per
/// interval (or none). Bounded: past `capacity` keys, those whose interval has passed are
/// dropped (they no longer limit anything), so a stream of new keys cannot grow it without end.
final class RefreshLimiter: Sendable {
    private let rule: ClientRefresh
    private let capacity: Int
    private let last = Locked<[CacheKey: Date]>([:])

    init(_ rule: ClientRefresh, capacity: Int = 10_000) {
        self.rule = rule
        self.capacity = capacity
    }

    /// Whether a forced refresh of `key` at `now` is refused: always when ignored, within the
    /// interval of the last one when limited.
    func isLimited(_ key: CacheKey, now: Date) -> Bool {
        switch rule {
        case .honour: false
        case .ignore: true
        case .limit(let interval): last.withLock { $0[key].map { now.timeIntervalSince($0) < interval } ?? false }
        }
    }

    /// Notes that a forced refresh of `key` starts at `now`.
    func record(_ key: CacheKey, now: Date) {
        guard case .limit(let interval) = rule else { return }
        last.withLock { last in
            if last.count >= capacity { last = last.filter { now.timeIntervalSince($0.value) < interval } }
            last[key] = now
        }
    }
}
