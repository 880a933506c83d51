import Dispatch
import Synchronization
import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// An open file that holds a body too large to keep in memory, closed when the last user
/// lets go. Either a spool file (`spool(in:)`), which the upstream client writes as an
/// answer arrives (or the server as a request body does) and which has no name, so a crash
/// leaves nothing to clean up; or a disk entry's file, opened for one hit.
public final class BodyFile: Sendable {
    public let descriptor: Int32
    /// Closed on a queue of its own rather than by whoever lets go last (a spool file): the
    /// last `close` of an unnamed file frees its blocks, which for a streamed 1 GiB answer
    /// (bench cell: large objects, 1 GiB streamed miss) would stall every connection the loop
    /// serves for far longer than a turn.
    private let closesAside: Bool

    /// Bytes at the start of a spool file left for a disk entry's head, its body written after
    /// them: a whole answer's file can then be named as its entry (`DiskTier`) rather than
    /// copied. 0 for any other file.
    public let headRoom: Int
    /// Whether the file was made unnamed (`O_TMPFILE`), so it can be given a name.
    public let isUnnamed: Bool
    private let named = Atomic<Bool>(false)
    /// The disk space a spool file counts against, and how much of it the file holds: given
    /// back when the file closes, or when it becomes an entry (`releaseRoom`).
    private let room: SpoolRoom?
    private let reserved = Atomic<Int>(0)

    /// Owns `descriptor` from now on.
    public init(adopting descriptor: Int32, closesAside: Bool = false, headRoom: Int = 0, unnamed: Bool = false,
                room: SpoolRoom? = nil) {
        self.descriptor = descriptor
        self.closesAside = closesAside
        self.headRoom = headRoom
        self.isUnnamed = unnamed
        self.room = room
    }

    /// Makes sure the file's room covers it up to `end` (a file position), taking more in
    /// whole steps; false, and nothing taken, when the room has not that much. Always true without a room. One
    /// writer calls it.
    public func reserve(through end: Int) -> Bool {
        guard let room else { return true }
        let held = reserved.load(ordering: .relaxed)
        guard held < end else { return true }
        // Every step needed at once or none: a reservation that fails takes no room, so the
        // disk tier evicts no entry for it.
        let needed = (end - held + SpoolRoom.step - 1) / SpoolRoom.step * SpoolRoom.step
        guard room.take(needed) else { return false }
        reserved.add(needed, ordering: .relaxed)
        return true
    }

    /// The file is now an entry, which the disk tier's index counts: its room is given back.
    public func releaseRoom() {
        room?.give(reserved.exchange(0, ordering: .relaxed))
    }

    /// Claims the file to be named, once: false when it cannot be (not unnamed) or was claimed.
    public func claimForNaming() -> Bool {
        isUnnamed && !named.exchange(true, ordering: .acquiringAndReleasing)
    }

    /// A new, empty file in `directory`: unnamed (`O_TMPFILE`) where the file system allows,
    /// else made with a unique name and unlinked at once. Nil when neither works.
    public static func spool(in directory: String, headRoom: Int = 0, room: SpoolRoom? = nil) -> BodyFile? {
        var fd = open(directory, Self.unnamedFileFlag | O_RDWR | O_CLOEXEC, 0o600)
        let unnamed = fd >= 0
        if fd < 0 {
            var template = Array((directory.hasSuffix("/") ? directory : directory + "/").utf8CString.dropLast()) + Array("larder-spool-XXXXXX".utf8CString)
            fd = mkstemp(&template)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            }
        }
        return fd >= 0 ? BodyFile(adopting: fd, closesAside: true, headRoom: headRoom, unnamed: unnamed, room: room) : nil
    }

    /// Linux's `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`), a macro Swift does not import.
    public static let unnamedFileFlag: Int32 = 0o20000000 | O_DIRECTORY

    /// Reads up to `buffer.count` bytes at `offset`; how many (0 at the end, -1 on failure).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        while true {
            let n = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if n < 0, errno == EINTR { continue }
            return n
        }
    }

    /// Writes all of `bytes` at `offset`. False when the disk refused (full, or failing).
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private static let closer = DispatchQueue(label: "larder.spool-close")

    /// Frees `count` bytes from `offset` (`FALLOC_FL_PUNCH_HOLE`): what every reader of a
    /// body read at its readers' pace has sent. False where the file system cannot.
    public func release(_ offset: Int, count: Int) -> Bool {
        larder_punch_hole(descriptor, offset, count) == 0
    }

    deinit {
        guard closesAside else { return _ = close(descriptor) }
        let descriptor = descriptor, room = room, reserved = reserved.load(ordering: .relaxed)
        // Room is given back once the blocks are: after the last close.
        Self.closer.async {
            _ = close(descriptor)
            room?.give(reserved)
        }
    }
}
