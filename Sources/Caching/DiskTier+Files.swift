import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import CLinux
import HTTPCore
import Bodies
import Locking

/// Reading entry files, and keeping them open between reads.
///
/// A disk hit used to cost four system calls: `open`, `fstat`, `pread` and `close`, and the
/// path walk of `open` was the largest of them. An entry's file never changes once it is in
/// place (a new answer is a new file renamed over the name), so a file kept open, with the
/// size `fstat` gave, is read again with one `pread`. The index holds the open file beside
/// the entry, so whatever drops or replaces the entry (a newer write, eviction, purge, a
/// damaged read) closes it, and a reader that opened the file before that cannot keep it
/// after (`keep` checks the entry's stamp). Reads share a file at explicit offsets; a file
/// another read still holds is closed by the last one (`release`).
extension DiskTier {
    /// An entry's file, open for reading.
    struct OpenFile {
        let fd: Int32
        let size: Int
        /// Reads holding the file right now.
        var readers = 0
    }

    /// How an entry's file is reached for one read.
    enum Lease {
        /// The file the index keeps open (its readers count this read).
        case kept(fd: Int32, size: Int)
        /// No open file is kept: open the path. `stamp` tells the write this read found,
        /// so a file opened for an entry that was replaced meanwhile is not kept; `headKnown`
        /// false, the head was not read yet (found at start).
        case path(stamp: UInt32, headKnown: Bool)
        /// Not indexed yet, while the load lists the directory: open the path, if it is there.
        case unindexed
    }

    /// One read of an entry's file: the bytes, and how the file was reached.
    struct EntryRead {
        var bytes: FileRead
        var lease: Lease
    }

    /// Files kept open at most, unless told otherwise: a quarter of the process's file limit,
    /// up to 4,096, so that connections always keep the rest.
    public static let defaultOpenFileLimit: Int = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return Int(min(4096, limit.rlim_cur / 4))
    }()

    /// Reads the entry file `name` (in the index when leased): one `pread` of a kept file,
    /// else the path opened, read, and offered to the index to keep. nil when the entry is
    /// gone; `.notCached` when `cachedOnly` and the page cache did not hold every byte.
    func readEntryFile(_ name: EntryName, cachedOnly: Bool) -> EntryRead? {
        guard let lease = index.withLock({ $0.lease(name) }) else { return nil }
        switch lease {
        case .kept(let fd, let size):
            defer { index.withLock { $0.entries.release(name, fd: fd) } }
            if size > Self.largestReadWhole {
                return EntryRead(bytes: cachedOnly ? .notCached : readInFile(name, BodyFile(adopting: dup(fd)), size: size), lease: lease)
            }
            return EntryRead(bytes: Self.read(fd: fd, size: size, cachedOnly: cachedOnly), lease: lease)
        case .path(let stamp, _):
            guard let (fd, size) = Self.openEntryFile(path(for: name)) else { return EntryRead(bytes: .read(nil), lease: lease) }
            if size > Self.largestReadWhole {
                if cachedOnly { close(fd) }
                return EntryRead(bytes: cachedOnly ? .notCached : readInFile(name, BodyFile(adopting: fd), size: size), lease: lease)
            }
            let read = Self.read(fd: fd, size: size, cachedOnly: cachedOnly)
            let kept = index.withLock { $0.entries.keep(name, OpenFile(fd: fd, size: size), stamp: stamp, limit: openFileLimit) }
            if !kept { close(fd) }
            return EntryRead(bytes: read, lease: lease)
        case .unindexed:
            // The path may not be in the page cache: never opened on an event loop.
            if cachedOnly { return EntryRead(bytes: .notCached, lease: lease) }
            guard let (fd, size) = Self.openEntryFile(path(for: name)) else { return nil }
            if size > Self.largestReadWhole { return EntryRead(bytes: readInFile(name, BodyFile(adopting: fd), size: size), lease: lease) }
            defer { close(fd) }
            return EntryRead(bytes: Self.read(fd: fd, size: size, cachedOnly: false), lease: lease)
        }
    }

    /// Files larger than this are not read whole: their body is served as a region of the
    /// file (`Body.file`), so a hit on a large object costs no memory for its body.
    static let largestReadWhole = HeldAnswer.largestBody

    /// An entry too large to read whole, off the event loop: its head read and decoded, its
    /// checksum taken once after the file was written or found (`Index.verified`), and its
    /// body left in `file`. One that is not a file entry (one with a rendition) of a size a
    /// route can have made is read whole instead; anything else is damage.
    private func readInFile(_ name: EntryName, _ file: BodyFile, size: Int) -> FileRead {
        var header = [UInt8](repeating: 0, count: DiskEntryCodec.headerSize)
        guard header.withUnsafeMutableBytes({ file.read(into: $0, at: 0) }) == header.count else { return .inFile(nil, size: size) }
        guard let layout = DiskEntryCodec.fileLayout(header, fileSize: size) else {
            return size <= 2 * Self.largestReadWhole ? Self.read(fd: file.descriptor, size: size, cachedOnly: false) : .inFile(nil, size: size)
        }
        var head = [UInt8](repeating: 0, count: layout.bodyOffset)
        guard head.withUnsafeMutableBytes({ file.read(into: $0, at: 0) }) == head.count,
              let (key, entry) = DiskEntryCodec.decodeFileEntry(head, layout: layout, file: file) else { return .inFile(nil, size: size) }
        if !index.withLock({ $0.verified.contains(name) }) {
            let afterHeader = head[DiskEntryCodec.headerSize...].withUnsafeBytes { larder_crc32c(0, $0.baseAddress, $0.count) }
            guard DiskEntryCodec.checksum(continuing: afterHeader, file, offset: layout.bodyOffset, count: layout.bodyLength) == layout.checksum else {
                return .inFile(nil, size: size)
            }
            index.withLock { _ = $0.verified.insert(name) }
        }
        return .inFile(DiskEntryCodec.Decoded(key: key, entry: entry, rendition: nil), size: size)
    }

    /// The file's bytes, if it is a regular file of a plausible size. `O_NOFOLLOW` refuses a
    /// symlink, `O_NONBLOCK` keeps a FIFO from blocking the open, and `fstat` rejects anything
    /// that is not a regular file before a byte is read.
    static func readFile(_ path: String) -> [UInt8]? {
        guard case .read(let bytes) = readFile(path, cachedOnly: false) else { return nil }
        return bytes
    }

    enum FileRead {
        /// The bytes; nil when the file is missing, not a regular file or unreadable.
        case read([UInt8]?)
        /// `cachedOnly`, and the page cache did not hold every byte.
        case notCached
        /// An entry too large to read whole (`readInFile`), its body a region of its file; nil
        /// when the file is damaged. `size` is the file's.
        case inFile(DiskEntryCodec.Decoded?, size: Int)
    }

    /// `readFile`; with `cachedOnly`, no byte is waited for (`larder_pread_cached`).
    static func readFile(_ path: String, cachedOnly: Bool) -> FileRead {
        guard let (fd, size) = openEntryFile(path) else { return .read(nil) }
        defer { close(fd) }
        return read(fd: fd, size: size, cachedOnly: cachedOnly)
    }

    /// The path opened for reading, when it is a regular file of a plausible size.
    static func openEntryFile(_ path: String) -> (fd: Int32, size: Int)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0, info.st_size < 1 << 31 else {
            close(fd)
            return nil
        }
        return (fd, Int(info.st_size))
    }

    /// The file's `size` bytes, read at explicit offsets (a kept file is shared between reads).
    static func read(fd: Int32, size: Int, cachedOnly: Bool) -> FileRead {
        var bytes = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let n = bytes.withUnsafeMutableBytes { buffer in
                cachedOnly ? larder_pread_cached(fd, buffer.baseAddress! + offset, UInt(size - offset), offset)
                           : pread(fd, buffer.baseAddress! + offset, size - offset, off_t(offset))
            }
            if n < 0, errno == EINTR { continue }
            // Not cached (EAGAIN), or a file system that cannot tell (EOPNOTSUPP): the readers' turn.
            if cachedOnly, n < 0 { return .notCached }
            guard n > 0 else { return .read(nil) }
            offset += n
        }
        return .read(bytes)
    }
}

extension DiskIndex {
    /// How to read `name` now; nil when it is not in the index.
    mutating func lease(_ name: EntryName) -> DiskTier.Lease? {
        guard let number = slot(of: name) else { return nil }
        guard let file = open[number] else {
            return .path(stamp: slots[Int(number)].stamp, headKnown: !slots[Int(number)].flags.contains(.headUnknown))
        }
        open[number]?.readers += 1
        return .kept(fd: file.fd, size: file.size)
    }

    /// A read of a kept file is over: the file is closed if it was dropped meanwhile and this
    /// was its last read.
    mutating func release(_ name: EntryName, fd: Int32) {
        if let number = slot(of: name), let file = open[number], file.fd == fd {
            open[number]?.readers -= 1
        } else if let readers = retired[fd] {
            if readers > 1 {
                retired[fd] = readers - 1
            } else {
                retired[fd] = nil
                close(fd)
            }
        }
    }

    /// Keeps a file a read opened for the entry stamped `stamp`, unless the entry was
    /// replaced or dropped since, another read kept one first, or `limit` files are open.
    mutating func keep(_ name: EntryName, _ file: DiskTier.OpenFile, stamp: UInt32, limit: Int) -> Bool {
        guard openFiles < limit, let number = slot(of: name), slots[Int(number)].stamp == stamp, open[number] == nil else { return false }
        open[number] = file
        return true
    }

    /// The open file of an entry leaving the index: closed now, or by its last read.
    mutating func closeFile(_ file: DiskTier.OpenFile) {
        if file.readers > 0 {
            retired[file.fd] = file.readers
        } else {
            close(file.fd)
        }
    }

    /// Closes every kept file (or leaves it to its last read).
    mutating func closeAll() {
        let files = open
        open = [:]
        files.values.forEach { closeFile($0) }
    }

    /// Forgets every entry, closing their kept files.
    mutating func removeAll() {
        closeAll()
        let retired = self.retired
        forgetAll()
        self.retired = retired
    }
}
