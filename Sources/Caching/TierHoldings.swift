import Synchronization
import Locking
/// How much of one tier a route's answers take, as the tier counts for its limit and for
/// `larder_cache_entries` and `larder_cache_bytes`: entries (each `Vary` variant one, and a
/// variant list one) and bytes charged. The admin listener's `GET /routes` shows it per route.
public struct TierHoldings: Sendable, Equatable {
    public var entries = 0
    public var bytes = 0

    public init(entries: Int = 0, bytes: Int = 0) {
        self.entries = entries
        self.bytes = bytes
    }

    mutating func add(bytes: Int) {
        entries += 1
        self.bytes += bytes
    }

    mutating func add(_ other: TierHoldings) {
        entries += other.entries
        bytes += other.bytes
    }
}

/// What one route's store holds in each tier.
public struct RouteHoldings: Sendable, Equatable {
    public var memory = TierHoldings()
    /// Of the files whose head the disk tier has read (those found at start are read in the background).
    public var disk = TierHoldings()

    public init(memory: TierHoldings = TierHoldings(), disk: TierHoldings = TierHoldings()) {
        self.memory = memory
        self.disk = disk
    }
}

extension Cache {
    /// What each cache's route holds, by `route` (caches of one route name share what they
    /// store). One pass over each tier's index, under its lock: for an operator now and then,
    /// not for a request. The caches share their tiers (every generation of routes does).
    public static func holdings(of caches: [Cache]) -> [String: RouteHoldings] {
        guard let first = caches.first else { return [:] }
        let parts = Dictionary(caches.map { (CacheKey.Route($0.route).text, $0.route) }, uniquingKeysWith: { name, _ in name })
        let memory = first.memory.holdings(ofRouteParts: Set(parts.keys))
        // The route's tag is its key's route part (`CacheTags`).
        let disk = first.disk.map { disk in disk.index.withLock { $0.entries.holdings(taggedWith: Set(parts.keys)) } } ?? [:]
        return Dictionary(uniqueKeysWithValues: parts.map { part, route in
            (route, RouteHoldings(memory: memory[part] ?? TierHoldings(), disk: disk[part] ?? TierHoldings()))
        })
    }
}
