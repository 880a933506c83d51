import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import Locking

/// The index of the files found at start, built in the background, so Larder listens at once
/// whatever the number of entries (a million took minutes to read before the port opened).
///
/// The load lists the directory first (names, sizes and times: `fstatat` only), placing
/// every file behind the entries written or read since start, oldest first; then it reads
/// each file's head for its tags and primary key. Until the listing is over a file not
/// indexed yet is read by its name (the SHA-256 of its key), so every stored answer is
/// served from the first request on, and eviction waits (the order is not known yet). A
/// purge during the load removes what the index knows and is remembered until the load is
/// over: a file found later, or whose head is read later, that it selects is removed then.
///
/// What is found is outside input, checked before it costs anything, as nginx's cache
/// loader does: a file too small to hold an entry's header or larger than the whole budget
/// is removed when listed; one whose head does not decode is removed when its head is read.
/// A file is charged what it occupies (its allocated blocks, at most its size in blocks),
/// not its apparent size: a sparse file claiming 100 GB costs the blocks it really has.
extension DiskTier {
    struct Loading {
        enum Phase { case listing, readingHeads, whole }
        var phase = Phase.listing
        /// Names dropped from the index or removed while listing: not indexed if listed later.
        var settled: Set<EntryName> = []
        /// Purges while loading, for files found or whose heads are read afterwards.
        var purgedAll = false
        var purgedTags: Set<String> = []
        var purgedPrimaries: Set<EntryName> = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// The service stops: no more heads are read (`stopLoading`).
        var stopping = false

        /// Whether a purge during the load selects a file found at start with `head`.
        func purged(_ head: DiskIndex.Head) -> Bool {
            if let primary = head.primary, purgedPrimaries.contains(primary) { return true }
            return !purgedTags.isEmpty && head.tags.contains(where: purgedTags.contains)
        }
    }

    /// Whether the index holds every file found at start (for readiness and tests).
    public var isIndexWhole: Bool { index.withLock { $0.loading.phase == .whole } }

    /// Returns once the index holds every file found at start.
    public func waitForIndex() async {
        await withCheckedContinuation { continuation in
            let whole = index.withLock { index in
                if index.loading.phase == .whole { return true }
                index.loading.waiters.append(continuation)
                return false
            }
            if whole { continuation.resume() }
        }
    }

    /// Ends the load, if it is under way, after the batch of heads it is reading, and returns
    /// once it has ended: a stop waits for it rather than leave it reading files. The heads
    /// not read yet would be read on first use, as during the load.
    public func stopLoading() async {
        index.withLock { $0.loading.stopping = true }
        await withCheckedContinuation { continuation in loads.async { continuation.resume() } }
    }

    /// Lists the directory, then reads the heads; on the load's own queue.
    func loadIndex() {
        let started = ContinuousClock.now
        loadListing()
        let listed = started.duration(to: .now)
        loadHeads()
        let stopped = index.withLock { $0.loading.stopping }
        let count = finishLoading()
        if stopped {
            inform("the index load of \(count) stored entries ended with the service after \(Self.seconds(started.duration(to: .now)))")
        } else if count > 0 {
            inform("the index of \(count) stored entries is whole after \(Self.seconds(started.duration(to: .now))) "
                   + "(listed in \(Self.seconds(listed)))")
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.2f s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// The first step: every file indexed and placed in the order, then eviction to the budget.
    func loadListing() {
        let found = listFiles()
        let victims = index.withLock { index in
            index.entries.order(newestFirst: found.sorted { $0.modified > $1.modified }.map(\.slot))
            index.loading.phase = .readingHeads
            index.loading.settled = []
            return Self.evict(&index, budget: entryBudget)
        }
        victims.forEach { unlink(path(for: $0)) }
    }

    /// The last step: the index is whole. Returns its entries.
    @discardableResult
    func finishLoading() -> Int {
        let (count, waiters) = index.withLock { index in
            defer { index.loading = Loading(phase: .whole) }
            return (index.entries.count, index.loading.waiters)
        }
        waiters.forEach { $0.resume() }
        return count
    }

    /// Indexes every regular file named like an entry, unordered, without its head; returns
    /// the slots made with the files' times.
    private func listFiles() -> [(slot: UInt32, modified: Int)] {
        var found: [(slot: UInt32, modified: Int)] = []
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for folder in folders.sorted() where folder.utf8.count == 2 && Self.isDirectory(directory + "/" + folder) {
            let files = Self.regularFiles(in: directory + "/" + folder, prefix: folder, largest: budget)
            let victims = index.withLock { index -> [EntryName] in
                let unknown = files.filter { !index.entries.contains($0.name) && !index.loading.settled.contains($0.name) }
                if index.loading.purgedAll { return unknown.map(\.name) }
                for file in unknown {
                    index.entries.insert(file.name, charge: Self.charge(file.occupied), stamp: index.nextStamp(), head: nil, unordered: true)
                    found.append((index.entries.slot(of: file.name)!, file.modified))
                }
                return []
            }
            victims.forEach { unlink(path(for: $0)) }
        }
        return found
    }

    /// The regular files of `folder` named by 64 hex digits starting with `prefix`: name,
    /// bytes occupied and modification time. Empty ones, unfinished writes, are removed, and
    /// so are those that cannot be an entry: shorter than its header, or over `largest`
    /// bytes (no entry larger than the budget is ever written). `AT_SYMLINK_NOFOLLOW`: a
    /// symlink or FIFO planted here is not an entry, and is never followed.
    private static func regularFiles(in folder: String, prefix: String, largest: Int) -> [(name: EntryName, occupied: Int, modified: Int)] {
        guard let stream = opendir(folder) else { return [] }
        defer { closedir(stream) }
        let descriptor = dirfd(stream)
        var files: [(name: EntryName, occupied: Int, modified: Int)] = []
        while let item = readdir(stream) {
            let file = withUnsafeBytes(of: item.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard file.hasPrefix(prefix), let name = EntryName(hex: file) else { continue }
            var info = stat()
            guard fstatat(descriptor, file, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            // Empty: a write in place its process was killed in (`largestWrittenInPlace`).
            if info.st_size < DiskEntryCodec.headerSize || info.st_size > largest {
                unlinkat(descriptor, file, 0)
                continue
            }
            let occupied = min(Int(info.st_size), Int(info.st_blocks) * 512)
            files.append((name, occupied, info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec))
        }
        return files
    }

    /// What the start of a file says.
    enum Head {
        /// The key, status and fields, without the body (unchecked: the body's read checks).
        case entry(key: String, status: Int, headers: HTTPHeaders)
        /// One of ours, of an older format.
        case olderVersion
        /// Not an entry: no header of ours, or a head that does not decode.
        case unreadable
        /// Not opened or read (gone meanwhile, or out of descriptors): nothing learnt.
        case unopened
    }

    /// The start of a file, read as `readFile` reads (no symlink, FIFO or device).
    static func readHead(_ path: String) -> Head {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return .unopened }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .unopened }
        guard info.st_mode & S_IFMT == S_IFREG,
              let header = readExactly(fd, count: DiskEntryCodec.headerSize, at: 0) else { return .unreadable }
        if DiskEntryCodec.isOlderVersion(header) { return .olderVersion }
        guard let length = DiskEntryCodec.headLength(header), length <= min(Int(info.st_size), 1 << 20),
              let head = readExactly(fd, count: length, at: 0), let decoded = DiskEntryCodec.decodeHead(head) else { return .unreadable }
        return .entry(key: decoded.key, status: decoded.status, headers: decoded.headers)
    }

    private static func readExactly(_ fd: Int32, count: Int, at offset: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// The second step: the head of every file found at start, a batch at a time, read
    /// outside the lock.
    func loadHeads() {
        var next = 0
        let damaged = index.withLock { $0.corruptions }
        defer {
            let removed = index.withLock { $0.corruptions } - damaged
            if removed > 0 { report("removed \(removed) files in the cache directory that are not entries (no valid head)") }
        }
        while true {
            let batch = index.withLock { index -> [(slot: UInt32, name: EntryName, stamp: UInt32)] in
                var batch: [(slot: UInt32, name: EntryName, stamp: UInt32)] = []
                if index.loading.stopping { return batch }
                while next < index.entries.slots.count, batch.count < 256 {
                    let slot = index.entries.slots[next]
                    if slot.flags == .headUnknown { batch.append((UInt32(next), slot.name, slot.stamp)) }
                    next += 1
                }
                return batch
            }
            guard !batch.isEmpty else { return }
            let heads = batch.map { Self.readHead(path(for: $0.name)) }
            let victims = index.withLock { index -> [EntryName] in
                var victims: [EntryName] = []
                for (file, head) in zip(batch, heads) where Int(file.slot) < index.entries.slots.count {
                    let slot = index.entries.slots[Int(file.slot)]
                    // Replaced, dropped or read meanwhile: nothing to learn.
                    guard slot.name == file.name, slot.stamp == file.stamp, slot.flags.contains(.headUnknown) else { continue }
                    switch head {
                    case .entry(let key, let status, let headers):
                        let head = DiskIndex.Head(key: CacheKey(stored: key), status: status, headers: headers)
                        if index.loading.purged(head) {
                            index.forget(file.name)
                            victims.append(file.name)
                        } else {
                            index.entries.learn(file.slot, head)
                        }
                    case .olderVersion:
                        index.forget(file.name)  // written by an older Larder: what it holds is fetched again
                        victims.append(file.name)
                    case .unreadable:
                        index.forget(file.name)  // not an entry: it costs the budget nothing
                        index.corruptions += 1
                        victims.append(file.name)
                    case .unopened:
                        break  // its first read tells
                    }
                }
                return victims
            }
            victims.forEach { unlink(path(for: $0)) }
        }
    }
}

extension DiskTier.Index {
    /// Whether `name` may be on disk: indexed, or not known yet while the load lists.
    func mayHold(_ name: EntryName) -> Bool {
        entries.contains(name) || (loading.phase == .listing && !loading.settled.contains(name))
    }

    /// How to read `name` now; nil when it is not stored.
    mutating func lease(_ name: EntryName) -> DiskTier.Lease? {
        if let lease = entries.lease(name) { return lease }
        return mayHold(name) ? .unindexed : nil
    }

    /// After a good read reached by `lease`: a file found at start learns its head (and is
    /// indexed, when the listing had not reached it), or is removed when a purge during the
    /// load selects it. Returns whether the read may be served; every read counts as a use.
    mutating func settle(_ name: EntryName, _ lease: DiskTier.Lease, size: Int, head: @autoclosure () -> DiskIndex.Head) -> Bool {
        switch lease {
        case .kept, .path(_, headKnown: true):
            entries.touch(name)
            return true
        case .path(let stamp, headKnown: false):
            guard let number = entries.slot(of: name), entries.slots[Int(number)].stamp == stamp,
                  entries.slots[Int(number)].flags.contains(.headUnknown) else { return entries.contains(name) }
            let head = head()
            if loading.purged(head) { return false }
            entries.learn(number, head)
            entries.touch(name)
            return true
        case .unindexed:
            if entries.contains(name) { return true }  // listed or written meanwhile
            let head = head()
            guard mayHold(name), !loading.purgedAll, !loading.purged(head) else { return false }
            entries.insert(name, charge: DiskTier.charge(size), stamp: nextStamp(), head: head)
            return true
        }
    }
}
