/// How large `AdmissionPolicy`'s window should be, learnt from the hit rate: a fixed 1 %
/// window refuses the recent answers a recency-biased trace asks again (issue 96: 1.94×
/// LRU's misses on cache2k-orm-busy at 1 %), while a frequency-biased one wants it small.
///
/// Hill climbing, as described in "Adaptive Software Cache Management" (Einziger et al.,
/// Middleware 2018): after each sample period the window's share moves one step; the
/// direction is kept while the hit rate rose and reversed when it fell; the step shrinks
/// by 2 % a period so the split settles, and starts again at its full size when the hit
/// rate jumps by 5 points (the trace changed). The tier counts hits and misses; the work
/// of a period's end is a few arithmetic operations, on a miss.
struct WindowClimber {
    static let initialStep = 0.0625
    static let stepDecay = 0.98
    static let restartJump = 0.05
    static let smallestShare = 0.01
    static let largestShare = 0.8
    /// A period is one request per entry held, at least 300: ten per entry (the paper's)
    /// moved too slowly to follow cache2k-orm-busy (1.52× LRU's misses at 1 %, against 1.17).
    static let periodFloor = 300

    /// The window's part of the budget.
    private(set) var share = WindowClimber.smallestShare
    private var step = WindowClimber.initialStep
    private var hits = 0
    private var misses = 0
    private var previousHitRate: Double?

    /// Counts a hit (the gated path: one increment).
    @inline(__always)
    mutating func hit() { hits &+= 1 }

    /// Counts a miss; at the end of a period of `period` requests, moves `share` and says so.
    mutating func miss(period: Int) -> Bool {
        misses += 1
        guard hits + misses >= period else { return false }
        let hitRate = Double(hits) / Double(hits + misses)
        hits = 0
        misses = 0
        defer { previousHitRate = hitRate }
        guard let previousHitRate else { return false }
        let change = hitRate - previousHitRate
        let amount = change >= 0 ? step : -step
        step = abs(change) >= Self.restartJump ? (amount >= 0 ? Self.initialStep : -Self.initialStep) : amount * Self.stepDecay
        let moved = min(Self.largestShare, max(Self.smallestShare, share + amount))
        guard moved != share else { return false }
        share = moved
        return true
    }
}
