/// How large `AdmissionPolicy`'s window should be, learnt from the keys asked again soon
/// after they were let go: a recency-biased trace wants a large window (up to the whole
/// budget: plain LRU), a frequency-biased one a small window and a large main part.
///
/// ARC's adaptation (Megiddo and Modha, FAST 2003) over W-TinyLFU's two parts: a miss on a
/// key the window let go (`GhostKeys`) grows the window by that key's cost, a miss on a key
/// the main part pushed out shrinks it, each scaled by how many more ghosts the other side
/// holds (the rarer signal counts for more). Hill climbing on the hit rate (Caffeine's, and
/// this type's before) could not tell a better split from a trace's own swings: at a period
/// of one request per entry it wandered (Zipf settled at a 40–50 % window where 1 % misses
/// least, lirs-sprite at 20 % near 15 % where it needs 80 %: 1.27× LRU's misses), and at
/// ten per entry it took a few periods in all on a 150,000-request trace.
/// The work is a table look-up on a miss and one on each key let go: never on a hit.
struct WindowClimber {
    static let smallestShare = 0.01
    /// A window key asked again grows the window by this many times its cost, a main-part
    /// key shrinks it by `shrinking`: growing faster than shrinking holds the window large
    /// through the bursts of a recency-biased trace (lirs-sprite at 20 %: 0.999× LRU's
    /// misses, against 1.03× with both at 1), and steps under 1 keep it steadier.
    static let growing = 1.2
    static let shrinking = 0.7

    private var ghosts = GhostKeys()

    /// Remembers a key let go: from the window's side (it lost its contest, or was evicted
    /// from the window) or from the main part.
    mutating func letGo(hash: Int, fromWindow: Bool) {
        ghosts.add(hash, from: fromWindow ? .window : .main)
    }

    /// On a miss of a key costing `cost` (the tier holds `entries`): the bytes the window
    /// should grow by (below zero: shrink), 0 when the key was not let go lately.
    mutating func missed(hash: Int, cost: Int, entries: Int) -> Int {
        ghosts.ensureCapacity(entries)
        guard let side = ghosts.take(hash) else { return 0 }
        let (window, main) = (Double(ghosts.counts.window), Double(ghosts.counts.main))
        switch side {
        case .window: return Int(Double(cost) * Self.growing * max(1, main / max(1, window)))
        case .main: return -Int(Double(cost) * Self.shrinking * max(1, window / max(1, main)))
        }
    }
}
