import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import Bodies
import LoopGuests
import Locking

/// The write queue: entries wait for the writer thread in a line bounded in bytes, and a miss
/// that finds the line full waits on its loop for the writer to catch up rather than have its
/// entry go unwritten, so a storm of misses is answered at the rate the disk keeps it.
extension DiskTier {

    /// Bytes of encoded entries waiting to be written, unless told otherwise: what waits is
    /// bounded however large the memory tier is. Measured against 32 MiB: 600 answers of 1 MiB
    /// over 8 connections peaked at 73–76 MiB of RSS against 97–106 (`FaultSuiteTests`).
    public static let defaultWriteQueueLimit = 16 << 20

    /// How long a miss waits on its loop for the write queue to come back under its limit
    /// before its answer goes out anyway. Its entry is in line either way; past this wait the
    /// disk counts as stalled, and later misses are kept in memory only until the queue is
    /// back under its limit.
    public static let defaultRoomWait: Duration = .milliseconds(100)

    /// Stores the entry, with what the route rendered from it when given, in the background;
    /// `waitForWrites` waits for every write started so far. Past the write queue's byte
    /// limit the entry is not written (and counted). Returns whether it was taken for writing.
    /// `whenDone` is called once the write is over, whatever its outcome (at once when skipped).
    @discardableResult
    public func write(_ key: CacheKey, _ entry: CacheEntry, rendition: Rendition? = nil,
                      whenDone: (@Sendable () -> Void)? = nil) -> Bool {
        guard case .queued = admit(key, entry, rendition, mayOverfill: false, whenDone: whenDone) else {
            whenDone?()
            return false
        }
        return true
    }

    /// What became of an entry offered for writing.
    public enum Placement: Sendable, Equatable {
        /// In line for the writer.
        case queued
        /// Not written: the write queue was full, or the entry larger than the budget.
        case skipped
        /// Not written: larger than the policy's window, and asked less often than what it
        /// would have pushed out (`AdmissionPolicy`).
        case notAdmitted
    }

    /// As `write`, for an entry read back from this tier and kept again (with the rendition
    /// the route makes now): written only if its file is still indexed when its turn comes, so
    /// a purge or eviction queued since the read is not undone.
    @discardableResult
    public func rewrite(_ key: CacheKey, _ entry: CacheEntry, rendition: Rendition) -> Bool {
        if case .queued = admit(key, entry, rendition, mayOverfill: false, replacing: true) { return true }
        return false
    }

    /// As `write`, but on an event loop a full queue takes the entry even so, and the caller
    /// waits, up to `patience`, until the writer brings the queue back under its limit: the
    /// miss's answer is held back instead of its entry being dropped (nginx's workers, which
    /// write their own files, slow down the same way). Off a loop, or while the disk is
    /// stalled, a full queue skips the entry as `write` does. Only waiting misses add past the
    /// limit, each one entry it holds in memory for its answer anyway, and never past twice it.
    public func write(_ key: CacheKey, _ entry: CacheEntry, rendition: Rendition? = nil,
                      waitingUpTo patience: Duration) async -> Bool {
        await offer(key, entry, rendition: rendition, waitingUpTo: patience) == .queued
    }

    /// As `write(_:_:rendition:waitingUpTo:)`, saying why an entry was not taken.
    public func offer(_ key: CacheKey, _ entry: CacheEntry, rendition: Rendition? = nil,
                      waitingUpTo patience: Duration) async -> Placement {
        guard let reactor = LoopExecutor.reactor else { return admit(key, entry, rendition, mayOverfill: false).placement }
        let admission = admit(key, entry, rendition, mayOverfill: true)
        guard case .queued(let overfilled, _) = admission else { return admission.placement }
        guard overfilled else { return .queued }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: UInt64? = index.withLock { index in
                // The writer may have caught up since the entry was admitted.
                guard index.pendingBytes > writeQueueLimit else { return nil }
                index.waitedWrites += 1
                index.lastRoomWaiter &+= 1
                index.roomWaiters.append((index.lastRoomWaiter, continuation))
                return index.lastRoomWaiter
            }
            guard let id else { return continuation.resume() }
            LoopDeadlines.on(reactor).after(patience) { [self] in giveUpWaiting(id) }
        }
        return .queued
    }

    /// What an entry costs while it waits in line. What waits is the entry itself: naming,
    /// encoding and indexing it happen on the writer thread, since on a miss they would
    /// otherwise run on the loop between the upstream's answer and the caller's. So it costs
    /// the bytes it will be written as, less a body waiting in a file rather than in memory,
    /// and the objects holding them: 20,000 small pass-through answers in line took 811 bytes
    /// of malloc each against 346 encoded (`larder_heap_in_use` before and after).
    static func inLine(_ entry: CacheEntry, encodedSize size: Int) -> Int {
        size - (entry.body.isInMemory ? 0 : entry.body.count) + 512
    }

    /// An entry in line for the writer. Until written it cannot be read from its file, so a key
    /// asked again meanwhile, the memory tier too small or too full to hold it, went to the
    /// upstream again (behind an 8 KiB memory tier, a replay of web07 left the writer 20,000
    /// entries behind and missed 0.62-0.74 at 1 % against 0.555): reads find it here. Filed by
    /// the key's `sketchHash`: SipHash over the key (`hashValue`) cost about 1,000 instructions
    /// more per miss (gate path pass-through-miss). Of two keys sharing one, the later is kept;
    /// `id` tells an entry from a newer one under the same key.
    struct QueuedEntry {
        let id: UInt64
        let key: CacheKey
        let entry: CacheEntry
        let rendition: Rendition?
    }

    /// What `admit` did with an entry.
    private enum Admission {
        /// In line; whether it took the queue past its limit, and whether the policy judged
        /// it already (`DiskIndex.admits`).
        case queued(overfilled: Bool, judged: Bool)
        case skipped
        case notAdmitted

        var placement: Placement {
            switch self {
            case .queued: .queued
            case .skipped: .skipped
            case .notAdmitted: .notAdmitted
            }
        }
    }

    /// Puts the entry in line if the queue has room (or, with `mayOverfill`, if the disk is
    /// not stalled) and, when it is larger than the policy's window, if the policy would keep
    /// it: a large answer that would lose its contest is not written at all (and is contested
    /// again as it is indexed, against what is there by then). Only such an entry is named
    /// here, on the caller's thread (a SHA-256 of the key): a small one enters the policy's
    /// window as the writer indexes it, and is judged as it leaves the window.
    private func admit(_ key: CacheKey, _ entry: CacheEntry, _ rendition: Rendition?, mayOverfill: Bool, replacing: Bool = false,
                       whenDone: (@Sendable () -> Void)? = nil) -> Admission {
        let size = DiskEntryCodec.encodedSize(key: key.text, entry: entry, rendition: rendition)
        let queued = Self.inLine(entry, encodedSize: size)
        let charge = Self.charge(size)
        let judgedName = !replacing && charge > AdmissionPolicy.window(of: budget) ? Self.name(key) : nil
        var queuedID: UInt64?
        let hash = replacing ? 0 : key.sketchHash
        // Under the same lock as the verdict, so a newer answer queued by another loop meanwhile is not taken too.
        var superseded: Supersession?
        let admission: Admission = index.withLock { index in
            // An entry the budget cannot hold would only evict everything else, then itself;
            // one larger than the whole queue would never see it come back under its limit.
            let fits = index.pendingBytes + queued <= writeQueueLimit
            let mayWait = mayOverfill && !index.stalled && index.pendingBytes + queued <= 2 * writeQueueLimit
            guard charge <= budget, queued <= writeQueueLimit, fits || mayWait else {
                index.skippedWrites += 1
                if !replacing { superseded = index.supersedeInLine(key, hash: hash) }
                return .skipped
            }
            // While the listing runs nothing is contested: what is on disk is not counted yet.
            let judging = judgedName != nil && index.loading.phase != .listing
            if judging, let judgedName {
                index.entries.limit = entryBudget
                guard index.entries.admits(judgedName, charge: charge) else {
                    superseded = index.supersedeInLine(key, hash: hash)
                    return .notAdmitted
                }
            }
            index.pendingWrites += 1
            index.pendingBytes += queued
            // A rewrite's entry is readable from its file already.
            if !replacing {
                index.lastQueued &+= 1
                queuedID = index.lastQueued
                index.queued[hash] = QueuedEntry(id: index.lastQueued, key: key, entry: entry, rendition: rendition)
            }
            return .queued(overfilled: !fits, judged: judging)
        }
        guard case .queued(_, let judged) = admission else {
            if let superseded { removeSuperseded(judgedName ?? Self.name(key), hash: hash, superseded) }
            return admission
        }
        let readableID = queuedID
        // On an event loop, the writer thread is woken once the answer is out, not ahead of it.
        let loop = LoopExecutor.reactor
        writes.add(start: loop == nil) { [self] in
            // A rewrite's access was counted by the read it follows.
            writeAdmitted(key, entry, rendition, charged: queued, replacing: replacing, counted: judged || replacing,
                          queued: readableID.map { (hash, $0) })
            whenDone?()
        }
        loop?.afterTurn { [writes] in writes.start() }
        return admission
    }

    /// An answer for a key that is not written still replaces what the tier holds for it, in
    /// line or in a file: once the memory tier let the newer answer go, the older would be
    /// served again, back in time (RFC 9111 §4: a cache uses the most recent response it
    /// has). `Index.supersedeInLine` took it out of the line and marked its writes in line;
    /// here the file leaves the index and is unlinked at once, off the loop but not behind
    /// the writer's backlog (a kill meanwhile would leave it to be listed at the next start),
    /// unless a newer answer was written since (`naming` keeps the two apart). The writer,
    /// after the older writes, lets the mark go.
    private func removeSuperseded(_ name: EntryName, hash: Int, _ superseded: Supersession) {
        let held = index.withLock { index in
            guard superseded.inLine || index.mayHold(name) else {
                if index.superseded[hash] == superseded.mark { index.superseded[hash] = nil }
                return false
            }
            index.forget(name)
            index.pendingWrites += 1
            return true
        }
        guard held else { return }
        reads.async { [self] in
            naming.withLock { _ in
                // Not once a newer answer for the key was written: it is indexed by then.
                guard !index.withLock({ $0.entries.contains(name) }) else { return }
                unlink(path(for: name))
            }
        }
        writes.add(start: true) { [self] in
            let written = index.withLock { index in
                if index.superseded[hash] == superseded.mark { index.superseded[hash] = nil }
                // A newer answer for the key may have been written since.
                return index.entries.contains(name)
            }
            // Again, in line: `waitForWrites` then covers the removal the read queue may not have made yet.
            if !written { unlink(path(for: name)) }
            finishWrite()
        }
    }

    /// A miss's wait for room ran out: its answer goes out, and the disk counts as stalled.
    private func giveUpWaiting(_ id: UInt64) {
        let waiter = index.withLock { index -> CheckedContinuation<Void, Never>? in
            guard let at = index.roomWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            index.stalled = true
            return index.roomWaiters.remove(at: at).resume
        }
        waiter?.resume()
    }

    /// Writes an admitted entry, on the write queue.
    /// Purges run on this queue too, so whether a rewrite's file is still indexed cannot
    /// change between the look and the write.
    private func writeAdmitted(_ key: CacheKey, _ entry: CacheEntry, _ rendition: Rendition?, charged: Int, replacing: Bool,
                               counted: Bool, queued: (hash: Int, id: UInt64)?) {
        let name = Self.name(key)
        let head = DiskIndex.Head(key: key, status: entry.status, headers: entry.headers)
        let wanted = index.withLock { index in replacing ? index.entries.contains(name) : !index.isSuperseded(queued) }
        // An early removal of a superseded file (`removeSuperseded`) takes `naming` too: it
        // cannot unlink this file between its naming and its indexing.
        let victims = naming.withLock { _ in
            let (outcome, size) = wanted ? writeEntry(key, entry, rendition, to: path(for: name)) : (nil, 0)
            return index.withLock { index in
                index.pendingBytes -= charged
                // Indexed under the same lock, or not written: readable from its file or gone.
                if let queued, let at = index.queued.index(forKey: queued.hash), index.queued.values[at].id == queued.id {
                    index.queued.remove(at: at)
                }
                switch outcome {
                case nil:
                    break
                case .written:
                    if index.isSuperseded(queued) { return [name] }
                    index.full = false
                    index.verified.remove(name)
                    if index.loading.phase != .listing { index.entries.limit = entryBudget }
                    // What the policy let go: evicted, or lost its contest (this entry among them,
                    // when it lost at once: its file is removed again).
                    let released = index.entries.insert(name, charge: Self.charge(size), stamp: index.nextStamp(), head: head,
                                                        counted: counted)
                    released.forEach { index.verified.remove($0) }
                    // Its checksum was taken from the body just written: no read need take it again.
                    if size > Self.largestReadWhole, index.entries.contains(name) { index.verified.insert(name) }
                    return released + Self.evict(&index, budget: entryBudget)
                case .full:
                    if !index.full { report("the disk is full: answers are kept in memory only until a write succeeds") }
                    index.full = true
                    index.failedWrites += 1
                case .failed:
                    index.failedWrites += 1
                    report("a cache file could not be written (\(path(for: name))): the answer is kept in memory only")
                }
                // As in `removeSuperseded`: the file this answer was to replace goes with it. A rewrite
                // carries the file's own entry, which stays.
                guard !replacing, outcome != nil else { return [] }
                index.forget(name)
                return [name]
            }
        }
        victims.forEach { unlink(path(for: $0)) }
        finishWrite()
    }

    /// One write in line is over (or a removal counted as one): wakes the misses waiting for
    /// room, and, the line empty, `waitForWrites`.
    private func finishWrite() {
        let (finished, roomWaiters) = index.withLock { index in
            index.pendingWrites -= 1
            var finished: [CheckedContinuation<Void, Never>] = [], room: [CheckedContinuation<Void, Never>] = []
            if index.pendingBytes <= writeQueueLimit {
                (room, index.roomWaiters) = (index.roomWaiters.map(\.resume), [])
                index.stalled = false
            }
            if index.pendingWrites == 0 { (finished, index.writeWaiters) = (index.writeWaiters, []) }
            return (finished, room)
        }
        roomWaiters.forEach { $0.resume() }
        finished.forEach { $0.resume() }
    }

    /// Returns when every write started before the call has finished.
    public func waitForWrites() async {
        await withCheckedContinuation { continuation in
            let idle = index.withLock { index in
                if index.pendingWrites == 0 { return true }
                index.writeWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}

extension DiskTier {
    /// A newer answer for a key that is not written: the id of the last write in line then
    /// (that write and every older one are superseded), and whether the key's answer was
    /// waiting in the line.
    struct Supersession {
        let mark: UInt64
        let inLine: Bool
    }
}

extension DiskTier.Index {
    /// Takes `key`'s answer out of the line, where reads would find it, and marks every write
    /// in line so far as superseded for the key.
    mutating func supersedeInLine(_ key: CacheKey, hash: Int) -> DiskTier.Supersession {
        let inLine = queued[hash]?.key == key
        if inLine { queued[hash] = nil }
        superseded[hash] = lastQueued
        return DiskTier.Supersession(mark: lastQueued, inLine: inLine)
    }

    /// Whether a write in line (its key's hash and its id) was superseded since it was queued.
    func isSuperseded(_ queued: (hash: Int, id: UInt64)?) -> Bool {
        guard let queued, let mark = superseded[queued.hash] else { return false }
        return queued.id <= mark
    }
}
