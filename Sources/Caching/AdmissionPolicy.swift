/// Which entries a tier keeps within its byte budget: W-TinyLFU, weighing how often a key
/// was asked (`FrequencySketch`) as well as how recently.
///
/// A new entry goes into a window kept in recency order (1 % of the budget at first, then
/// as `WindowClimber` learns from the keys asked again after they were let go, up to all
/// of it: plain LRU, when recency is all that pays); what leaves the window, and an entry
/// too large for it, must win its place in the main part: it is kept only when it was
/// asked more often than the entries it would push out, summed (so a large answer cannot
/// push out many small ones asked more). The main part is a
/// segmented LRU: an entry asked again while on probation moves to the protected segment
/// (80 % of the main part). A scan of keys asked once fills the window and dies there
/// (its keys are not asked again, so they do not move the window).
///
/// The tier numbers its entries (slots); this keeps, per slot, the key's hash, its cost
/// and its place in one of three lists linked by index. It never allocates on a hit.
/// The memory and disk tiers both keep their entries by it: what differs between them
/// (the disk writes in the background, lists its files at start) is in the calls they make.
struct AdmissionPolicy {
    enum Queue: UInt8 { case window, probation, protected }

    private struct Node {
        var hash = 0
        var cost = 0
        var newer = AdmissionPolicy.none
        var older = AdmissionPolicy.none
        var queue = Queue.window
    }

    private struct End {
        var newest = AdmissionPolicy.none
        var oldest = AdmissionPolicy.none
        var bytes = 0
    }

    static let none: Int32 = -1
    /// What the policy spends per slot.
    static var nodeStride: Int { MemoryLayout<Node>.stride }
    /// A candidate asked this often that loses anyway gets in one time in 128: a key whose
    /// victim's counters were raised by collisions (or by an attacker who found some)
    /// cannot be kept out for ever.
    static let warmFrequency = 6

    /// What the entries may take now: the disk tier lowers it while spool files hold room,
    /// and leaves it unbounded while its start-up listing has not counted what is on disk.
    var budget: Int
    /// The budget the window's share is of (the disk tier's `budget` is unbounded at start).
    let plannedBudget: Int
    private(set) var windowBudget: Int
    private(set) var protectedBudget: Int
    private var climber = WindowClimber()
    /// Off, the window stays at 1 % (the replay tests compare the two).
    var adaptive = true
    private var nodes: [Node] = []
    private var window = End(), probation = End(), protected = End()
    private(set) var sketch: FrequencySketch
    private var random: UInt64
    private(set) var bytes = 0
    /// Entries pushed out to make room.
    private(set) var evictions = 0
    /// Entries that lost their contest for a place (and were let go).
    private(set) var rejections = 0
    /// The slots let go by the latest `insert`, for the tier to free (kept, so no call allocates it anew).
    private(set) var released: [Int32] = []

    /// The window's least share of a budget: 1 %.
    static func window(of budget: Int) -> Int { budget / 100 }

    init(budget: Int, seed: UInt64) {
        self.budget = budget
        plannedBudget = budget
        windowBudget = Self.window(of: budget)
        protectedBudget = (budget - windowBudget) / 5 * 4
        sketch = FrequencySketch(entries: 0)
        random = seed | 1
    }

    func cost(_ slot: Int32) -> Int { nodes[Int(slot)].cost }
    func queue(_ slot: Int32) -> Queue { nodes[Int(slot)].queue }

    /// Counts an access to a key without offering it: one read before it is placed (the disk
    /// tier's write line), or, in tests, a victim's counters raised as collisions would.
    mutating func record(hash: Int) { sketch.increment(hash) }

    /// Counts an access to a key about to be offered, and says whether an entry of `cost`,
    /// were it placed now, would be kept: always, when it fits the window; else only when it
    /// wins its contest. Nothing moves: the disk tier asks before it writes a file, so a
    /// large answer that would lose is never written. It then places what it wrote with
    /// `insert(counted: true)`, which contests it again against what is there by then (a
    /// burst of answers judged at once must not all get in on the same room). `entries` is
    /// how many the tier holds.
    mutating func admits(hash: Int, cost: Int, entries: Int) -> Bool {
        sketch.ensureCapacity(entries)
        sketch.increment(hash)
        countMiss(hash: hash, cost: cost, entries: entries)
        guard cost > windowBudget, bytes + cost > budget else { return true }
        guard victims(for: sketch.frequency(hash), need: bytes + cost - budget) != nil else {
            rejections += 1
            return false
        }
        return true
    }

    /// The slot eviction would take next, nil when there is none.
    var nextVictim: Int32? { victim(sparing: Self.none) }

    /// Counts an access to the entry in `slot` and moves it up: constant work.
    @inline(__always)
    mutating func recordHit(_ slot: Int32) {
        sketch.increment(nodes[Int(slot)].hash)
        let queue = nodes[Int(slot)].queue
        switch queue {
        case .window, .protected:
            moveToNewest(slot, in: queue)
        case .probation:
            unlink(slot)
            push(slot, to: .protected)
            // The protected segment's oldest go back on probation (the one just moved stays).
            while protected.bytes > protectedBudget, protected.oldest != slot {
                let demoted = protected.oldest
                unlink(demoted)
                push(demoted, to: .probation)
            }
        }
    }

    /// Places a new entry (its slot free in this policy), then lets go of what the budget
    /// cannot hold: the entries pushed out and the candidates that lost, in `released`,
    /// which holds `slot` itself when it lost at once. `entries` is how many the tier holds.
    /// A newer answer `replacing` one the tier held takes its place in that queue without a
    /// contest: the key has earned it (a refresh of a hot entry must not drop it). One
    /// `counted` by `admits` already is not counted again.
    mutating func insert(_ slot: Int32, hash: Int, cost: Int, entries: Int, replacing: Queue? = nil, counted: Bool = false) {
        released.removeAll(keepingCapacity: true)
        if !counted {
            sketch.ensureCapacity(entries)
            sketch.increment(hash)
            if replacing == nil { countMiss(hash: hash, cost: cost, entries: entries) }
        }
        makeNode(slot, hash: hash, cost: cost)
        if let replacing {
            push(slot, to: replacing == .window && cost > windowBudget ? .probation : replacing)
        } else if cost > windowBudget {
            contest(slot, fromWindow: false)
        } else {
            push(slot, to: .window)
        }
        while window.bytes > windowBudget {
            let candidate = window.oldest
            unlink(candidate)
            contest(candidate, fromWindow: true)
        }
        while protected.bytes > protectedBudget, protected.oldest != slot {
            let demoted = protected.oldest
            unlink(demoted)
            push(demoted, to: .probation)
        }
        evictOverBudget(sparing: slot)
    }

    /// Places an entry without counting it, contesting or evicting: the disk tier's files
    /// found at start go behind the others (`oldest`, on probation: nothing is known of how
    /// often they were asked), and one read before the listing placed it goes in `queue`
    /// as its newest. The next `insert` or `shrink` keeps the budgets.
    mutating func place(_ slot: Int32, hash: Int, cost: Int, in queue: Queue, oldest: Bool) {
        makeNode(slot, hash: hash, cost: cost)
        push(slot, to: queue, oldest: oldest)
    }

    /// Evicts until the entries fit `budget` (lowered, or the listing over): the slots let
    /// go are in `released`.
    mutating func shrink() {
        released.removeAll(keepingCapacity: true)
        evictOverBudget(sparing: Self.none)
    }

    /// Forgets every entry (the disk tier's directory went away), keeping what the sketch
    /// learnt and the counts of evictions and rejections.
    mutating func removeAll() {
        nodes = []
        window = End()
        probation = End()
        protected = End()
        bytes = 0
        released = []
    }

    /// Moves the window as `WindowClimber` says, between 1 % and all of the budget (plain
    /// LRU, when recency is all that pays). The window shrinking leaves its oldest to be
    /// judged by the next `insert`: each entry leaves the window once, so it stays constant
    /// work per access, amortized.
    private mutating func countMiss(hash: Int, cost: Int, entries: Int) {
        guard adaptive else { return }
        let change = climber.missed(hash: hash, cost: cost, entries: entries)
        guard change != 0 else { return }
        windowBudget = min(plannedBudget, max(Self.window(of: plannedBudget), windowBudget + change))
        protectedBudget = (plannedBudget - windowBudget) / 5 * 4
    }

    private mutating func makeNode(_ slot: Int32, hash: Int, cost: Int) {
        while nodes.count <= Int(slot) { nodes.append(Node()) }
        nodes[Int(slot)] = Node(hash: hash, cost: cost)
        bytes += cost
    }

    private mutating func evictOverBudget(sparing slot: Int32) {
        while bytes > budget, let victim = victim(sparing: slot) { evict(victim) }
    }

    /// The oldest of each list in turn, passing over `slot` (the entry just placed).
    private func victim(sparing slot: Int32) -> Int32? {
        func oldest(_ end: End) -> Int32 { end.oldest == slot && slot != Self.none ? nodes[Int(slot)].newer : end.oldest }
        var victim = oldest(probation)
        if victim == Self.none { victim = oldest(protected) }
        if victim == Self.none { victim = oldest(window) }
        return victim == Self.none ? nil : victim
    }

    /// Takes the entry in `slot` out (a removal the tier was asked for).
    mutating func remove(_ slot: Int32) {
        unlink(slot)
        bytes -= nodes[Int(slot)].cost
    }

    /// Puts a candidate (in no list) on probation when the budget has room, or when it was
    /// asked more often than the oldest entries of the main part it would push out (those
    /// then go); else lets it go.
    /// One that lost after leaving the window is remembered as the window's ghost, and so
    /// is one too large for it but within a 32nd of the budget (a budget of a few dozen
    /// entries has a window smaller than one). A larger one is not: its return would grow
    /// the window by its cost until a huge answer got in without a contest.
    private mutating func contest(_ candidate: Int32, fromWindow: Bool) {
        guard bytes > budget else { return push(candidate, to: .probation) }
        guard let victims = victims(for: sketch.frequency(nodes[Int(candidate)].hash), need: bytes - budget) else {
            rejections += 1
            if adaptive, fromWindow || nodes[Int(candidate)].cost <= plannedBudget / 32 {
                climber.letGo(hash: nodes[Int(candidate)].hash, fromWindow: true)
            }
            bytes -= nodes[Int(candidate)].cost
            released.append(candidate)
            return
        }
        for _ in 0..<victims { evict(probation.oldest != Self.none ? probation.oldest : protected.oldest) }
        push(candidate, to: .probation)
    }

    /// How many of the main part's oldest entries a candidate asked `frequency` times pushes
    /// out to free `need` bytes; nil when it loses (they were asked as often, summed).
    private mutating func victims(for frequency: Int, need: Int) -> Int? {
        var freed = 0, asked = 0, victims = 0
        var victim = probation.oldest != Self.none ? probation.oldest : protected.oldest
        while freed < need, victim != Self.none, asked < frequency {
            freed += nodes[Int(victim)].cost
            asked += sketch.frequency(nodes[Int(victim)].hash)
            victims += 1
            victim = nodes[Int(victim)].newer != Self.none || nodes[Int(victim)].queue == .protected
                ? nodes[Int(victim)].newer : protected.oldest
        }
        let wins = freed >= need && (asked < frequency || (victims == 1 && frequency >= Self.warmFrequency && nextRandom() & 127 == 0))
        return wins ? victims : nil
    }

    private mutating func evict(_ slot: Int32) {
        if adaptive { climber.letGo(hash: nodes[Int(slot)].hash, fromWindow: nodes[Int(slot)].queue == .window) }
        remove(slot)
        evictions += 1
        released.append(slot)
    }

    private mutating func nextRandom() -> UInt64 {
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        return random
    }

    // MARK: Lists linked by index

    private subscript(queue: Queue) -> End {
        get {
            switch queue {
            case .window: window
            case .probation: probation
            case .protected: protected
            }
        }
        set {
            switch queue {
            case .window: window = newValue
            case .probation: probation = newValue
            case .protected: protected = newValue
            }
        }
    }

    /// `unlink` and `push` to the same list in one pass (a hit's move: gated path).
    @inline(__always)
    private mutating func moveToNewest(_ slot: Int32, in queue: Queue) {
        var end = self[queue]
        // The newest already (a key asked again and again): nothing moves.
        guard end.newest != slot else { return }
        let (newer, older) = (nodes[Int(slot)].newer, nodes[Int(slot)].older)
        if older != Self.none { nodes[Int(older)].newer = newer } else { end.oldest = newer }
        nodes[Int(newer)].older = older  // not the newest, so it has a newer neighbour
        nodes[Int(slot)].newer = Self.none
        nodes[Int(slot)].older = end.newest
        nodes[Int(end.newest)].newer = slot
        end.newest = slot
        self[queue] = end
    }

    private mutating func unlink(_ slot: Int32) {
        let node = nodes[Int(slot)]
        var end = self[node.queue]
        if node.older != Self.none { nodes[Int(node.older)].newer = node.newer } else { end.oldest = node.newer }
        if node.newer != Self.none { nodes[Int(node.newer)].older = node.older } else { end.newest = node.older }
        end.bytes -= node.cost
        self[node.queue] = end
        nodes[Int(slot)].newer = Self.none
        nodes[Int(slot)].older = Self.none
    }

    /// Links `slot` at the newest end of `queue` (at its oldest end, `oldest`).
    private mutating func push(_ slot: Int32, to queue: Queue, oldest: Bool = false) {
        var end = self[queue]
        nodes[Int(slot)].queue = queue
        if oldest {
            nodes[Int(slot)].older = Self.none
            nodes[Int(slot)].newer = end.oldest
            if end.oldest != Self.none { nodes[Int(end.oldest)].older = slot } else { end.newest = slot }
            end.oldest = slot
        } else {
            nodes[Int(slot)].newer = Self.none
            nodes[Int(slot)].older = end.newest
            if end.newest != Self.none { nodes[Int(end.newest)].newer = slot } else { end.oldest = slot }
            end.newest = slot
        }
        end.bytes += nodes[Int(slot)].cost
        self[queue] = end
    }
}
