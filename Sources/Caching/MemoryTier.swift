import Synchronization
import Locking

/// The first tier: entries in memory, bounded by bytes, least recently used evicted first.
///
/// One lock around a dictionary and a recency list linked by index, so a lookup is a hash, a
/// compare and a few integer moves: cheap enough to run on an event loop thread. Shared by
/// every route; each response carries what its route rendered from the entry, so a hit
/// renders nothing. Measured (`larder-bench pieces`): a hit among 10,000 entries costs
/// 212–372 ns against 15,490 ns with swift-collections' `OrderedDictionary` as the LRU (a hit
/// moves its key to the end, which shifts the keys after it).
/// The budget counts what the items really hold (`MemoryCost`): entry, rendered response,
/// slot and key with their allocation overheads, not just body bytes.
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
    static func cost(of item: Item, key: CacheKey) -> Int { item.cost + slotOverhead + MemoryCost.string(key.text) }

    /// What the tier itself spends per item: its slot (doubled, as an array grows), its place
    /// on the free list and its dictionary entry.
    static let slotOverhead = 2 * (MemoryLayout<Item?>.stride + MemoryLayout<Slot>.stride + 4) + 48

    /// A slot's key, its cost, and its place in the recency list: its neighbours towards the
    /// newest and the oldest end, `State.none` at an end. The list is linked by index, not by
    /// reference: a counted link cost a retain and a release on the neighbours of every entry
    /// a hit moved, each on a cache line of another entry that another loop had written last.
    private struct Slot {
        /// Nil while the slot is free.
        var key: CacheKey?
        var cost = 0
        var newer = State.none
        var older = State.none
    }

    private struct State {
        static let none: Int32 = -1

        /// Each slot's item, nil while it is free; apart from the slots, so a hit reads its
        /// item and copies nothing else.
        var items: [Item?] = []
        var slots: [Slot] = []
        /// Slots freed by a removal, taken again by the next insertion: nothing else moves.
        var free: [Int32] = []
        /// Where each key's item is.
        var slotIndex: [CacheKey: Int32] = [:]
        var newest = none
        var oldest = none
        var bytes = 0
        var evictions = 0
        /// Removals asked for (invalidations, purges), counted so that a read of another tier
        /// begun before one does not put back what it removed (`set(_:_:unlessRemovedSince:)`).
        var removals: UInt64 = 0
        /// The keys of the latest removals, oldest first; nil for a purge by selection, which
        /// may take any key.
        var recentRemovals: [CacheKey?] = []
        static let remembered = 32

        mutating func noteRemoval(of key: CacheKey?) {
            removals &+= 1
            if recentRemovals.count == Self.remembered { recentRemovals.removeFirst() }
            recentRemovals.append(key)
        }

        /// Whether a removal since `count` may have taken `key` (or its primary key).
        func removed(_ key: CacheKey, since count: UInt64) -> Bool {
            let since = removals &- count
            guard since > 0 else { return false }
            guard since <= UInt64(recentRemovals.count) else { return true }
            return recentRemovals.suffix(Int(since)).contains { $0 == nil || $0 == key || $0 == key.primary }
        }

        mutating func unlink(_ index: Int32) {
            let (newer, older) = (slots[Int(index)].newer, slots[Int(index)].older)
            if older != Self.none { slots[Int(older)].newer = newer } else { oldest = newer }
            if newer != Self.none { slots[Int(newer)].older = older } else { newest = older }
            slots[Int(index)].newer = Self.none
            slots[Int(index)].older = Self.none
        }

        mutating func pushNewest(_ index: Int32) {
            slots[Int(index)].newer = Self.none
            slots[Int(index)].older = newest
            if newest != Self.none { slots[Int(newest)].newer = index }
            newest = index
            if oldest == Self.none { oldest = index }
        }

        mutating func insert(_ item: Item, key: CacheKey, cost: Int) {
            let index: Int32
            if let reused = free.popLast() {
                index = reused
                items[Int(index)] = item
                slots[Int(index)].key = key
                slots[Int(index)].cost = cost
            } else {
                index = Int32(items.count)
                items.append(item)
                slots.append(Slot(key: key, cost: cost))
            }
            slotIndex[key] = index
            pushNewest(index)
            bytes += cost
        }

        /// Takes the item at `index` out of the list and the dictionary, and frees its slot.
        mutating func remove(at index: Int32) -> (key: CacheKey, item: Item) {
            unlink(index)
            let key = slots[Int(index)].key.take()!
            slotIndex.removeValue(forKey: key)
            bytes -= slots[Int(index)].cost
            free.append(index)
            return (key, items[Int(index)].take()!)
        }
    }

    public let budget: Int
    private let state = Locked(State())

    public init(budget: Int) {
        self.budget = budget
    }

    /// The item for `key`, marked as most recently used.
    public func get(_ key: CacheKey) -> Item? {
        state.withLock { state in
            guard let index = state.slotIndex[key] else { return nil }
            if state.newest != index {
                state.unlink(index)
                state.pushNewest(index)
            }
            return state.items[Int(index)]
        }
    }

    /// Keeps `item` under `key`, evicting the least recently used as needed. Returns false
    /// when the item alone costs more than the budget (then nothing is kept under `key`).
    @discardableResult
    public func set(_ key: CacheKey, _ item: Item) -> Bool {
        set(key, item, unlessRemovedSince: nil) ?? false
    }

    /// The removals asked for so far: what a read of the disk or shared tier passes to
    /// `set(_:_:unlessRemovedSince:)` once it has the item.
    public var removals: UInt64 { state.withLock { $0.removals } }

    /// As `set`, unless a removal that may have taken `key` was asked for since `removals` was
    /// read: then nothing is kept and it returns nil. An item read from another tier while a
    /// purge removed it there would otherwise come back into memory after the purge and be
    /// served until it expires. A purge by tag or of everything counts for every key, as do
    /// removals too many to remember: a put-back skipped costs the next request a read.
    public func set(_ key: CacheKey, _ item: Item, unlessRemovedSince removals: UInt64?) -> Bool? {
        let cost = Self.cost(of: item, key: key)
        // A body in a file (a large object) is served from the disk tier; only what it replaced goes.
        let fits = cost <= budget && !Self.bodyIsInFile(item)
        var refused = false
        // The items replaced and evicted are freed after the lock is released, not under it:
        // freeing an entry's strings and arrays would hold up every other loop's lookups.
        _ = state.withLock { state -> [(key: CacheKey, item: Item)] in
            if let removals, state.removed(key, since: removals) {
                refused = true
                return []
            }
            var dropped: [(key: CacheKey, item: Item)] = []
            if let existing = state.slotIndex[key] {
                dropped.append(state.remove(at: existing))
            }
            guard fits else { return dropped }
            state.insert(item, key: key, cost: cost)
            while state.bytes > budget, state.oldest != State.none {
                dropped.append(state.remove(at: state.oldest))
                state.evictions += 1
            }
            return dropped
        }
        return refused ? nil : fits
    }

    private static func bodyIsInFile(_ item: Item) -> Bool {
        guard case .response(let response) = item, case .file = response.entry.body else { return false }
        return true
    }

    /// Removes what `key` holds if it is still `response` (and not something stored since).
    public func remove(_ key: CacheKey, ifStill response: StoredResponse) {
        _ = state.withLock { state -> (key: CacheKey, item: Item)? in
            guard let index = state.slotIndex[key], case .response(let held)? = state.items[Int(index)], held === response else { return nil }
            return state.remove(at: index)
        }
    }

    public func remove(_ key: CacheKey) {
        _ = state.withLock { state -> (key: CacheKey, item: Item)? in  // freed outside the lock, as in `set`
            state.noteRemoval(of: key)
            guard let index = state.slotIndex[key] else { return nil }
            return state.remove(at: index)
        }
    }

    /// Removes every item `matches` selects and returns them (purges: a scan of memory, which
    /// the budget keeps small, under one lock).
    func removeAll(where matches: @Sendable (CacheKey, Item) -> Bool) -> [(key: CacheKey, item: Item)] {
        state.withLock { state in
            state.noteRemoval(of: nil)
            var removed: [(key: CacheKey, item: Item)] = []
            for index in state.items.indices {
                guard let key = state.slots[index].key, let item = state.items[index], matches(key, item) else { continue }
                removed.append(state.remove(at: Int32(index)))
            }
            return removed
        }
    }

    /// The items `matches` selects, without marking them used (inspection).
    func items(where matches: @Sendable (CacheKey, Item) -> Bool) -> [(key: CacheKey, item: Item)] {
        state.withLock { state in
            zip(state.slots, state.items).compactMap { slot, item in
                guard let key = slot.key, let item, matches(key, item) else { return nil }
                return (key, item)
            }
        }
    }

    /// What the keys of each route (by `CacheKey.Route` text) hold: one pass under the lock.
    func holdings(ofRouteParts parts: Set<String>) -> [String: TierHoldings] {
        let wanted = Set(parts.map { Substring($0) })
        return state.withLock { state in
            var found: [Substring: TierHoldings] = [:]
            for slot in state.slots {
                guard let route = slot.key?.route, wanted.contains(route) else { continue }
                found[route, default: TierHoldings()].add(bytes: slot.cost)
            }
            return Dictionary(uniqueKeysWithValues: found.map { (String($0.key), $0.value) })
        }
    }

    public var bytes: Int { state.withLock { $0.bytes } }
    public var count: Int { state.withLock { $0.slotIndex.count } }
    public var evictions: Int { state.withLock { $0.evictions } }
}
