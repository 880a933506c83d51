import Synchronization
#if canImport(Glibc)
import Glibc
import Locking
#endif

/// A directory's device and inode: the same path made again is another directory.
struct DirectoryIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    /// The directory at `path` now; nil when there is none.
    init?(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// The cache directory deleted (or replaced) while Larder runs: every entry the index held
/// went with it. Kept open, their files would still fill the file system (deleted, not
/// freed) and still be counted; a full disk would be reported until a purge.
extension DiskTier {
    /// Forgets every entry, closing the files kept open, when the directory is not the one
    /// the index describes; then the directory in place (made again if missing) is the one.
    func forgetIfReplaced() {
        let now = DirectoryIdentity(directory)
        let replaced = identity.withLock { known -> Bool in
            guard now != known else { return false }
            known = nil
            return true
        }
        guard replaced else { return }
        let forgotten = index.withLock { index -> Int in
            let count = index.entries.count
            index.entries.removeAll()
            index.full = false
            return count
        }
        ensureTemporaryFolder()
        identity.withLock { $0 = DirectoryIdentity(directory) }
        if forgotten > 0 || now == nil {
            report("the cache directory \(directory) was removed or replaced: its \(forgotten) entries are forgotten, and it is used again")
        }
    }
}
