#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Crypto
import Dispatch
import Foundation
import HTTPCore
public import Bodies
import LoopGuests
import RequestTracing
import Synchronization
import Locking

/// The second tier: one file per key under the cache directory, named by the SHA-256 of
/// the key in two-character subfolders, bounded by bytes, surviving restarts.
///
/// Writes fill an unnamed or temporary file and name it once whole, so a reader sees a whole
/// old entry or a whole new one. Every read checks the checksum; a bad file is deleted and
/// reported as a miss. Files found at start are indexed in the background (`DiskTier+Loading`). Writes,
/// removals and any read that would wait for the disk run on Dispatch queues of its own,
/// never on an event loop or Swift's cooperative pool; an event loop reads only what the
/// page cache holds, from a file it keeps open between reads (`DiskTier+Files`).
///
/// What is on disk is outside input: a file that is not a regular file (a FIFO, a device, a
/// symlink) is never opened for reading, a symlinked subfolder is replaced rather than
/// followed, and a cache directory deleted while running is made again on the next write.
/// Memory stays bounded however fast answers arrive: the bytes queued for writing have a
/// limit (past it a miss waits for the writer, or its entry stays in memory only, counted:
/// `DiskTier+Queue`), and the index charges every
/// entry at least one file-system block, so it holds at most `budget / 4 KiB` entries, at
/// about 96 bytes each (`DiskIndex`). Which entries stay is the memory tier's policy,
/// W-TinyLFU (`AdmissionPolicy`): a large answer asked less than what it would push out is
/// not written at all.
public final class DiskTier: Sendable {
    public let directory: String
    public let budget: Int
    /// Bytes of encoded entries waiting to be written, at most.
    public let writeQueueLimit: Int
    /// Entry files kept open between reads, at most (see `DiskTier+Files`).
    let openFileLimit: Int
    /// Told each disk problem in a sentence (a damaged file removed, a failed write, the
    /// disk becoming full), for the service's log.
    let report: @Sendable (String) -> Void
    /// Told, in a sentence, what is worth a line but is no problem (the index loaded).
    let inform: @Sendable (String) -> Void
    /// The cache directory's device and inode, to notice it deleted or replaced (`DiskTier+Vanished`).
    let identity = Locked<DirectoryIdentity?>(nil)

    /// The smallest amount an entry is charged: one file-system block, which is what a small
    /// file really takes, and what bounds the index's entry count.
    static let blockSize = 4096

    /// Internal rather than private only so the extensions (files of their own) can use it.
    struct Index {
        var entries = DiskIndex()
        /// The background load of the files found at start (`DiskTier+Loading`).
        var loading = Loading()
        /// Counts writes, to stamp each file (wrapping: a stamp tells one write from the next).
        var clock: UInt32 = 0
        var corruptions = 0
        var pendingWrites = 0
        var pendingBytes = 0
        /// The newest entry in line for the writer under each key's `sketchHash`, served until
        /// its write is over (`DiskTier+Queue`).
        var queued: [Int: QueuedEntry] = [:]
        var lastQueued: UInt64 = 0
        /// Under a key's `sketchHash`, the last id in line when a newer answer for the key was
        /// not written: writes up to it are older, and are neither written nor indexed.
        var superseded: [Int: UInt64] = [:]
        var skippedWrites = 0
        var waitedWrites = 0
        var failedWrites = 0
        /// Entries served from their file (`largestReadWhole`) whose checksum has been taken
        /// since the file was written: a later read trusts it rather than read it all again.
        var verified = Set<EntryName>()
        var full = false
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
        /// Misses on event loops whose entries took the write queue past its limit, each
        /// waiting until the writer brings it back under (`DiskTier+Queue`).
        var roomWaiters: [(id: UInt64, resume: CheckedContinuation<Void, Never>)] = []
        var lastRoomWaiter: UInt64 = 0
        /// A miss gave up waiting for room, and the queue has not been under its limit since:
        /// the disk is stalled, and misses do not wait for it.
        var stalled = false

        /// The files stored under a primary key: its own, and every variant filed under it.
        func names(under key: CacheKey) -> [EntryName] {
            entries.names(under: DiskTier.name(key))
        }

        /// Drops a file from the index; returns what it was charged. While the load lists the
        /// directory, the name is remembered, so a file listed before it went is not indexed.
        @discardableResult
        mutating func forget(_ name: EntryName) -> Int? {
            if loading.phase == .listing { loading.settled.insert(name) }
            verified.remove(name)
            return entries.forget(name)
        }

        mutating func nextStamp() -> UInt32 {
            clock &+= 1
            return clock
        }
    }

    let index = Locked(Index())
    /// Held by the writer from naming a file to indexing it, and by the early removal of a
    /// superseded one (`DiskTier+Queue`), which must not unlink a newer file named meanwhile.
    let naming = Locked(())
    /// Where the index found at start is loaded, once; `stopLoading` waits on it.
    let loads = DispatchQueue(label: "larder.disk.load", qos: .utility)
    let reads = DispatchQueue(label: "larder.disk.read", qos: .userInitiated, attributes: .concurrent)
    /// Writes, deletions and evictions in one order, so a deletion never races a newer write.
    let writes = OrderedWork(label: "larder.disk.write")
    let temporaryNames = TemporaryNames()
    /// Whether entries are written as unnamed files named once whole (`DiskTier+Writes`):
    /// the file system must allow `O_TMPFILE` and `/proc` must be mounted, which a container
    /// may not have.
    let makesUnnamedFiles: Bool
    /// The room spool files in the cache directory take between them, out of the same
    /// budget: entries are evicted to make room for answers being fetched, as for new entries.
    public let spoolRoom: SpoolRoom
    /// An eviction for the spools' sake is queued (`makeRoomForSpools`).
    private let roomQueued = Atomic<Bool>(false)

    /// Opens (creating if needed) the directory and drops leftover temporary files. The index
    /// of the files already there is built in the background (`DiskTier+Loading`): the tier
    /// answers at once, reading a file not yet indexed by its name.
    public convenience init(directory: String, budget: Int, writeQueueLimit: Int = DiskTier.defaultWriteQueueLimit,
                            openFileLimit: Int = DiskTier.defaultOpenFileLimit, report: @escaping @Sendable (String) -> Void = { _ in },
                            inform: @escaping @Sendable (String) -> Void = { _ in }) throws {
        try self.init(directory: directory, budget: budget, writeQueueLimit: writeQueueLimit, openFileLimit: openFileLimit,
                      report: report, inform: inform, loadsIndex: true)
    }

    /// `loadsIndex` false: the load is left to the caller (tests drive its steps).
    init(directory: String, budget: Int, writeQueueLimit: Int = DiskTier.defaultWriteQueueLimit,
         openFileLimit: Int = DiskTier.defaultOpenFileLimit, report: @escaping @Sendable (String) -> Void = { _ in },
         inform: @escaping @Sendable (String) -> Void = { _ in }, loadsIndex: Bool, unnamedFiles: Bool = true) throws {
        self.directory = directory
        self.budget = budget
        self.writeQueueLimit = writeQueueLimit
        self.openFileLimit = openFileLimit
        self.report = report
        self.inform = inform
        spoolRoom = SpoolRoom(limit: budget)
        index.withLock { $0.entries = DiskIndex(budget: budget) }
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        identity.withLock { $0 = DirectoryIdentity(directory) }
        for leftover in (try? FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")) ?? [] {
            unlink(directory + "/tmp/" + leftover)
        }
        makesUnnamedFiles = unnamedFiles && Self.canMakeUnnamedFiles(in: directory, as: "\(directory)/tmp/\(temporaryNames.next())")
        if loadsIndex { loads.async { [self] in loadIndex() } }
        spoolRoom.whenGrown { [weak self] taken in self?.makeRoomForSpools(taken) }
    }

    /// What entries may take: the budget less what spool files hold.
    var entryBudget: Int { budget - spoolRoom.taken }

    /// Spool files took more room: entries are evicted, on the write queue, until they and
    /// the spools fit the budget again.
    private func makeRoomForSpools(_ taken: Int) {
        guard index.withLock({ $0.entries.bytes }) + taken > budget, !roomQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        writes.add(start: true) { [self] in
            roomQueued.store(false, ordering: .releasing)
            let victims = index.withLock { Self.evict(&$0, budget: entryBudget) }
            victims.forEach { unlink(path(for: $0)) }
        }
    }

    deinit {
        index.withLock { $0.entries.closeAll() }
    }

    /// Whether entries can be written now (for readiness). A temporary folder that vanished
    /// with its directory is made again first, so a recreated cache directory is used again.
    public var isWritable: Bool {
        forgetIfReplaced()
        ensureTemporaryFolder()
        return access(directory + "/tmp", W_OK) == 0
    }

    /// Whether the last write failed because the file system is full (ENOSPC, EDQUOT):
    /// answers are then kept in memory only until a write succeeds again.
    public var isFull: Bool { index.withLock { $0.full } }

    public var bytes: Int { index.withLock { $0.entries.bytes } }
    public var count: Int { index.withLock { $0.entries.count } }
    public var evictions: Int { index.withLock { $0.entries.evictions } }
    /// Entries not kept because they were asked less often than what they would have pushed
    /// out (`AdmissionPolicy`): large answers not written, and entries leaving the window.
    public var rejections: Int { index.withLock { $0.entries.rejections } }
    /// Files found damaged on read and removed.
    public var corruptions: Int { index.withLock { $0.corruptions } }
    /// Entries not written because the write queue was at its byte limit.
    public var skippedWrites: Int { index.withLock { $0.skippedWrites } }
    /// Misses whose answer waited for room in the write queue (`DiskTier+Queue`).
    public var waitedWrites: Int { index.withLock { $0.waitedWrites } }
    /// Writes that failed (disk full, I/O error, directory gone); the entry stayed in memory only.
    public var failedWrites: Int { index.withLock { $0.failedWrites } }
    /// The entries waiting for the writer now (a file to remove once a newer answer went
    /// unwritten counts as one), and what they hold in memory (`DiskTier+Queue`).
    public var queuedWrites: (entries: Int, bytes: Int) { index.withLock { ($0.pendingWrites, $0.pendingBytes) } }

    static func name(_ key: CacheKey) -> EntryName {
        key.withText { text in
            var hash = SHA256()
            hash.update(bufferPointer: text)
            return EntryName(hash.finalize())
        }
    }

    func path(for name: EntryName) -> String { name.path(under: directory) }

    /// Whether a file's stored key is `key`, compared as bytes without joining `key`'s text.
    static func same(_ key: CacheKey, _ stored: String) -> Bool {
        var stored = stored
        return stored.withUTF8 { storedBytes in
            key.withText { $0.count == storedBytes.count && ($0.isEmpty || memcmp($0.baseAddress!, storedBytes.baseAddress!, $0.count) == 0) }
        }
    }

    /// What an entry of `size` bytes costs in the budget: whole file-system blocks.
    static func charge(_ size: Int) -> Int { max(blockSize, (size + blockSize - 1) / blockSize * blockSize) }

    /// The entry stored for `key`, or nil when there is none or its file is damaged (then removed).
    public func read(_ key: CacheKey) async -> CacheEntry? {
        await readKept(key)?.entry
    }

    /// The entry stored for `key` with the rendition kept beside it, if any; nil when there
    /// is none or its file is damaged (then removed).
    public func readKept(_ key: CacheKey) async -> (entry: CacheEntry, rendition: Rendition?)? {
        let name = Self.name(key)
        let queued = index.withLock { index -> QueuedEntry? in
            guard !index.queued.isEmpty, let queued = index.queued[key.sketchHash], queued.key == key else { return nil }
            index.entries.touch(name)
            return queued
        }
        if let queued { return (queued.entry, queued.rendition) }
        // On an event loop, a file the page cache holds is read there and then: the hop to a
        // reader thread and back cost more than the read. Anything else goes to the readers.
        var read: EntryRead?
        if LoopExecutor.reactor != nil {
            read = readEntryFile(name, cachedOnly: true)
        } else {
            guard index.withLock({ $0.mayHold(name) }) else { return nil }
            read = EntryRead(bytes: .notCached, lease: .unindexed)
        }
        if case .notCached? = read?.bytes {
            // Only such a read is a span: one from the page cache, on the loop, costs less than a span.
            read = if let trace = Trace.current { await trace.span("disk read") { _ in await readOffLoop(name) } } else { await readOffLoop(name) }
        }
        // Not in the index (any more), or not on disk when not indexed yet: a miss, not damage.
        guard let read else { return nil }
        let decoded: DiskEntryCodec.Decoded?, size: Int
        switch read.bytes {
        case .read(let bytes): (decoded, size) = (bytes.flatMap(DiskEntryCodec.decodeKeyed), bytes?.count ?? 0)
        case .inFile(let found, let fileSize): (decoded, size) = (found, fileSize)
        case .notCached: return nil
        }
        guard let decoded, Self.same(key, decoded.key) else {
            index.withLock { $0.corruptions += 1 }
            report("removed a damaged or unreadable cache file: \(path(for: name))")
            await remove(key)
            return nil
        }
        let servable = index.withLock { index in
            index.settle(name, read.lease, size: size,
                         head: DiskIndex.Head(key: key, status: decoded.entry.status, headers: decoded.entry.headers))
        }
        guard servable else {
            await remove(key)  // purged while the index was loading, before its head was read
            return nil
        }
        return (decoded.entry, decoded.rendition)
    }

    /// Reads an entry's file on a reader thread.
    private func readOffLoop(_ name: EntryName) async -> EntryRead? {
        await withCheckedContinuation { continuation in
            reads.async { [self] in continuation.resume(returning: readEntryFile(name, cachedOnly: false)) }
        }
    }

    public func remove(_ key: CacheKey) async {
        let name = Self.name(key)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writes.add(start: true) { [self] in
                _ = index.withLock { $0.forget(name) }
                unlink(path(for: name))
                continuation.resume()
            }
        }
    }

    /// Writes the entry's file: encoded whole, or around a body that lies in a file. Returns
    /// the outcome and the file's size.
    func writeEntry(_ key: CacheKey, _ entry: CacheEntry, _ rendition: Rendition?, to path: String) -> (WriteOutcome, Int) {
        guard case .file(let region) = entry.body else {
            let bytes = DiskEntryCodec.encode(key: key.text, entry: entry, rendition: rendition)
            return (writeFile(bytes, to: path), bytes.count)
        }
        if let named = nameSpool(key, entry, region, to: path) { return named }
        let head = DiskEntryCodec.head(key: key.text, entry: entry) {
            DiskEntryCodec.checksum(continuing: $0, region.file, offset: region.offset, count: region.count)
        }
        guard let head else { return (.failed, 0) }
        return (writeFile(head: head, body: region, to: path), head.count + region.count)
    }

    /// Drops entries, in the policy's order, until the index fits the budget; returns their
    /// names. Not while the load lists the directory: what it found is not in the order yet,
    /// and the newest entries would go first.
    static func evict(_ index: inout Index, budget: Int) -> [EntryName] {
        guard index.loading.phase != .listing else { return [] }
        let victims = index.entries.shrink(to: budget)
        victims.forEach { index.verified.remove($0) }
        return victims
    }
}
