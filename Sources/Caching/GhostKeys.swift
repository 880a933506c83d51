/// The keys a tier let go lately, by hash, each with the side it left from: the window (it
/// lost its contest, or the window had to give it up) or the main part (it was pushed out).
/// A miss on one says which part, had it been larger, would have answered it; that is what
/// moves the window (`WindowClimber`).
///
/// A ring of hashes, oldest overwritten first, with a table from hash to place and side: a
/// key let go again moves to the newest place. About half as many as the tier holds, so it
/// costs about 16 bytes of ring and table per entry; growing it (a few times, as a tier
/// fills) is the only time it allocates.
struct GhostKeys {
    enum Side: Int { case window = 0, main = 1 }

    private var ring: [Int] = []
    private var next = 0
    /// A hash's place in `ring`, shifted left one bit, its side in the low bit.
    private var places: [Int: Int] = [:]
    /// How many keys on each side (`Side.rawValue`) are remembered now.
    private(set) var counts = (window: 0, main: 0)
    private(set) var capacity = 0
    /// What a tier spends on them per entry it holds: half a ghost, its hash in the ring and
    /// its table entry (16 bytes, at three quarters full at most), rounded up.
    static let bytesPerEntry = 16

    /// One ghost for every two entries the tier holds: with one for each, the window grew
    /// on the returns of keys a small window was right to let go (Zipf(0.7) at 5 %: 0.937×
    /// LRU's misses against 0.924; cache2k-orm-busy at 5 %: up to 1.014× against 1.006).
    static func capacity(for entries: Int) -> Int { max(64, entries / 2) }

    /// Grows the ring (by a quarter at least) while the tier holds more than it is sized
    /// for, keeping its keys and their order.
    mutating func ensureCapacity(_ entries: Int) {
        let wanted = Self.capacity(for: entries)
        guard capacity == 0 || wanted > capacity + capacity / 4 else { return }
        let kept = (0..<ring.count).compactMap { offset -> (Int, Side)? in
            let position = ring.count < capacity ? offset : (next + offset) % capacity
            let hash = ring[position]
            guard let place = places[hash], place >> 1 == position else { return nil }
            return (hash, Side(rawValue: place & 1)!)
        }
        ring = []
        ring.reserveCapacity(wanted)
        places = Dictionary(minimumCapacity: wanted)
        counts = (0, 0)
        capacity = wanted
        next = 0
        for (hash, side) in kept { add(hash, from: side) }
    }

    /// Remembers a key let go, forgetting the oldest when full.
    mutating func add(_ hash: Int, from side: Side) {
        guard capacity > 0 else { return }
        if let old = places.removeValue(forKey: hash) { count(old & 1, by: -1) }
        if ring.count < capacity {
            ring.append(hash)
        } else {
            let gone = ring[next]
            // A stale place (its key let go again since, and placed anew) is only overwritten.
            if let place = places[gone], place >> 1 == next {
                places[gone] = nil
                count(place & 1, by: -1)
            }
            ring[next] = hash
        }
        places[hash] = next << 1 | side.rawValue
        count(side.rawValue, by: 1)
        next = next + 1 == capacity ? 0 : next + 1
    }

    /// The side a key asked again was let go from, forgetting it; nil when not remembered.
    mutating func take(_ hash: Int) -> Side? {
        guard let place = places.removeValue(forKey: hash) else { return nil }
        count(place & 1, by: -1)
        return Side(rawValue: place & 1)
    }

    private mutating func count(_ side: Int, by change: Int) {
        if side == 0 { counts.window += change } else { counts.main += change }
    }
}
