#if canImport(Glibc)
import Glibc
#endif
import Crypto
import Dispatch
import Foundation
import Synchronization

/// The second tier: one file per key under the cache directory, named by the SHA-256 of
/// the key in two-character subfolders, bounded by bytes, surviving restarts.
///
/// Writes go to a temporary file, are fsynced and renamed into place, so a reader sees a
/// whole old entry or a whole new one. Every read checks the checksum; a bad file is
/// deleted and reported as a miss. All file work runs on Dispatch queues of its own, never
/// on an event loop or Swift's cooperative pool.
public final class DiskTier: Sendable {
    public let directory: String
    public let budget: Int

    private struct IndexEntry {
        var size: Int
        var lastUse: UInt64
    }

    private struct Index {
        var entries: [String: IndexEntry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var evictions = 0
        var corruptions = 0
        var pendingWrites = 0
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let index = Mutex(Index())
    private let reads = DispatchQueue(label: "larder.disk.read", qos: .userInitiated, attributes: .concurrent)
    /// Writes, deletions and evictions in one order, so a deletion never races a newer write.
    private let writes = DispatchQueue(label: "larder.disk.write", qos: .utility)

    /// Opens (creating if needed) the directory, drops leftover temporary files and rebuilds
    /// the index from the files there, oldest first to evict.
    public init(directory: String, budget: Int) throws {
        self.directory = directory
        self.budget = budget
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        for leftover in (try? FileManager.default.contentsOfDirectory(atPath: directory + "/tmp")) ?? [] {
            unlink(directory + "/tmp/" + leftover)
        }
        var found: [(hash: String, size: Int, modified: Int)] = []
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where folder.utf8.count == 2 {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory + "/" + folder)) ?? []
            where name.utf8.count == 64 && name.hasPrefix(folder) {
                var info = stat()
                guard stat(directory + "/" + folder + "/" + name, &info) == 0 else { continue }
                found.append((name, Int(info.st_size), info.st_mtim.tv_sec))
            }
        }
        index.withLock { index in
            for file in found.sorted(by: { $0.modified < $1.modified }) {
                index.clock += 1
                index.entries[file.hash] = IndexEntry(size: file.size, lastUse: index.clock)
                index.bytes += file.size
            }
        }
        let victims = index.withLock { Self.evict(&$0, budget: budget) }
        victims.forEach { unlink(path(for: $0)) }
    }

    /// Checks the directory can be written (for readiness).
    public var isWritable: Bool { access(directory + "/tmp", W_OK) == 0 }

    public var bytes: Int { index.withLock { $0.bytes } }
    public var count: Int { index.withLock { $0.entries.count } }
    public var evictions: Int { index.withLock { $0.evictions } }
    /// Files found damaged on read and removed.
    public var corruptions: Int { index.withLock { $0.corruptions } }

    static func hash(_ key: String) -> String {
        Hex.string(SHA256.hash(data: Array(key.utf8)))
    }

    func path(for hash: String) -> String { "\(directory)/\(hash.prefix(2))/\(hash)" }

    /// The entry stored for `key`, or nil when there is none or its file is damaged (then removed).
    public func read(_ key: String) async -> CacheEntry? {
        let hash = Self.hash(key)
        guard index.withLock({ $0.entries[hash] != nil }) else { return nil }
        let path = path(for: hash)
        let entry: CacheEntry? = await withCheckedContinuation { continuation in
            reads.async { continuation.resume(returning: Self.readFile(path).flatMap { DiskEntryCodec.decode($0, key: key) }) }
        }
        if entry == nil {
            index.withLock { $0.corruptions += 1 }
            await remove(key)
        } else {
            index.withLock { index in
                index.clock += 1
                index.entries[hash]?.lastUse = index.clock
            }
        }
        return entry
    }

    /// Stores the entry in the background; `waitForWrites` waits for every write started so far.
    public func write(_ key: String, _ entry: CacheEntry) {
        let hash = Self.hash(key)
        let bytes = DiskEntryCodec.encode(key: key, entry: entry)
        index.withLock { $0.pendingWrites += 1 }
        writes.async { [self] in
            if writeFile(bytes, to: path(for: hash)) {
                let victims = index.withLock { index in
                    if let old = index.entries[hash] { index.bytes -= old.size }
                    index.clock += 1
                    index.entries[hash] = IndexEntry(size: bytes.count, lastUse: index.clock)
                    index.bytes += bytes.count
                    return Self.evict(&index, budget: budget)
                }
                victims.forEach { unlink(path(for: $0)) }
            }
            let waiters = index.withLock { index in
                index.pendingWrites -= 1
                guard index.pendingWrites == 0 else { return [CheckedContinuation<Void, Never>]() }
                defer { index.writeWaiters = [] }
                return index.writeWaiters
            }
            waiters.forEach { $0.resume() }
        }
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

    public func remove(_ key: String) async {
        let hash = Self.hash(key)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            writes.async { [self] in
                index.withLock { index in
                    if let old = index.entries.removeValue(forKey: hash) { index.bytes -= old.size }
                }
                unlink(path(for: hash))
                continuation.resume()
            }
        }
    }

    /// Drops least recently used entries until the index fits the budget; returns their hashes.
    private static func evict(_ index: inout Index, budget: Int) -> [String] {
        guard index.bytes > budget else { return [] }
        var victims: [String] = []
        for (hash, entry) in index.entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard index.bytes > budget else { break }
            index.entries.removeValue(forKey: hash)
            index.bytes -= entry.size
            index.evictions += 1
            victims.append(hash)
        }
        return victims
    }

    // MARK: Files

    private static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0, info.st_size < 1 << 31 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            offset += n
        }
        return bytes
    }

    /// temp file → write → fsync → rename. False on any failure (the old entry, if any, stays).
    private func writeFile(_ bytes: [UInt8], to path: String) -> Bool {
        let folder = String(path[..<path.lastIndex(of: "/")!])
        mkdir(folder, 0o755)
        let temporary = "\(directory)/tmp/\(UUID().uuidString)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return false }
        var offset = 0
        var ok = true
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { ok = false; break }
            offset += n
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            return false
        }
        return true
    }
}
