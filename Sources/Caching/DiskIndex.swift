import HTTPCore

/// The disk tier's index: for each file, only what eviction, purges and reads need, in flat
/// storage. A million entries cost 88.5 bytes each (`bench/scale.py`: a slot of the name,
/// blocks, stamp and tags, the policy's node, a hash bucket at most half full and the
/// frequency sketch's 32 bytes), where a dictionary of structs, with a set of names per tag
/// and per primary key, cost 500 to 700 (measured at 266,000 entries).
///
/// Slots live in one array and are known by number: the policy that keeps or lets go of
/// entries (`AdmissionPolicy`, the memory tier's W-TinyLFU) holds its lists by the same
/// numbers, so a use and an eviction cost O(1), and the hash table holds slot numbers,
/// comparing names in the slots. Tags are a number into `DiskTagSets`; a variant's primary
/// key, rare, lives in a dictionary beside. Nothing here touches the disk.
struct DiskIndex {
    /// One file: 48 bytes.
    struct Slot {
        var name: EntryName
        /// What the file is charged in the budget, in file-system blocks.
        var blocks: UInt32
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
        /// Found at start and not yet placed in the policy's order.
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

    private static let emptyBucket = UInt32.max

    private(set) var slots: [Slot] = []
    private var freeSlots: [UInt32] = []
    /// Slot numbers by the name's hash, linear probing, at most half full.
    private var buckets = [UInt32](repeating: DiskIndex.emptyBucket, count: 16)
    /// Which entries stay, by how often and how recently they were asked. Its budget is
    /// unbounded until the tier sets it (`limit`): while the start-up listing runs, what is
    /// on disk is not all counted yet, and nothing is contested or evicted.
    private var policy: AdmissionPolicy
    /// Mixed into each name's hash for the sketch, per process: names are public (the
    /// SHA-256 of a key), and an attacker must not find names whose counters collide.
    private let sketchSeed: UInt64
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

    /// `budget`: the tier's, which sizes the policy's window (1 %) and protected segment.
    init(budget: Int = .max, seed: UInt64 = UInt64.random(in: 1...UInt64.max)) {
        policy = AdmissionPolicy(budget: budget, seed: seed)
        policy.budget = .max
        sketchSeed = seed &* 0x9E37_79B9_7F4A_7C15
    }

    private init(policy: AdmissionPolicy, sketchSeed: UInt64) {
        self.policy = policy
        self.sketchSeed = sketchSeed
    }

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

    /// Indexes `name`, charged `charge` bytes, and offers it to the policy (or, `unordered`,
    /// leaves it outside the order until `order` places it). `head` nil: not read yet. A name
    /// already indexed is replaced, and its successor takes its place in the policy's order
    /// (a refresh, a rewrite). `counted`: `admits` counted this access already. Returns
    /// the names the policy let go, dropped from the index: evicted, or having lost their
    /// contest, `name` itself among them when it lost at once.
    @discardableResult
    mutating func insert(_ name: EntryName, charge: Int, stamp: UInt32, head: Head?, unordered: Bool = false,
                         counted: Bool = false) -> [EntryName] {
        let replacing = slot(of: name).flatMap { slots[Int($0)].flags.contains(.unordered) ? nil : policy.queue(Int32($0)) }
        _ = forget(name)
        if count + 1 > buckets.count / 2 { grow() }
        var slot = Slot(name: name, blocks: UInt32(clamping: charge / DiskTier.blockSize),
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
        guard !unordered else { return [] }
        policy.insert(Int32(number), hash: sketchHash(name), cost: charged(number), entries: count, replacing: replacing, counted: counted)
        return dropReleased()
    }

    /// Whether the policy would keep a new entry `name` of `charge` bytes (see
    /// `AdmissionPolicy.admits`); counts the access. A name indexed already is a refresh,
    /// kept without a contest.
    mutating func admits(_ name: EntryName, charge: Int) -> Bool {
        guard !contains(name) else {
            policy.record(hash: sketchHash(name))
            return true
        }
        return policy.admits(hash: sketchHash(name), cost: charge, entries: count + 1)
    }

    /// Drops from the index the slots the policy let go; their names.
    private mutating func dropReleased() -> [EntryName] {
        policy.released.map { released in
            let name = slots[Int(released)].name
            drop(UInt32(released), ordered: false)
            return name
        }
    }

    private func charged(_ number: UInt32) -> Int { Int(slots[Int(number)].blocks) * DiskTier.blockSize }

    /// The name's hash for the frequency sketch: a word of the SHA-256 already there, seeded.
    @inline(__always)
    private func sketchHash(_ name: EntryName) -> Int { Int(truncatingIfNeeded: name.firstWord ^ sketchSeed) }

    /// Drops `name`; returns what it was charged, nil when it was not indexed. Its kept file
    /// is closed (or left to its last read).
    @discardableResult
    mutating func forget(_ name: EntryName) -> Int? {
        let bucket = bucket(of: name)
        guard buckets[bucket] != Self.emptyBucket else { return nil }
        let number = buckets[bucket]
        let charge = charged(number)
        drop(number, ordered: !slots[Int(number)].flags.contains(.unordered), at: bucket)
        return charge
    }

    /// Frees slot `number` (at `bucket` in the table, found when not given), taking it out
    /// of the policy's order when `ordered`.
    private mutating func drop(_ number: UInt32, ordered: Bool, at bucket: Int? = nil) {
        var bucket = bucket ?? self.bucket(of: slots[Int(number)].name)
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
        if ordered { policy.remove(Int32(number)) }
        tagSets.release(slot.tags)
        primaries[number] = nil
        if let file = open.removeValue(forKey: number) { closeFile(file) }
        slots[Int(number)].flags = .free
        freeSlots.append(number)
        count -= 1
        bytes -= Int(slot.blocks) * DiskTier.blockSize
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

    // MARK: The policy's order

    /// `name` was used: counted, and moved up in the policy's order. One found at start
    /// that the listing has not placed yet goes in as the window's newest; one not indexed
    /// (waiting for the writer) is counted only, for the contest it meets once written.
    mutating func touch(_ name: EntryName) {
        guard let number = slot(of: name) else { return policy.record(hash: sketchHash(name)) }
        if slots[Int(number)].flags.contains(.unordered) {
            slots[Int(number)].flags.remove(.unordered)
            policy.record(hash: sketchHash(name))
            policy.place(Int32(number), hash: sketchHash(name), cost: charged(number), in: .window, oldest: false)
        } else {
            policy.recordHit(Int32(number))
        }
    }

    /// Places the entries found at start, given newest first, behind every entry in the order
    /// already (written or read since start), on probation and counted never asked: how
    /// often they were asked before the restart is not known. One already placed (by a read)
    /// stays where it is.
    mutating func order(newestFirst numbers: [UInt32]) {
        // A slot number past the end: the index was emptied meanwhile (the directory replaced).
        for number in numbers where Int(number) < slots.count && slots[Int(number)].flags.contains(.unordered) {
            slots[Int(number)].flags.remove(.unordered)
            policy.place(Int32(number), hash: sketchHash(slots[Int(number)].name), cost: charged(number), in: .probation, oldest: true)
        }
    }

    /// What the entries may take (the tier's budget less what spool files hold); unbounded
    /// until set, while the start-up listing runs.
    var limit: Int {
        get { policy.budget }
        set { policy.budget = newValue }
    }

    /// Evicts, in the policy's order, until the entries fit `limit`; the names dropped.
    mutating func shrink(to limit: Int) -> [EntryName] {
        self.limit = limit
        policy.shrink()
        return dropReleased()
    }

    /// The entry eviction takes next.
    var nextVictim: EntryName? { policy.nextVictim.map { slots[Int($0)].name } }

    /// Entries pushed out to make room.
    var evictions: Int { policy.evictions }
    /// Entries let go because they were asked less often than what they would have pushed out.
    var rejections: Int { policy.rejections }

    /// Forgets every entry; what the policy learnt (and its counts) stays.
    mutating func forgetAll() {
        var policy = self.policy
        policy.removeAll()
        self = DiskIndex(policy: policy, sketchSeed: sketchSeed)
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
