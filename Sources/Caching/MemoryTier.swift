import Synchronization

/// The first tier: entries in memory, bounded by bytes, least recently used evicted first.
///
/// One lock around a dictionary and an intrusive list, so a lookup is a hash, a compare and
/// a few pointer moves: cheap enough to run on an event loop thread. Shared by every route;
/// each response carries what its route rendered from the entry, so a hit renders nothing.
/// The budget counts what the items really hold (`MemoryCost`): entry, rendered response,
/// node and key with their allocation overheads, not just body bytes.
public final class MemoryTier: Sendable {
    /// What a key holds: a response, or the index of a response's `Vary` variants.
    public enum Item: Sendable {
        case response(StoredResponse)
        case variants(VariantIndex)

        var cost: Int {
            switch self {
            case .response(let response): response.cost
            case .variants(let index): index.memoryCost
            }
        }
    }

    /// What storing `item` under `key` counts against the budget.
    static func cost(of item: Item, key: CacheKey) -> Int { item.cost + nodeOverhead + MemoryCost.string(key.text) }

    /// What the tier itself spends per item: its list node and its dictionary slot.
    static let nodeOverhead = MemoryCost.allocation(16 + 16 + 8 + 16 + 8 + 8 + 16) + 48

    private final class Node {
        let key: CacheKey
        var item: Item
        var cost: Int
        // Both links are strong; every removal unlinks, so no cycle outlives its node.
        var newer: Node?
        var older: Node?

        init(key: CacheKey, item: Item, cost: Int) {
            self.key = key
            self.item = item
            self.cost = cost
        }
    }

    private struct State {
        var nodes: [CacheKey: Node] = [:]
        var newest: Node?
        var oldest: Node?
        var bytes = 0
        var evictions = 0

        mutating func unlink(_ node: Node) {
            if let older = node.older { older.newer = node.newer } else { oldest = node.newer }
            if let newer = node.newer { newer.older = node.older } else { newest = node.older }
            node.older = nil
            node.newer = nil
        }

        mutating func pushNewest(_ node: Node) {
            node.older = newest
            node.newer = nil
            newest?.newer = node
            newest = node
            if oldest == nil { oldest = node }
        }
    }

    public let budget: Int
    private let state = Mutex(State())

    public init(budget: Int) {
        self.budget = budget
    }

    /// The list's links are strong both ways: break them, or the nodes outlive the tier.
    deinit {
        state.withLock { state in
            var node = state.oldest
            while let current = node {
                node = current.newer
                current.newer = nil
                current.older = nil
            }
            state.newest = nil
            state.oldest = nil
        }
    }

    /// The item for `key`, marked as most recently used.
    public func get(_ key: CacheKey) -> Item? {
        state.withLock { state in
            guard let node = state.nodes[key] else { return nil }
            if state.newest !== node {
                state.unlink(node)
                state.pushNewest(node)
            }
            return node.item
        }
    }

    /// Stores the item, evicting least recently used items past the budget. An item larger
    /// than the whole budget is not kept (and replaces nothing).
    public func set(_ key: CacheKey, _ item: Item) {
        let cost = Self.cost(of: item, key: key)
        // The items replaced and evicted are freed after the lock is released, not under it:
        // freeing an entry's strings and arrays would hold up every other loop's lookups.
        _ = state.withLock { state -> [Item] in
            var dropped: [Item] = []
            if let existing = state.nodes.removeValue(forKey: key) {
                state.unlink(existing)
                state.bytes -= existing.cost
                dropped.append(existing.item)
            }
            guard cost <= budget else { return dropped }
            let node = Node(key: key, item: item, cost: cost)
            state.nodes[key] = node
            state.pushNewest(node)
            state.bytes += cost
            while state.bytes > budget, let victim = state.oldest {
                state.unlink(victim)
                state.nodes.removeValue(forKey: victim.key)
                state.bytes -= victim.cost
                state.evictions += 1
                dropped.append(victim.item)
            }
            return dropped
        }
    }

    public func remove(_ key: CacheKey) {
        _ = state.withLock { state -> Item? in  // freed outside the lock, as in `set`
            guard let node = state.nodes.removeValue(forKey: key) else { return nil }
            state.unlink(node)
            state.bytes -= node.cost
            return node.item
        }
    }

    /// Removes every item `matches` selects and returns them (purges: a scan of memory, which
    /// the budget keeps small, under one lock).
    func removeAll(where matches: @Sendable (CacheKey, Item) -> Bool) -> [(key: CacheKey, item: Item)] {
        state.withLock { state in
            var removed: [(key: CacheKey, item: Item)] = []
            for (key, node) in state.nodes where matches(key, node.item) {
                removed.append((key, node.item))
            }
            for (key, _) in removed {
                guard let node = state.nodes.removeValue(forKey: key) else { continue }
                state.unlink(node)
                state.bytes -= node.cost
            }
            return removed
        }
    }

    /// The items `matches` selects, without marking them used (inspection).
    func items(where matches: @Sendable (CacheKey, Item) -> Bool) -> [(key: CacheKey, item: Item)] {
        state.withLock { state in state.nodes.compactMap { matches($0.key, $0.value.item) ? ($0.key, $0.value.item) : nil } }
    }

    public var bytes: Int { state.withLock { $0.bytes } }
    public var count: Int { state.withLock { $0.nodes.count } }
    public var evictions: Int { state.withLock { $0.evictions } }
}
