import HTTPCore
import Bodies
import Dispatch
import Foundation
import Synchronization
import Locking

/// The third tier, shared by every replica (Redis through `SharedStore`): entries in the
/// disk tier's checked format under `prefix`, a lock per key so one replica at a time asks
/// the upstream, and a channel that wakes replicas waiting on that fetch and carries
/// invalidations and purges to every replica's own tiers.
///
/// Nothing here may hold a request up: every store call is bounded by the store's own
/// timeout, and a failed call is a miss (reads), a skipped write, or "fetch yourself" (locks).
public final class SharedTier: Sendable {
    let store: any SharedStore
    public let prefix: String
    /// How long a lock lives: the upstream timeout and a second, so a dead holder's lock ends.
    let lockExpiry: Duration
    /// How long a replica waits for another's fetch before fetching itself: the upstream timeout.
    let waitLimit: Duration
    /// How often a waiting replica looks again when no message came (pub/sub can miss one).
    let pollInterval: Duration
    /// This replica's name on the channel: its own messages are not acted on twice.
    let replica = String(UInt64.random(in: .min ... .max), radix: 36)
    /// This replica's own tiers, which remote invalidations and purges reach.
    private let local: CachePurger
    private let waiters = Locked<[String: [Waiter]]>([:])
    /// What the store said when it last refused a write (a Redis at `maxmemory` with
    /// `noeviction`), until a write succeeds again: reads alone can look healthy meanwhile.
    private let writeRefusal = Locked<String?>(nil)
    /// Writes in flight, by primary name: a lock is released only after them.
    private let writing = Locked<(next: Int, tasks: [String: [Int: Task<Void, Never>]])>((0, [:]))
    private let counters = Locked(Counters())

    /// What the tier has counted, for metrics.
    public struct Counters: Sendable {
        public var stores = 0
        public var errors = 0
        /// Requests that waited for another replica's fetch.
        public var waits = 0
        /// Values that were not a whole, unaltered entry for their key (removed, and a miss).
        public var corruptions = 0
    }

    public init(store: any SharedStore, prefix: String, lockExpiry: Duration, waitLimit: Duration,
                pollInterval: Duration = .milliseconds(200), memory: MemoryTier, disk: DiskTier?) {
        self.store = store
        self.prefix = prefix
        self.lockExpiry = lockExpiry
        self.waitLimit = waitLimit
        self.pollInterval = pollInterval
        local = CachePurger(memory: memory, disk: disk)
    }

    public var counts: Counters { counters.withLock { $0 } }

    /// The largest value this tier writes or reads, in bytes: an entry larger than this is
    /// kept in the replica's own tiers only, and a larger value found in the store is not an
    /// entry of ours (it is removed). Reading one costs at most this much memory.
    public static let largestValue = 8 << 20

    /// Why the store refuses writes now (its last refusal, until a write succeeds), or nil.
    public var writeProblem: String? { writeRefusal.withLock { $0 } }

    /// The channel's name: every replica with this prefix listens on it.
    public var channel: String { prefix + "events" }

    func entryKey(_ name: String) -> String { prefix + "entry:" + name }
    private func lockKey(_ name: String) -> String { prefix + "lock:" + name }
    private func underSet(_ name: String) -> String { prefix + "under:" + name }
    private func tagSet(_ tag: String) -> String { prefix + "tag:" + tag }
    static func name(_ key: CacheKey) -> String { DiskTier.name(key).hex }

    // MARK: Entries

    /// The entry stored for `key`; nil when there is none, the store cannot be asked, or the
    /// value is not a whole entry for this key (then it is removed, as a damaged file is).
    func read(_ key: CacheKey) async -> CacheEntry? {
        guard let bytes = await attempt({ try await store.value(at: entryKey(Self.name(key)), limit: Self.largestValue) }) ?? nil else {
            return nil
        }
        return await decoded(bytes, key)
    }

    /// The entry in a value read for `key`; nil (the value counted and removed) when it is not
    /// a whole, unaltered entry for that key.
    private func decoded(_ bytes: [UInt8], _ key: CacheKey) async -> CacheEntry? {
        if bytes.count <= Self.largestValue, let entry = DiskEntryCodec.decode(bytes, key: key.text) { return entry }
        counters.withLock { $0.corruptions += 1 }
        await discard(key)
        return nil
    }

    /// Removes one stored value (one this replica's route cannot render).
    func discard(_ key: CacheKey) async {
        _ = await attempt { try await store.remove([entryKey(Self.name(key))]) }
    }

    /// Stores an entry for `expiry`, filed under its primary key and (for a response) its
    /// tags. Nobody waits for it but the release of the key's lock, which follows every write
    /// of that key started before it, so a replica woken by the release finds the entry.
    func write(_ key: CacheKey, _ entry: CacheEntry, expiry: Duration) {
        guard entry.body.isInMemory else { return }  // a body in a file is past `largestValue`
        let name = Self.name(key)
        let primary = Self.name(key.primary)
        let sets = entry.status == VariantIndex.diskStatus ? [] : [underSet(primary)] + CacheTags.of(key.primary, entry).map(tagSet)
        let bytes = DiskEntryCodec.encode(key: key.text, entry: entry)
        guard bytes.count <= Self.largestValue else { return }
        writing.withLock { writing in
            writing.next += 1
            let id = writing.next
            writing.tasks[primary, default: [:]][id] = Task { [self] in
                do {
                    try await store.store(bytes, at: entryKey(name), expiry: expiry, member: name, sets: sets)
                    counters.withLock { $0.stores += 1 }
                    writeRefusal.withLock { $0 = nil }
                } catch {
                    counters.withLock { $0.errors += 1 }
                    // An unreachable store is its client's to report; a refusal is only seen here.
                    if let refusal = error as? SharedStoreRefusal { writeRefusal.withLock { $0 = refusal.reason } }
                }
                self.writing.withLock { writing in
                    writing.tasks[primary]?[id] = nil
                    if writing.tasks[primary]?.isEmpty == true { writing.tasks[primary] = nil }
                }
            }
        }
    }

    /// Returns when every write of `key` (and its variants) started so far has ended.
    func waitForWrites(_ key: CacheKey) async {
        let tasks = writing.withLock { $0.tasks[Self.name(key.primary)].map { Array($0.values) } ?? [] }
        for task in tasks { await task.value }
    }

    /// How long Redis keeps an entry: what is left of its lifetime plus the longer of its
    /// stale windows (stale-while-revalidate, stale-if-error), at least a second.
    static func expiry(of entry: CacheEntry, policy: CachePolicy, now: Date) -> Duration {
        let lifetime = Freshness.lifetime(of: entry, policy: policy)
        let left = lifetime - Freshness.currentAge(of: entry, now: now)
        let stale = max(CacheDecision.staleWhileRevalidateWindow(entry, policy),
                        entry.cacheControl.staleIfError.map(TimeInterval.init) ?? policy.staleIfError)
        let seconds = min(max(left + stale, 1), 366 * 86_400)
        return .milliseconds(Int64(seconds * 1000))
    }

    // MARK: One fetch across replicas

    /// The outcome of asking for a key's lock, with what the tier held for the key at that
    /// moment (someone may have stored it since this replica looked).
    enum Lock {
        case acquired(token: String, stored: CacheEntry?)
        case held
        case unavailable
    }

    func lock(_ key: CacheKey) async -> Lock {
        let token = replica + "-" + String(UInt64.random(in: .min ... .max), radix: 36)
        guard let (taken, value) = await attempt({
            try await store.lock(lockKey(Self.name(key.primary)), token: token, expiry: lockExpiry, reading: entryKey(Self.name(key)),
                                 limit: Self.largestValue)
        }) else { return .unavailable }
        guard taken else { return .held }
        guard let value else { return .acquired(token: token, stored: nil) }
        return .acquired(token: token, stored: await decoded(value, key))
    }

    /// After this key's writes, frees the lock and wakes the replicas waiting on it (whatever
    /// the fetch gave: they look in the tier, and take the lock themselves if nothing usable
    /// is there). Runs in the background: the answer does not wait for it.
    func release(_ key: CacheKey, token: String) {
        let name = Self.name(key.primary)
        Task { [self] in
            await waitForWrites(key)
            _ = await attempt { try await store.unlock(lockKey(name), token: token, publishing: message(.done, Array(name.utf8))) }
        }
    }

    /// Returns when the lock on `key` is released (a message came) or after `limit`.
    func waitForRelease(_ key: CacheKey, limit: Duration) async {
        let name = Self.name(key.primary)
        let waiter = Waiter()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiter.arm(continuation)
            waiters.withLock { $0[name, default: []].append(waiter) }
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(limit.components.seconds * 1_000_000_000
                + limit.components.attoseconds / 1_000_000_000))) { waiter.resume() }
        }
        waiters.withLock { waiters in
            waiters[name]?.removeAll { $0 === waiter }
            if waiters[name]?.isEmpty == true { waiters[name] = nil }
        }
    }

    func countWait() { counters.withLock { $0.waits += 1 } }

    // MARK: Purges

    /// Removes the selection from the shared tier and tells every other replica to remove it
    /// from its own tiers. Returns the names of the responses removed here.
    func purge(_ selection: CachePurger.Selection) async -> Set<String> {
        var names: [String] = []
        var sets: [String] = []
        var payload: [UInt8]
        let kind: MessageKind
        switch selection {
        case .key(let key):
            let name = Self.name(key.primary)
            sets = [underSet(name)]
            names = (await attempt { try await store.members(of: sets) } ?? []) + [name]
            (kind, payload) = (.purgeKey, Array(key.text.utf8))
        case .tags(let tags):
            sets = tags.sorted().map(tagSet)
            names = await attempt { try await store.members(of: sets) } ?? []
            (kind, payload) = (.purgeTags, Array(tags.sorted().joined(separator: "\n").utf8))
        case .all:
            let keys = await attempt { try await store.keys(withPrefix: prefix) } ?? []
            let entries = prefix + "entry:"
            names = keys.filter { $0.hasPrefix(entries) }.map { String($0.dropFirst(entries.count)) }
            sets = keys.filter { !$0.hasPrefix(entries) && !$0.hasPrefix(prefix + "lock:") }
            (kind, payload) = (.purgeAll, [])
        }
        let unique = Array(Set(names))
        let existed = await attempt { try await store.remove(unique.map(entryKey) + sets) } ?? []
        _ = await attempt { try await store.publish(message(kind, payload)) }
        return Set(zip(unique, existed).compactMap { $1 ? $0 : nil })
    }

    // MARK: The channel

    private enum MessageKind: String {
        case done, purgeKey = "purge-key", purgeTags = "purge-tags", purgeAll = "purge-all"
    }

    /// `REPLICA KIND PAYLOAD`: the payload is a name, a key's text (which may hold NUL), or tags one per line.
    private func message(_ kind: MessageKind, _ payload: [UInt8]) -> [UInt8] {
        Array((replica + " " + kind.rawValue + " ").utf8) + payload
    }

    /// A message from the channel: wakes waiters, or applies another replica's purge to this
    /// replica's own tiers. Anything malformed is ignored.
    public func receive(_ message: [UInt8]) async {
        let parts = message.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let kind = MessageKind(rawValue: String(decoding: parts[1], as: UTF8.self)) else { return }
        let payload = parts.count == 3 ? String(decoding: parts[2], as: UTF8.self) : ""
        let fromHere = String(decoding: parts[0], as: UTF8.self) == replica
        switch kind {
        case .done:
            let woken = waiters.withLock { $0.removeValue(forKey: payload) ?? [] }
            woken.forEach { $0.resume() }
        case .purgeKey where !fromHere:
            _ = await local.purge(.key(CacheKey(stored: payload)))
        case .purgeTags where !fromHere:
            _ = await local.purge(.tags(Set(payload.split(separator: "\n").map(String.init))))
        case .purgeAll where !fromHere:
            _ = await local.purge(.all)
        default:
            break
        }
    }

    // MARK: Store calls

    /// The store's answer, or nil (counted) when it could not be asked.
    private func attempt<T>(_ call: () async throws -> T) async -> T? {
        do {
            return try await call()
        } catch {
            counters.withLock { $0.errors += 1 }
            return nil
        }
    }

    /// One waiting request, resumed once: by a message or by its time limit, whichever is first.
    private final class Waiter: Sendable {
        private enum State {
            case waiting
            case armed(CheckedContinuation<Void, Never>)
            case done
        }

        private let state = Locked(State.waiting)

        func arm(_ continuation: CheckedContinuation<Void, Never>) {
            let resumeNow = state.withLock { state in
                if case .done = state { return true }
                state = .armed(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }

        func resume() {
            let armed = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state = .done }
                if case .armed(let continuation) = state { return continuation }
                return nil
            }
            armed?.resume()
        }
    }
}
