import Foundation
import Glibc
import HTTPCore
import Bodies
import LoopGuests
import Testing
@testable import Caching

/// A disk hit on an event loop reads the file there when the page cache holds it
/// (`readFile(cachedOnly:)`), and otherwise leaves it to the reader threads: never waiting
/// for the disk on the loop, and with the same checks either way.
@Suite struct LoopReadTests {
    private let sample = entry([("ETag", "\"a\"")], requested: 1, received: 2, body: "on the loop")

    /// A file written and then dropped from the page cache (`POSIX_FADV_DONTNEED` on a
    /// clean file), as after a restart or memory pressure. The kernel may keep pages still
    /// being written back, so the advice is repeated until `mincore` finds none resident.
    private func uncachedFile() throws -> (path: String, bytes: [UInt8]) {
        let path = temporaryDirectory() + "-file"
        let bytes = [UInt8](repeating: 0x61, count: 64 * 1024)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        fsync(fd)
        for _ in 0..<100 {
            #expect(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
            if residentPages(fd, bytes.count) == 0 { break }
            usleep(10_000)
        }
        #expect(residentPages(fd, bytes.count) == 0, "the page cache kept the file")
        return (path, bytes)
    }

    /// How many of the file's pages the page cache holds.
    private func residentPages(_ fd: Int32, _ size: Int) -> Int {
        guard let map = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return -1 }
        defer { munmap(map, size) }
        let pages = (size + Int(getpagesize()) - 1) / Int(getpagesize())
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(map, size, &vector) == 0 else { return -1 }
        return vector.filter { $0 & 1 != 0 }.count
    }

    @Test func aFileThePageCacheHoldsIsReadWithoutWaiting() throws {
        let (path, bytes) = try uncachedFile()
        _ = DiskTier.readFile(path)  // a reader thread's read brings it into the page cache
        guard case .read(let read) = DiskTier.readFile(path, cachedOnly: true) else {
            Issue.record("a cached file was not read")
            return
        }
        #expect(read == bytes)
    }

    /// The kernel may bring a dropped page back before the read (readahead, another process):
    /// the eviction is tried a few times, and one read must find the file uncached.
    @Test func aFileOnlyOnDiskIsLeftToTheReaders() throws {
        let (path, bytes) = try uncachedFile()
        var leftToReaders = false
        for _ in 0..<10 where !leftToReaders {
            if case .notCached = DiskTier.readFile(path, cachedOnly: true) {
                leftToReaders = true
            } else {
                let fd = open(path, O_RDONLY)
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
                close(fd)
                usleep(10_000)
            }
        }
        #expect(leftToReaders, "a file that was not in the page cache was read on the loop every time")
        #expect(DiskTier.readFile(path) == bytes)
    }

    @Test func theLoopsReadKeepsEveryCheck() throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(mkfifo(directory + "/fifo", 0o644) == 0)
        #expect(symlink("/etc/hostname", directory + "/link") == 0)
        #expect(FileManager.default.createFile(atPath: directory + "/empty", contents: Data()))
        for name in ["fifo", "link", "empty", "missing"] {
            guard case .read(nil) = DiskTier.readFile(directory + "/" + name, cachedOnly: true) else {
                Issue.record("\(name) was read")
                continue
            }
        }
    }

    @Test func aDiskHitOnALoopIsServedThere() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        disk.write("key", sample)
        await disk.waitForWrites()
        let turn = HeldTurn()
        let read = await LoopExecutor.$current.withValue(turn) { await disk.readKept("key") }
        #expect(read?.entry == sample)
    }
}
