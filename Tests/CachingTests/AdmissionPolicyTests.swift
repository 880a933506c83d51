import Foundation
import HTTPCore
import Bodies
import Testing
@testable import Caching

/// The frequency sketch and W-TinyLFU admission on their own, clock-free and deterministic,
/// and the attacks on them: counters pumped up, collisions, scans and huge objects.
@Suite(.timeLimit(.minutes(1))) struct FrequencySketchTests {
    @Test func countsAccessesUpToFifteen() {
        var sketch = FrequencySketch(entries: 64)
        for _ in 0..<5 { sketch.increment(42) }
        #expect(sketch.frequency(42) == 5)
        for _ in 0..<100 { sketch.increment(42) }
        #expect(sketch.frequency(42) == FrequencySketch.maximumCount)
        #expect(sketch.frequency(43) <= 1, "a key never asked reads 0 unless all four of its counters collide")
    }

    /// A key pumped up to the top (an attacker cycling its own keys) does not stay there: once
    /// the table has seen its sample of additions, every counter is halved.
    @Test func countersAreHalvedAsTheyAge() {
        var sketch = FrequencySketch(entries: 64)
        for _ in 0..<20 { sketch.increment(7) }
        #expect(sketch.frequency(7) == 15)
        var other = 1_000
        while sketch.halvings == 0 {
            sketch.increment(other)
            other += 1
        }
        #expect(sketch.frequency(7) == 7)
        while sketch.halvings < 3 {
            sketch.increment(other)
            other += 1
        }
        #expect(sketch.frequency(7) <= 2)
    }

    /// Count-min: a collision can only overstate a key's count, never hide its accesses.
    @Test func collisionsNeverUnderstateACount() {
        var sketch = FrequencySketch(entries: 64)
        for key in 0..<3_000 { sketch.increment(key) }  // far more keys than counters per row
        for _ in 0..<4 { sketch.increment(99_999) }
        #expect(sketch.frequency(99_999) >= 4)
    }

    /// Full to what it is sized for, the table seldom credits a key nobody asked: about 2 %
    /// of them would read 1 or more with one word per key, about 0.2 % with four.
    @Test func aFullSketchSeldomCreditsAKeyNeverAsked() {
        let entries = 8_192
        var sketch = FrequencySketch(entries: entries)
        for key in 0..<entries { sketch.increment(key) }
        let credited = (1_000_000..<1_010_000).count { sketch.frequency($0) > 0 }
        #expect(credited < 60, "\(credited) of 10,000 keys never asked read as asked")
    }
}

@Suite(.timeLimit(.minutes(1))) struct AdmissionPolicyTests {
    private func item(_ size: Int) -> MemoryTier.Item {
        let stored = entry([], body: String(repeating: "x", count: size))
        return .response(StoredResponse(entry: stored, rendered: .plain(stored)))
    }

    private func key(_ n: Int, _ prefix: String = "k") -> CacheKey { CacheKey(stringLiteral: prefix + String(100_000 + n)) }

    /// Whether the tier holds `key`, without counting an access.
    private func holds(_ memory: MemoryTier, _ key: CacheKey) -> Bool { memory.items { held, _ in held == key }.count == 1 }

    /// What a cache does on a request: look up, and on a miss offer what the origin sent.
    @discardableResult
    private func ask(_ memory: MemoryTier, _ key: CacheKey, size: Int = 100) -> Bool {
        if memory.get(key) != nil { return true }
        memory.set(key, item(size))
        return false
    }

    /// One hundred entries' worth of budget, the first fifty keys asked often, then a burst
    /// of one-time keys five times the cache's size: the hot keys all stay.
    @Test func aScanOfOneTimeKeysLeavesTheHotSetInPlace() {
        let memory = MemoryTier(budget: 100 * MemoryTier.cost(of: item(100), key: key(0)), seed: 1)
        for _ in 0..<8 { for n in 0..<50 { ask(memory, key(n)) } }
        for n in 0..<500 { ask(memory, key(n, "s")) }
        // Hashes are seeded anew in each process: a scan key whose counters happen to share a
        // hot key's (a count-min estimate only overstates) may win one contest. An LRU keeps none.
        let kept = (0..<50).filter { holds(memory, key($0)) }.count
        #expect(kept >= 48, "lost \((0..<50).filter { !holds(memory, key($0)) })")
        #expect(memory.rejections >= 350, "the scan's keys lost their contests")
        #expect(memory.bytes <= memory.budget)
    }

    /// A victim whose counters collisions (or an attacker who found some) have pushed to the
    /// top: a key asked often still gets in, through the one-in-128 admission of warm keys.
    @Test func aHotKeyIsNotKeptOutForEverByAVictimsInflatedCounters() {
        var policy = AdmissionPolicy(budget: 1_000, seed: 99)  // a window of 10 bytes: every entry contests
        for slot in 0..<10 { policy.insert(Int32(slot), hash: slot, cost: 100, entries: slot + 1) }
        #expect(policy.bytes == 1_000 && policy.released.isEmpty)
        for _ in 0..<20 { policy.record(hash: 0) }  // the oldest entry's counters, all at 15
        for _ in 0..<8 { policy.record(hash: 500) }
        var tries = 0
        repeat {
            tries += 1
            policy.insert(10, hash: 500, cost: 100, entries: 11)
        } while policy.released == [10] && tries < 5_000
        #expect(tries > 1 && tries < 5_000, "admitted after \(tries) tries")
        #expect(policy.released == [0], "and what it displaced was the inflated victim")
    }

    /// A large answer asked once cannot push out many small ones asked more, though it fits
    /// the budget; nor can one asked as often as each of them (it weighs against their sum).
    @Test func aHugeObjectCannotEvictTheHotSmallSet() {
        let small = MemoryTier.cost(of: item(100), key: key(0))
        let memory = MemoryTier(budget: 200 * small, seed: 2)
        for _ in 0..<3 { for n in 0..<200 { ask(memory, key(n)) } }
        let huge = key(0, "h")
        for _ in 0..<3 { #expect(memory.offer(huge, item(100 * 150)) == .notAdmitted) }  // each offer counts as asked
        #expect(memory.count == 200 && memory.rejections == 3)
        #expect((0..<200).allSatisfy { holds(memory, key($0)) })
    }

    /// The same large answer gets in once it is asked more than what it would push out.
    @Test func aLargeObjectAskedMoreThanItsVictimsGetsIn() {
        let small = MemoryTier.cost(of: item(100), key: key(0))
        let memory = MemoryTier(budget: 20 * small, seed: 3)
        for n in 0..<20 { ask(memory, key(n)) }  // each asked once (and stored): 1 apiece
        let large = key(0, "l")
        var offers = 1
        while memory.offer(large, item(100 * 3)) == .notAdmitted, offers < 12 { offers += 1 }  // each a miss, asked again
        #expect(offers > 1 && offers < 12, "kept at offer \(offers)")
        #expect(memory.get(large) != nil && memory.bytes <= memory.budget)
    }

    /// Someone cycling through many keys, each asked to the counters' top, fills the tier
    /// with them; once they stop, the keys really asked take it back within a few rounds, as
    /// the sketch halves the pumped counts (without the halving they would stay at 15, and
    /// keys asked as often would lose every tie).
    @Test func keysPumpedUpByACyclingAttackerFade() {
        let memory = MemoryTier(budget: 100 * MemoryTier.cost(of: item(100), key: key(0)), seed: 7)
        for _ in 0..<16 { for n in 0..<150 { ask(memory, key(n, "a")) } }
        #expect((0..<150).filter { holds(memory, key($0, "a")) }.count >= 90)
        var rounds = 0
        while (0..<50).contains(where: { !holds(memory, key($0)) }), rounds < 60 {
            for n in 0..<50 { ask(memory, key(n)) }
            rounds += 1
        }
        #expect(rounds < 60, "the hot set was back after \(rounds) rounds")
    }

    /// A newer answer for a key the tier holds (a stale-while-revalidate refresh, a 200 after
    /// revalidation) takes its place without a contest, even one it would lose as a newcomer.
    @Test func aRefreshedEntryKeepsItsPlace() {
        let memory = MemoryTier(budget: 20 * MemoryTier.cost(of: item(100), key: key(0)), seed: 6)
        for _ in 0..<3 { for n in 0..<20 { ask(memory, key(n)) } }
        #expect(memory.offer(key(0, "n"), item(5_000)) == .notAdmitted, "a newcomer as large loses")
        #expect(memory.offer(key(5), item(5_000)) == .kept)
        #expect(holds(memory, key(5)) && memory.count < 20 && memory.bytes <= memory.budget)
    }

    /// The replay `make test` runs: Zipf(0.9) over 5,000 keys with a burst of one-time keys
    /// in the middle, at a budget of 100 entries (2 % of the keys). The tier must miss
    /// clearly less than an exact LRU holding as many entries: a fall back to LRU reads 1.0,
    /// the policy with its window sized by ghosts 0.859-0.866 (seven processes, each its own
    /// hash seeds), so the bound sits past that spread and still fails a fall back to LRU.
    @Test func aZipfTraceWithAScanMissesLessThanExactLRU() {
        let trace = ReplayTrace.zipfWithScan(keys: 5_000, before: 20_000, scan: 3_000, after: 20_000, seed: 96)
        let entries = 100
        let memory = MemoryTier(budget: entries * MemoryTier.cost(of: item(100), key: key(0)), seed: 4)
        var misses = 0
        for key in trace where !ask(memory, key) { misses += 1 }
        #expect(memory.count == entries)

        let lruMisses = ExactLRU.misses(of: trace, capacity: entries)
        let ratio = Double(misses) / Double(lruMisses)
        #expect(ratio <= 0.95, "misses \(misses) against LRU's \(lruMisses): \(ratio)")
        print("replay: W-TinyLFU \(misses) misses, LRU \(lruMisses), of \(trace.count) requests (\(ratio))")
    }
}

/// The replays' trace: Zipf(0.9) requests over `keys` keys, with a burst of `scan` one-time
/// keys between the `before` and `after` requests. The same for each seed.
enum ReplayTrace {
    static func key(_ n: Int, _ prefix: String = "k") -> CacheKey { CacheKey(stringLiteral: prefix + String(100_000 + n)) }

    static func zipfWithScan(keys: Int, before: Int, scan: Int, after: Int, seed: UInt64) -> [CacheKey] {
        var random = SeededRandom(seed: seed)
        var cumulative: [Double] = []
        var total = 0.0
        for rank in 1...keys {
            total += 1 / pow(Double(rank), 0.9)
            cumulative.append(total)
        }
        func zipf() -> Int {
            let target = Double(random.below(1 << 30)) / Double(1 << 30) * total
            var low = 0, high = keys - 1
            while low < high {
                let middle = (low + high) / 2
                if cumulative[middle] < target { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var trace: [CacheKey] = []
        for _ in 0..<before { trace.append(key(zipf())) }
        for n in 0..<scan { trace.append(key(n, "s")) }
        for _ in 0..<after { trace.append(key(zipf())) }
        return trace
    }
}

/// Exact LRU at a number of entries: what the replays compare against.
struct ExactLRU {
    let capacity: Int
    private var lastUse: [CacheKey: Int] = [:]
    private var clock = 0

    init(capacity: Int) { self.capacity = capacity }

    /// The misses of an exact LRU of `capacity` entries over `trace`.
    static func misses(of trace: [CacheKey], capacity: Int) -> Int {
        var lru = ExactLRU(capacity: capacity)
        return trace.filter { !lru.access($0) }.count
    }

    mutating func access(_ key: CacheKey) -> Bool {
        clock += 1
        let hit = lastUse[key] != nil
        lastUse[key] = clock
        if lastUse.count > capacity, let oldest = lastUse.min(by: { $0.value < $1.value }) { lastUse[oldest.key] = nil }
        return hit
    }
}

extension FrequencySketchTests {
    /// A table grown as its tier fills keeps every count it had.
    @Test func growingKeepsWhatWasCounted() {
        var sketch = FrequencySketch(entries: 64)
        for key in 0..<40 { for _ in 0..<(key % 7 + 1) { sketch.increment(key) } }
        let before = (0..<40).map { sketch.frequency($0) }
        sketch.ensureCapacity(1_000)
        #expect((0..<40).map { sketch.frequency($0) } == before)
    }
}
