import HTTPCore
import Bodies
import Synchronization
import Locking

/// The first tier: entries in memory, bounded by bytes, kept by how often and how recently
/// they are asked (`AdmissionPolicy`, W-TinyLFU).
///
/// One lock around a dictionary and the policy's lists linked by index, so a lookup is a hash,
/// a compare, four counter updates and a few integer moves: cheap enough to run on an event
/// loop thread. Shared by
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

    /// What the tier itself spends per item: its slot and the policy's node (doubled, as an
    /// array grows), its place on the free list, its dictionary entry and its share of the
    /// frequency sketch and of the keys let go lately (`GhostKeys`).
    static let slotOverhead = 2 * (MemoryLayout<Item?>.stride + MemoryLayout<CacheKey?>.stride + AdmissionPolicy.nodeStride + 4) + 48
        + FrequencySketch.bytesPerEntry + GhostKeys.bytesPerEntry

    /// What became of an item offered to the tier.
    public enum Placement: Sendable, Equatable {
        case kept
        /// Larger than the whole budget, or a body in a file (the disk tier serves those).
        case tooLarge
        /// Asked less often than what it would have pushed out (`AdmissionPolicy`).
        case notAdmitted
    }

    private struct State {
        /// Each slot's item, nil while it is free; apart from the keys, so a hit reads its
        /// item and copies nothing else.
        var items: [Item?] = []
        /// Each slot's key, nil while it is free.
        var keys: [CacheKey?] = []
        /// Slots freed by a removal, taken again by the next insertion: nothing else moves.
        var free: [Int32] = []
        /// Where each key's item is.
        var slotIndex: [CacheKey: Int32] = [:]
        /// Which items stay: each slot's cost, hash and place in its lists.
        var policy: AdmissionPolicy
        /// Removals asked for (invalidations, purges) and answers stored, counted so that a
        /// read of another tier begun before one does not put back what it removed or
        /// replaced (`set(_:_:unlessRemovedSince:)`).
        var removals: UInt64 = 0
        /// The keys of the latest removals, a ring with the next to overwrite at `nextRemoval`;
        /// nil for a purge by selection, which may take any key. A ring: every answer stored
        /// counts one, and shifting an array of 32 keys for each cost revalidation-304 1.4 % of
        /// its instructions (gate).
        var recentRemovals: [CacheKey?] = []
        var nextRemoval = 0
        static let remembered = 32

        mutating func noteRemoval(of key: CacheKey?) {
            removals &+= 1
            if recentRemovals.count < Self.remembered { recentRemovals.append(key) } else { recentRemovals[nextRemoval] = key }
            nextRemoval = (nextRemoval + 1) % Self.remembered
        }

        /// Whether a removal since `count` may have taken `key` (or its primary key).
        func removed(_ key: CacheKey, since count: UInt64) -> Bool {
            let since = removals &- count
            guard since > 0 else { return false }
            guard since <= UInt64(recentRemovals.count) else { return true }
            return (1...Int(since)).contains { back in
                let removed = recentRemovals[(nextRemoval - back + Self.remembered) % Self.remembered]
                return removed == nil || removed == key || removed == key.primary
            }
        }

        /// Offers `item` to the policy; whether it was kept. What the policy let go (evicted,
        /// or lost its contest) is appended to `dropped`.
        mutating func insert(_ item: Item, key: CacheKey, cost: Int, replacing: AdmissionPolicy.Queue?,
                             dropped: inout [(key: CacheKey, item: Item)]) -> Bool {
            let index: Int32
            if let reused = free.popLast() {
                index = reused
                items[Int(index)] = item
                keys[Int(index)] = key
            } else {
                index = Int32(items.count)
                items.append(item)
                keys.append(key)
            }
            slotIndex[key] = index
            policy.insert(index, hash: key.sketchHash, cost: cost, entries: slotIndex.count, replacing: replacing)
            var kept = true
            for released in policy.released {
                if released == index { kept = false }
                dropped.append(free(released))
            }
            return kept
        }

        /// Takes the item at `index` out of the policy's lists and the dictionary, and frees its slot.
        mutating func remove(at index: Int32) -> (key: CacheKey, item: Item) {
            policy.remove(index)
            return free(index)
        }

        /// Frees a slot the policy holds no more.
        private mutating func free(_ index: Int32) -> (key: CacheKey, item: Item) {
            let key = keys[Int(index)].take()!
            slotIndex.removeValue(forKey: key)
            free.append(index)
            return (key, items[Int(index)].take()!)
        }
    }

    public let budget: Int
    private let state: Locked<State>

    public convenience init(budget: Int) {
        var random = SystemRandomNumberGenerator()
        self.init(budget: budget, seed: random.next())
    }

    /// `seed` drives the policy's rare random admissions (tests fix it).
    init(budget: Int, seed: UInt64) {
        self.budget = budget
        state = Locked(State(policy: AdmissionPolicy(budget: budget, seed: seed)))
    }

    /// The item for `key`, its access counted. A miss is counted when what answers it is
    /// offered (`set`): every miss that is fetched or read from another tier offers it, and a
    /// lookup that misses costs no second hash of the key (the gate's disk-hit path).
    public func get(_ key: CacheKey) -> Item? {
        state.withLock { state in
            guard let index = state.slotIndex[key] else { return nil }
            state.policy.recordHit(index)
            return state.items[Int(index)]
        }
    }

    /// Offers `item` to be kept under `key`, pushing out what the policy weighs least as
    /// needed; a newer item for a key held takes its place without a contest. Returns
    /// whether it was kept (whatever was kept under `key` before goes either way).
    @discardableResult
    public func set(_ key: CacheKey, _ item: Item) -> Bool {
        offer(key, item, unlessRemovedSince: nil) == .kept
    }

    /// The removals asked for and answers stored so far: what a read of the disk or shared
    /// tier passes to `set(_:_:unlessRemovedSince:)` once it has the item.
    public var removals: UInt64 { state.withLock { $0.removals } }

    /// As `set`, unless a removal that may have taken `key`, or a newer answer for it, came
    /// since `removals` was read: then nothing is kept and it returns nil. An item read from
    /// another tier while a purge removed it there would otherwise come back into memory after
    /// the purge, or over the newer answer, and be served until it expires. A purge by tag or
    /// of everything counts for every key, as do changes too many to remember (32): a put-back
    /// skipped costs the next request a read.
    public func set(_ key: CacheKey, _ item: Item, unlessRemovedSince removals: UInt64?) -> Bool? {
        offer(key, item, unlessRemovedSince: removals).map { $0 == .kept }
    }

    /// As `set(_:_:unlessRemovedSince:)`, saying why an item was not kept.
    public func offer(_ key: CacheKey, _ item: Item, unlessRemovedSince removals: UInt64? = nil) -> Placement? {
        let cost = Self.cost(of: item, key: key)
        // A body in a file (a large object) is served from the disk tier; only what it replaced goes.
        let fits = cost <= budget && !Self.bodyIsInFile(item)
        var placement: Placement? = fits ? .kept : .tooLarge
        // The items replaced and evicted are freed after the lock is released, not under it:
        // freeing an entry's strings and arrays would hold up every other loop's lookups.
        _ = state.withLock { state -> [(key: CacheKey, item: Item)] in
            if let removals, state.removed(key, since: removals) {
                placement = nil
                return []
            }
            // A newer answer, not a put-back: a read of another tier begun before must not undo it.
            if removals == nil { state.noteRemoval(of: key) }
            var dropped: [(key: CacheKey, item: Item)] = []
            var replacing: AdmissionPolicy.Queue?
            if let existing = state.slotIndex[key] {
                replacing = state.policy.queue(existing)
                dropped.append(state.remove(at: existing))
            }
            guard fits else { return dropped }
            if !state.insert(item, key: key, cost: cost, replacing: replacing, dropped: &dropped) { placement = .notAdmitted }
            return dropped
        }
        return placement
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
                guard let key = state.keys[index], let item = state.items[index], matches(key, item) else { continue }
                removed.append(state.remove(at: Int32(index)))
            }
            return removed
        }
    }

    /// The items `matches` selects, without marking them used (inspection).
    func items(where matches: @Sendable (CacheKey, Item) -> Bool) -> [(key: CacheKey, item: Item)] {
        state.withLock { state in
            zip(state.keys, state.items).compactMap { key, item in
                guard let key, let item, matches(key, item) else { return nil }
                return (key, item)
            }
        }
    }

    /// What the keys of each route (by `CacheKey.Route` text) hold: one pass under the lock.
    func holdings(ofRouteParts parts: Set<String>) -> [String: TierHoldings] {
        let wanted = Set(parts.map { Substring($0) })
        return state.withLock { state in
            var found: [Substring: TierHoldings] = [:]
            for (index, key) in state.keys.enumerated() {
                guard let route = key?.route, wanted.contains(route) else { continue }
                found[route, default: TierHoldings()].add(bytes: state.policy.cost(Int32(index)))
            }
            return Dictionary(uniqueKeysWithValues: found.map { (String($0.key), $0.value) })
        }
    }

    public var bytes: Int { state.withLock { $0.policy.bytes } }
    public var count: Int { state.withLock { $0.slotIndex.count } }
    /// Items pushed out to make room for others.
    public var evictions: Int { state.withLock { $0.policy.evictions } }
    /// Items let go because they were asked less often than what they would have pushed out.
    public var rejections: Int { state.withLock { $0.policy.rejections } }
}
