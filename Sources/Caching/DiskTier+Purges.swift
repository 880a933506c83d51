#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore

/// Purges and inspection on the disk tier: the head of a file, removal by selection and
/// lookup by name. The index says which files, so nothing here reads the whole disk.
extension DiskTier {
    /// What the start of a file says.
    enum Head {
        /// The key, status and fields, without the body (unchecked: the body's read checks).
        case entry(key: String, status: Int, headers: HTTPHeaders)
        /// One of ours, of an older format.
        case olderVersion
        case unreadable
    }

    /// The start of a file, read as `readFile` reads (no symlink, FIFO or device).
    static func readHead(_ path: String) -> Head {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return .unreadable }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
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

    /// Removes the selected files in write order (a write queued before the purge lands
    /// first and is removed with the rest). Returns the names removed, each with whether it
    /// held a response (rather than a variant index). While the index loads, the purge is
    /// also remembered for the files it does not know yet (`DiskTier+Loading`).
    func remove(_ selection: CachePurger.Selection) async -> [EntryName: Bool] {
        await withCheckedContinuation { continuation in
            writes.add(start: true) { [self] in
                var unindexed: EntryName?
                var removed = index.withLock { index in
                    var names: [EntryName]
                    switch selection {
                    case .all:
                        names = index.entries.names
                        if index.loading.phase == .listing { index.loading.purgedAll = true }
                    case .tags(let tags):
                        names = index.entries.names(taggedWithAnyOf: tags)
                        if index.loading.phase != .whole { index.loading.purgedTags.formUnion(tags) }
                    case .key(let key):
                        names = index.names(under: key)
                        let primary = DiskTier.name(key)
                        if index.loading.phase != .whole { index.loading.purgedPrimaries.insert(primary) }
                        // Not listed yet: removed by its name, and not indexed when listed.
                        if index.loading.phase == .listing, !index.entries.contains(primary) {
                            index.loading.settled.insert(primary)
                            unindexed = primary
                        }
                    }
                    var removed: [EntryName: Bool] = [:]
                    for name in names {
                        let heldResponse = index.entries.holdsResponse(name)
                        if index.forget(name) != nil { removed[name] = heldResponse }
                    }
                    return removed
                }
                removed.keys.forEach { unlink(path(for: $0)) }
                if let unindexed, unlink(path(for: unindexed)) == 0 { removed[unindexed] = true }
                continuation.resume(returning: removed)
            }
        }
    }

    /// The names of the files stored under a primary key: its own and its variants'.
    func names(under key: CacheKey) -> [EntryName] {
        index.withLock { $0.names(under: key) }
    }

    /// A file's key and entry, found by name, checksum verified; nil if it is gone or damaged.
    func read(name: EntryName) async -> (key: CacheKey, entry: CacheEntry)? {
        let path = path(for: name)
        return await withCheckedContinuation { continuation in
            reads.async {
                // A file under another key's name (copied or moved by hand) is not this one.
                let decoded = Self.readFile(path).flatMap(DiskEntryCodec.decodeKeyed).flatMap { decoded in
                    Self.name(CacheKey(stored: decoded.key)) == name ? (CacheKey(stored: decoded.key), decoded.entry) : nil
                }
                continuation.resume(returning: decoded)
            }
        }
    }
}
