import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import Bodies
import CLinux
import Locking

/// How the disk tier writes its files: whole (a small new entry in one `write` at its name,
/// anything else through a temporary file), in real folders only.
extension DiskTier {

    enum WriteOutcome {
        case written
        /// The file system is full (ENOSPC, EDQUOT).
        case full
        case failed
    }

    /// A new entry of one page at most, once the directory is listed: made at its name and
    /// written (`writeInPlace`). Any other: an unnamed file in the entry's own folder → write
    /// → named (`linkat`), or where the system cannot, temp file → write → rename. On any
    /// failure the old entry, if any, stays.
    ///
    /// No `fsync`, of the file or batched (`syncfs`): a process killed (kill -9, OOM) loses
    /// nothing, since the kernel still writes what it was given, and after a power loss or a
    /// kernel crash a torn or empty file fails its checksum on read and is a miss, which is
    /// all a cache owes. One `fsync` per entry held the writer to a few thousand entries a
    /// second, so a storm of small misses was mostly not kept.
    func writeFile(_ bytes: [UInt8], to path: String) -> WriteOutcome {
        let fill = { (fd: Int32) in bytes.withUnsafeBytes { Self.writeAll(fd, $0) } }
        if writesInPlace(bytes.count), let outcome = writeInPlace(to: path, fill) { return outcome }
        return writeFile(to: path, fill)
    }

    /// Entries up to one page are made at their own name and filled with one `write`: Linux
    /// checks for a fatal signal only between the chunks of a buffered write, and the first
    /// page is one chunk, so a process killed meanwhile leaves the whole file or an empty one
    /// (which the load removes as unfinished).
    static let largestWrittenInPlace = 4096

    /// Whether a new entry of `count` bytes is made at its name (`writeInPlace`).
    func writesInPlace(_ count: Int) -> Bool {
        count <= Self.largestWrittenInPlace && index.withLock { $0.loading.phase != .listing }
    }

    /// A new entry's file made at its name (`O_EXCL`) and filled; nil when the name is taken
    /// (an entry replaced: it goes the atomic way, since readers may have the old file).
    ///
    /// Only once the load has listed the directory: before, a read by name or the listing
    /// itself could meet the file before it is whole; after, a file is read only once the
    /// index has it, which it does once written. The writer spends less CPU per answer so
    /// than through an unnamed file, `O_TMPFILE` being the cost (bench cell: scale, miss
    /// storm, server CPU µs/answer).
    private func writeInPlace(to path: String, _ fill: (Int32) -> Int32) -> WriteOutcome? {
        // `O_NOFOLLOW` guards only the file itself, so the folder is checked not to be a symlink.
        guard ensureDirectory(Self.folder(of: path)) else { return .failed }
        let failure = Self.makeFile(path, fill)
        return failure == EEXIST ? nil : Self.outcome(failure)
    }

    /// An entry whose body lies in a file: `head` (header, key, metadata), then the body
    /// copied by the kernel from `region` (`copy_file_range`, read and written where it cannot).
    func writeFile(head: [UInt8], body region: FileRegion, to path: String) -> WriteOutcome {
        writeFile(to: path) { fd in
            let failure = head.withUnsafeBytes { Self.writeAll(fd, $0) }
            return failure != 0 ? failure : Self.copy(region, to: fd, at: head.count)
        }
    }

    /// A whole answer's spool file made its entry where it lies, rather than copied: the head
    /// written into the room left before the body (`BodyFile.headRoom`, the metadata padded to
    /// fill it) and the file named, as nginx renames a finished temporary file into place.
    /// Nil when it cannot be (a file made with a name, already named, a head longer than the
    /// room, a body not running to the file's end, a folder on another file system): the
    /// body is then copied. The spool's readers read only past the room, so the head written
    /// into it changes nothing they send.
    func nameSpool(_ key: CacheKey, _ entry: CacheEntry, _ region: FileRegion, to path: String) -> (WriteOutcome, Int)? {
        let file = region.file
        var info = stat()
        guard makesUnnamedFiles, file.headRoom > 0, region.offset == file.headRoom,
              fstat(file.descriptor, &info) == 0, Int(info.st_size) == region.offset + region.count,
              let head = DiskEntryCodec.head(key: key.text, entry: entry, length: region.offset, bodyChecksum: {
                  DiskEntryCodec.checksum(continuing: $0, file, offset: region.offset, count: region.count)
              }),
              file.claimForNaming() else { return nil }
        // Nothing was written before the body: the padding's zeros are there already (a hole).
        let written = (head.lastIndex { $0 != 0 } ?? 0) + 1
        guard head[..<written].withUnsafeBytes({ file.write($0, at: 0) }) else { return (Self.outcome(errno), 0) }
        fchmod(file.descriptor, 0o644)
        guard ensureDirectory(Self.folder(of: path)) else { return (.failed, 0) }
        let failure = nameUnnamedFile(file.descriptor, to: path)
        // An entry now, counted by the index: no longer a spool's room.
        if failure == 0 { file.releaseRoom() }
        return failure == EXDEV ? nil : (Self.outcome(failure), head.count + region.count)
    }

    /// `fill` (0, or the errno it failed with) an unnamed file, else a temporary one, and name it.
    private func writeFile(to path: String, _ fill: (Int32) -> Int32) -> WriteOutcome {
        let folder = Self.folder(of: path)
        if makesUnnamedFiles {
            // The folder is looked at only when the file cannot be made in it: checking it
            // first is one more system call per file (bench cell: scale, miss storm).
            var fd = Self.makeUnnamedFile(in: folder)
            if fd < 0, !Self.isFull(errno) {
                guard ensureDirectory(folder) else { return .failed }
                fd = Self.makeUnnamedFile(in: folder)
            }
            if fd >= 0 { return writeUnnamedFile(fd, to: path, fill) }
            if Self.isFull(errno) { return .full }
        }
        guard ensureDirectory(folder) else { return .failed }
        return writeNamedFile(to: path, fill)
    }

    /// The folder part of an entry's path. In the path's own bytes: by Characters the search
    /// cost more instructions than the write's system calls, and through String's UTF-8 view
    /// 2,070 (gate path pass-through-miss).
    private static func folder(of path: String) -> String {
        var path = path
        return path.withUTF8 { bytes in String(decoding: bytes[..<bytes.lastIndex(of: UInt8(ascii: "/"))!], as: UTF8.self) }
    }

    /// An unnamed file (`O_TMPFILE`) in `folder`, which must be a real folder, not a symlink
    /// to one: its descriptor, or -1 (`errno` says why).
    private static func makeUnnamedFile(in folder: String) -> Int32 {
        open(folder, BodyFile.unnamedFileFlag | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o644)
    }

    /// The unnamed file `fd`, made in the entry's folder, filled and linked to its name once
    /// whole; a name already taken (an entry replaced) is replaced through a temporary link.
    /// It makes no directory entry in `tmp` to remove again: through a named file the writer
    /// fell behind a miss storm and answers went unkept (bench cell: scale, miss storm,
    /// share persisted).
    private func writeUnnamedFile(_ fd: Int32, to path: String, _ fill: (Int32) -> Int32) -> WriteOutcome {
        defer { close(fd) }
        let failure = fill(fd)
        return Self.outcome(failure == 0 ? nameUnnamedFile(fd, to: path) : failure)
    }

    /// Names the whole unnamed file `fd` `path`, through a temporary link when the name is
    /// taken: 0, or the errno it failed with.
    private func nameUnnamedFile(_ fd: Int32, to path: String) -> Int32 {
        var failure = Self.name(fd, path)
        if failure == EEXIST {
            let temporary = "\(directory)/tmp/\(temporaryNames.next())"
            failure = Self.name(fd, temporary)
            if failure == 0 { failure = Self.move(temporary, to: path) }
        }
        return failure
    }

    /// Gives the unnamed file `fd` the name `path`: 0, or the errno it failed with.
    private static func name(_ fd: Int32, _ path: String) -> Int32 {
        linkat(AT_FDCWD, "/proc/self/fd/\(fd)", AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno
    }

    /// temp file → `fill` → rename.
    private func writeNamedFile(to path: String, _ fill: (Int32) -> Int32) -> WriteOutcome {
        let temporary = "\(directory)/tmp/\(temporaryNames.next())"
        var failure = Self.makeFile(temporary, fill)
        if failure == ENOENT {  // the temporary folder is gone (filling never fails so)
            forgetIfReplaced()
            ensureTemporaryFolder()
            failure = Self.makeFile(temporary, fill)
        }
        if failure == 0 { failure = Self.move(temporary, to: path) }
        return Self.outcome(failure)
    }

    /// Renames the whole file `temporary` to `path`: 0, or the errno it failed with, and
    /// then `temporary` is removed.
    private static func move(_ temporary: String, to path: String) -> Int32 {
        guard rename(temporary, path) != 0 else { return 0 }
        let failure = errno
        unlink(temporary)
        return failure
    }

    /// Makes the file `path` (`O_EXCL`, never through a symlink) and `fill`s it: 0, or the
    /// errno it failed with. A file made but not filled is removed again.
    private static func makeFile(_ path: String, _ fill: (Int32) -> Int32) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { return errno }
        let failure = fill(fd)
        close(fd)
        if failure != 0 { unlink(path) }
        return failure
    }

    private static func outcome(_ failure: Int32) -> WriteOutcome {
        failure == 0 ? .written : isFull(failure) ? .full : .failed
    }

    /// Writes all of `bytes` at the file's position: 0, or the errno it failed with.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return n < 0 ? errno : EIO }
            offset += n
        }
        return 0
    }

    /// Copies `region` to `fd` from `offset`: 0, or the errno it failed with.
    private static func copy(_ region: FileRegion, to fd: Int32, at offset: Int) -> Int32 {
        var input = region.offset, output = offset
        var left = region.count
        while left > 0 {
            let n = larder_copy_file_range(region.file.descriptor, &input, fd, &output, UInt(left))
            if n < 0, errno == EINTR { continue }
            if n < 0, [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP].contains(errno) { break }
            guard n > 0 else { return n < 0 ? errno : EIO }
            left -= n
        }
        // A file system that cannot copy in the kernel: through a buffer, after what it copied.
        guard left == 0 || lseek(fd, off_t(output), SEEK_SET) >= 0 else { return errno }
        var chunk = [UInt8](repeating: 0, count: min(left, 1 << 20))
        while left > 0 {
            let n = chunk.withUnsafeMutableBytes { region.file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<min($0.count, left)]), at: input) }
            guard n > 0 else { return n < 0 ? errno : EIO }
            let failure = chunk.withUnsafeBytes { writeAll(fd, UnsafeRawBufferPointer(rebasing: $0[..<n])) }
            guard failure == 0 else { return failure }
            input += n
            left -= n
        }
        return 0
    }

    /// Whether an unnamed file can be made in the temporary folder and named through
    /// `/proc/self/fd`: tried once, as `temporary`, which is removed again.
    static func canMakeUnnamedFiles(in directory: String, as temporary: String) -> Bool {
        let fd = makeUnnamedFile(in: directory + "/tmp")
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard name(fd, temporary) == 0 else { return false }
        unlink(temporary)
        return true
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
