/// How often each key was asked lately, in a small fixed table: TinyLFU's count-min sketch.
///
/// Four 4-bit counters per key, picked by a mix of the key's hash; a key's frequency is the
/// least of its four, so a collision can only overstate it, never understate it. Every ten
/// additions per table word all counters are halved: what was asked long ago fades, and
/// nobody can pump a key's counter up once and keep it there (counters also stop at 15).
/// It costs 8 bytes per entry it is sized for, and an access is two multiplications and
/// four counter updates, with no allocation.
struct FrequencySketch {
    /// Sixteen 4-bit counters per word.
    private var table: [UInt64]
    /// Counters set since the last halving; at `sampleSize`, all are halved.
    private var additions = 0
    private var sampleSize: Int
    private var counterMask: UInt64
    /// Which halving this is (tests; the ageing is what keeps the counts recent).
    private(set) var halvings = 0

    static let maximumCount = 15
    static let largestTable = 1 << 22

    /// A sketch for about `entries` keys (at least 64).
    init(entries: Int) {
        let words = Self.words(for: entries)
        table = [UInt64](repeating: 0, count: words)
        sampleSize = 10 * words
        counterMask = UInt64(words * 16 - 1)
    }

    private static func words(for entries: Int) -> Int {
        var words = 64
        while words < entries, words < largestTable { words <<= 1 }
        return words
    }

    /// Doubles the table while the tier holds more keys than it is sized for. Nothing counted
    /// is lost: a key's counter index gains one bit, so each counter is copied to both the
    /// places it may now be at (a reset instead let a scan push out a hot set while the
    /// tier filled). It happens a few times as a tier fills, and allocates only then.
    mutating func ensureCapacity(_ entries: Int) {
        while entries > table.count, table.count < Self.largestTable {
            table += table
            sampleSize *= 2
            counterMask = counterMask << 1 | 1
        }
    }

    /// The key's estimated count of recent accesses, 0 through 15.
    func frequency(_ hash: Int) -> Int {
        let (first, second) = Self.mixes(hash)
        return min(min(count(first & counterMask), count((first >> 32) & counterMask)),
                   min(count(second & counterMask), count((second >> 32) & counterMask)))
    }

    /// Counts one access to the key.
    mutating func increment(_ hash: Int) {
        var added = false
        let (first, second) = Self.mixes(hash)
        added = bump(first & counterMask) || added
        added = bump((first >> 32) & counterMask) || added
        added = bump(second & counterMask) || added
        added = bump((second >> 32) & counterMask) || added
        guard added else { return }
        additions += 1
        if additions >= sampleSize { halve() }
    }

    private mutating func bump(_ counter: UInt64) -> Bool {
        let word = Int(counter >> 4), shift = (counter & 15) << 2
        guard (table[word] >> shift) & 0xF < 0xF else { return false }
        table[word] &+= 1 << shift
        return true
    }

    /// Halves every counter (each shifted right within its own four bits).
    private mutating func halve() {
        for word in table.indices { table[word] = (table[word] >> 1) & 0x7777_7777_7777_7777 }
        additions /= 2
        halvings += 1
    }

    private func count(_ counter: UInt64) -> Int { Int((table[Int(counter >> 4)] >> ((counter & 15) << 2)) & 0xF) }

    /// Two 64-bit mixes of the hash (SplitMix64's finaliser): four 32-bit counter indexes.
    private static func mixes(_ hash: Int) -> (UInt64, UInt64) {
        func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let first = mix(UInt64(bitPattern: Int64(hash)))
        return (first, mix(first))
    }
}
