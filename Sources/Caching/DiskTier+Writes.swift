#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// How the disk tier writes its files: whole, through a temporary file, in real folders only.
extension DiskTier {

    enum WriteOutcome {
        case written
        /// The file system is full (ENOSPC, EDQUOT).
        case full
        case failed
    }

    /// temp file → write → rename. On any failure the old entry, if any, stays.
    ///
    /// No `fsync`, of the file or batched (`syncfs`): a process killed (kill -9, OOM) loses
    /// nothing, since the kernel still writes what it was given, and after a power loss or a
    /// kernel crash a torn or empty file fails its checksum on read and is a miss, which is
    /// all a cache owes. One `fsync` per entry held the writer to a few thousand entries a
    /// second, so a storm of small misses was mostly not kept.
    func writeFile(_ bytes: [UInt8], to path: String) -> WriteOutcome {
        // By bytes: a search by Characters cost more instructions than the write's system calls.
        let folder = String(path.utf8[..<path.utf8.lastIndex(of: UInt8(ascii: "/"))!])!
        guard ensureDirectory(folder) else { return .failed }
        let temporary = "\(directory)/tmp/\(temporaryNames.next())"
        var fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        if fd < 0, errno == ENOENT {
            forgetIfReplaced()
            ensureTemporaryFolder()
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        }
        guard fd >= 0 else { return Self.isFull(errno) ? .full : .failed }
        var offset = 0
        var failure: Int32 = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                failure = n < 0 ? errno : EIO
                break
            }
            offset += n
        }
        close(fd)
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporary)
            return Self.isFull(failure) ? .full : .failed
        }
        return .written
    }

    private static func isFull(_ error: Int32) -> Bool { error == ENOSPC || error == EDQUOT }

    /// Makes `folder` a real directory: created when missing (with the cache directory, if
    /// that was deleted), and a symlink or file in its place removed rather than followed.
    private func ensureDirectory(_ folder: String) -> Bool {
        if Self.isDirectory(folder) { return true }
        if mkdir(folder, 0o755) == 0 { return true }
        switch errno {
        case ENOENT:
            forgetIfReplaced()
            ensureTemporaryFolder()
            return mkdir(folder, 0o755) == 0 || Self.isDirectory(folder)
        case EEXIST:
            unlink(folder)  // a symlink or a file where the subfolder belongs
            return mkdir(folder, 0o755) == 0
        default:
            return false
        }
    }

    /// Recreates the cache directory's temporary folder (and the directory) when missing.
    func ensureTemporaryFolder() {
        guard !Self.isDirectory(directory + "/tmp") else { return }
        try? FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
    }

    /// A directory itself, not a symlink to one.
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
