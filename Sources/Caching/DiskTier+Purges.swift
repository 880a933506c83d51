import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Locking

/// Purges and inspection on the disk tier: removal by selection and lookup by name. The
/// index says which files, so nothing here reads the whole disk.
extension DiskTier {
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
                // A file under another key's name (copied or moved there by an operator) is not this one.
                let decoded = Self.readFile(path).flatMap(DiskEntryCodec.decodeKeyed).flatMap { decoded in
                    Self.name(CacheKey(stored: decoded.key)) == name ? (CacheKey(stored: decoded.key), decoded.entry) : nil
                }
                continuation.resume(returning: decoded)
            }
        }
    }
}
