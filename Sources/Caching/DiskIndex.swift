import HTTPCore

/// The disk tier's index: for each file, only what eviction, purges and reads need, in flat
/// storage. A million entries cost about 64 bytes each (a 56-byte slot and an 8-byte hash
/// bucket at most half full), where a dictionary of structs, with a set of names per tag and
/// per primary key, cost 500 to 700 (measured at 266,000 entries).
///
/// Slots live in one array and refer to each other by number: the least-recently-used order
/// is a list threaded through them, so a use and an eviction cost O(1), and the hash table
/// holds slot numbers, comparing names in the slots. Tags are a number into `DiskTagSets`;
/// a variant's primary key, rare, lives in a dictionary beside. Nothing here touches the disk.
struct DiskIndex {
    /// One file: 56 bytes.
    struct Slot {
        var name: EntryName
        /// What the file is charged in the budget, in file-system blocks.
        var blocks: UInt32
        /// The neighbours in least-recently-used order, `DiskIndex.end` at either end.
        var older: UInt32
        var newer: UInt32
        /// Which write made the file: a file opened for one write is never kept for the next.
        var stamp: UInt32
        /// Its tags' set in `DiskTagSets`.
        var tags: UInt32
        var flags: Flags
    }

    struct Flags: OptionSet {
        let rawValue: UInt8
        /// The file holds a variant index (the list of a `Vary` key's variants), not a response.
        static let variantIndex = Flags(rawValue: 1)
        /// The file's head is not read yet (found at start): its tags and primary are unknown.
        static let headUnknown = Flags(rawValue: 2)
        /// Found at start and not yet placed in the least-recently-used order.
        static let unordered = Flags(rawValue: 4)
        /// A free slot.
        static let free = Flags(rawValue: 8)
    }

    /// What a file's head tells the index.
    struct Head {
        var tags: [String]
        /// The primary key's file, for a `Vary` variant; nil for a primary key.
        var primary: EntryName?
        var isVariantIndex: Bool

        init(key: CacheKey, status: Int, headers: HTTPHeaders) {
            tags = CacheTags.of(key, headers: headers)
            primary = key.isVariant ? DiskTier.name(key.primary) : nil
            isVariantIndex = status == VariantIndex.diskStatus
        }
    }

    static let end = UInt32.max
    private static let emptyBucket = UInt32.max

    private(set) var slots: [Slot] = []
    private var freeSlots: [UInt32] = []
    /// Slot numbers by the name's hash, linear probing, at most half full.
    private var buckets = [UInt32](repeating: DiskIndex.emptyBucket, count: 16)
    private var oldest = DiskIndex.end
    private var newest = DiskIndex.end
    private(set) var count = 0
    /// Bytes charged, in all.
    private(set) var bytes = 0
    var tagSets = DiskTagSets()
    /// Each variant's primary key's file, by slot.
    private(set) var primaries: [UInt32: EntryName] = [:]

    /// Kept-open files, by slot (`DiskTier+Files`).
    var open: [UInt32: DiskTier.OpenFile] = [:]
    /// Files dropped from the index while reads held them, by descriptor: how many still do.
    var retired: [Int32: Int] = [:]
    var openFiles: Int { open.count }

    // MARK: Lookup

    /// The slot number of `name`, if indexed.
    func slot(of name: EntryName) -> UInt32? {
        let bucket = self.bucket(of: name)
        return buckets[bucket] == Self.emptyBucket ? nil : buckets[bucket]
    }

    func contains(_ name: EntryName) -> Bool { slot(of: name) != nil }

    /// The bucket holding `name`, or the empty one where it would go.
    private func bucket(of name: EntryName) -> Int {
        let mask = buckets.count - 1
        var bucket = name.hashValue & mask
        while buckets[bucket] != Self.emptyBucket, slots[Int(buckets[bucket])].name != name {
            bucket = (bucket + 1) & mask
        }
        return bucket
    }

    // MARK: Adding and removing

    /// Indexes `name`, charged `charge` bytes, as the newest entry (or, `unordered`, outside
    /// the order until `order` places it). `head` nil: not read yet. A name already indexed
    /// is replaced.
    mutating func insert(_ name: EntryName, charge: Int, stamp: UInt32, head: Head?, unordered: Bool = false) {
        _ = forget(name)
        if count + 1 > buckets.count / 2 { grow() }
        var slot = Slot(name: name, blocks: UInt32(clamping: charge / DiskTier.blockSize), older: Self.end, newer: Self.end,
                        stamp: stamp, tags: DiskTagSets.none, flags: head == nil ? .headUnknown : [])
        if unordered { slot.flags.insert(.unordered) }
        let number: UInt32
        if let free = freeSlots.popLast() {
            number = free
            slots[Int(number)] = slot
        } else {
            number = UInt32(slots.count)
            slots.append(slot)
        }
        buckets[bucket(of: name)] = number
        count += 1
        bytes += Int(slot.blocks) * DiskTier.blockSize
        if let head { learn(number, head) }
        if !unordered { linkNewest(number) }
    }

    /// Drops `name`; returns what it was charged, nil when it was not indexed. Its kept file
    /// is closed (or left to its last read).
    @discardableResult
    mutating func forget(_ name: EntryName) -> Int? {
        var bucket = bucket(of: name)
        guard buckets[bucket] != Self.emptyBucket else { return nil }
        let number = buckets[bucket]
        // Backward-shift deletion: later members of the probe run move up, so no lookup
        // ever stops early at the hole (no tombstones).
        let mask = buckets.count - 1
        var next = (bucket + 1) & mask
        while buckets[next] != Self.emptyBucket {
            let home = slots[Int(buckets[next])].name.hashValue & mask
            if (next - home) & mask >= (next - bucket) & mask {
                buckets[bucket] = buckets[next]
                bucket = next
            }
            next = (next + 1) & mask
        }
        buckets[bucket] = Self.emptyBucket
        let slot = slots[Int(number)]
        if !slot.flags.contains(.unordered) { unlink(number) }
        tagSets.release(slot.tags)
        primaries[number] = nil
        if let file = open.removeValue(forKey: number) { closeFile(file) }
        slots[Int(number)].flags = .free
        freeSlots.append(number)
        count -= 1
        bytes -= Int(slot.blocks) * DiskTier.blockSize
        return Int(slot.blocks) * DiskTier.blockSize
    }

    /// Records what `number`'s head says.
    mutating func learn(_ number: UInt32, _ head: Head) {
        tagSets.release(slots[Int(number)].tags)
        slots[Int(number)].tags = tagSets.retain(head.tags)
        slots[Int(number)].flags.remove(.headUnknown)
        if head.isVariantIndex { slots[Int(number)].flags.insert(.variantIndex) }
        primaries[number] = head.primary
    }

    private mutating func grow() {
        let old = buckets
        buckets = [UInt32](repeating: Self.emptyBucket, count: old.count * 2)
        for number in old where number != Self.emptyBucket {
            buckets[bucket(of: slots[Int(number)].name)] = number
        }
    }

    // MARK: Least-recently-used order

    /// `name` was used: it becomes the newest.
    mutating func touch(_ name: EntryName) {
        guard let number = slot(of: name) else { return }
        if slots[Int(number)].flags.contains(.unordered) {
            slots[Int(number)].flags.remove(.unordered)
        } else {
            unlink(number)
        }
        linkNewest(number)
    }

    /// Places the entries found at start, given newest first, behind every entry in the order
    /// already (written or read since start); one already placed (by a read) stays where it is.
    mutating func order(newestFirst numbers: [UInt32]) {
        // A slot number past the end: the index was emptied meanwhile (the directory replaced).
        for number in numbers where Int(number) < slots.count && slots[Int(number)].flags.contains(.unordered) {
            slots[Int(number)].flags.remove(.unordered)
            slots[Int(number)].newer = oldest
            slots[Int(number)].older = Self.end
            if oldest != Self.end { slots[Int(oldest)].older = number } else { newest = number }
            oldest = number
        }
    }

    /// The least recently used entry in the order.
    var oldestName: EntryName? { oldest == Self.end ? nil : slots[Int(oldest)].name }

    private mutating func linkNewest(_ number: UInt32) {
        slots[Int(number)].older = newest
        slots[Int(number)].newer = Self.end
        if newest != Self.end { slots[Int(newest)].newer = number } else { oldest = number }
        newest = number
    }

    private mutating func unlink(_ number: UInt32) {
        let slot = slots[Int(number)]
        if slot.older != Self.end { slots[Int(slot.older)].newer = slot.newer } else { oldest = slot.newer }
        if slot.newer != Self.end { slots[Int(slot.newer)].older = slot.older } else { newest = slot.older }
    }

    // MARK: Selections

    /// Every indexed name.
    var names: [EntryName] { slots.compactMap { $0.flags.contains(.free) ? nil : $0.name } }

    /// The files carrying any of `tags` (of those whose head is known).
    func names(taggedWithAnyOf tags: Set<String>) -> [EntryName] {
        let sets = tagSets.sets(holdingAnyOf: tags)
        guard !sets.isEmpty else { return [] }
        return slots.compactMap { !$0.flags.contains(.free) && sets.contains($0.tags) ? $0.name : nil }
    }

    /// The primary key's file and every variant filed under it (of those whose head is known).
    func names(under primary: EntryName) -> [EntryName] {
        var names = primaries.compactMap { number, owner in owner == primary ? slots[Int(number)].name : nil }
        if contains(primary) { names.append(primary) }
        return names
    }

    /// What the files carrying each of `tags` hold (of those whose head is known): one pass
    /// over the slots, then each tag's sets.
    func holdings(taggedWith tags: Set<String>) -> [String: TierHoldings] {
        var bySet: [UInt32: TierHoldings] = [:]
        for slot in slots where slot.flags.isDisjoint(with: [.free, .headUnknown]) {
            bySet[slot.tags, default: TierHoldings()].add(bytes: Int(slot.blocks) * DiskTier.blockSize)
        }
        return Dictionary(uniqueKeysWithValues: tags.map { tag in
            (tag, tagSets.sets(holdingAnyOf: [tag]).reduce(into: TierHoldings()) { total, set in
                if let held = bySet[set] { total.add(held) }
            })
        })
    }

    /// Whether `name` holds a response rather than a variant index.
    func holdsResponse(_ name: EntryName) -> Bool {
        slot(of: name).map { !slots[Int($0)].flags.contains(.variantIndex) } ?? false
    }
}
