import Foundation
import Glibc
import HTTPCore
import Bodies
import LoopGuests
import Testing
import TestSupport
@testable import Caching

/// The disk tier keeps entry files open between reads (`DiskTier+Files`): a read after the
/// first is one `pread` of the kept file, and whatever drops or replaces an entry closes its
/// file, so no read ever sees an older write and no file stays open for an entry that is gone.
@Suite struct OpenFileTests {
    /// What this process holds open under `directory`: the files' paths, an unlinked one
    /// ending in " (deleted)".
    private func openFiles(under directory: String) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.compactMap { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)).flatMap { $0.hasPrefix(directory) ? $0 : nil }
        }
    }

    /// A tier whose index has loaded: the load lists the directory, holding it open meanwhile,
    /// and that is not a file the tier keeps.
    private func loadedTier(_ directory: String, budget: Int, openFileLimit: Int = DiskTier.defaultOpenFileLimit) async throws -> DiskTier {
        let disk = try DiskTier(directory: directory, budget: budget, openFileLimit: openFileLimit)
        await disk.waitForIndex()
        return disk
    }

    private func body(_ text: String) -> CacheEntry { entry([("ETag", "\"\(text)\"")], requested: 1, received: 2, body: text) }

    /// Reads as an event loop does (`cachedOnly` first), or as any other caller (reader threads).
    private func read(_ disk: DiskTier, _ key: CacheKey, onLoop: Bool) async -> CacheEntry? {
        onLoop ? await LoopExecutor.$current.withValue(HeldTurn()) { await disk.readKept(key)?.entry } : await disk.readKept(key)?.entry
    }

    @Test(arguments: [true, false]) func theSecondReadUsesTheFileTheFirstOpened(onLoop: Bool) async throws {
        let directory = temporaryDirectory()
        let disk = try await loadedTier(directory, budget: 1 << 20)
        disk.write("a", body("first"))
        await disk.waitForWrites()
        #expect(await read(disk, "a", onLoop: onLoop) == body("first"))
        let kept = openFiles(under: directory)
        #expect(kept == [disk.path(for: DiskTier.name("a"))])
        // Moved away behind the tier's back: only the kept file can still be read.
        #expect(rename(kept[0], directory + "/moved") == 0)
        #expect(await read(disk, "a", onLoop: onLoop) == body("first"))
        #expect(openFiles(under: directory) == [directory + "/moved"])
    }

    @Test(arguments: [true, false]) func aNewerWriteIsReadNotTheKeptFile(onLoop: Bool) async throws {
        let directory = temporaryDirectory()
        let disk = try await loadedTier(directory, budget: 1 << 20)
        for generation in 1...3 {
            disk.write("a", body("generation \(generation)"))
            await disk.waitForWrites()
            #expect(await read(disk, "a", onLoop: onLoop) == body("generation \(generation)"))
            #expect(await read(disk, "a", onLoop: onLoop) == body("generation \(generation)"))
            #expect(openFiles(under: directory) == [disk.path(for: DiskTier.name("a"))], "the replaced file is closed")
        }
        #expect(disk.corruptions == 0)
    }

    @Test func removalPurgeAndEvictionCloseTheFile() async throws {
        let directory = temporaryDirectory()
        let disk = try await loadedTier(directory, budget: 2 * DiskTier.blockSize)
        for key: CacheKey in ["a", "b"] { disk.write(key, body("\(key)")) }
        await disk.waitForWrites()
        _ = await disk.readKept("a")
        _ = await disk.readKept("b")
        #expect(openFiles(under: directory).count == 2)

        await disk.remove("a")
        #expect(openFiles(under: directory) == [disk.path(for: DiskTier.name("b"))])
        _ = await disk.remove(.all)
        #expect(openFiles(under: directory).isEmpty)

        // Eviction: a budget of two blocks holds two entries; a third, once asked more often
        // than they were (`AdmissionPolicy`), evicts the one used least recently.
        for key: CacheKey in ["c", "d"] { disk.write(key, body("\(key)")) }
        await disk.waitForWrites()
        _ = await disk.readKept("d")
        _ = await disk.readKept("c")
        #expect(openFiles(under: directory).count == 2)
        var offers = 0
        while disk.evictions == 0, offers < 10 {
            disk.write("e", body("e"))
            await disk.waitForWrites()
            offers += 1
        }
        #expect(offers == 3, "d was asked twice: e gets in when asked a third time")
        #expect(disk.evictions == 1)
        #expect(openFiles(under: directory) == [disk.path(for: DiskTier.name("c"))], "the evicted entry's file is closed")
        #expect(await disk.readKept("d") == nil)
    }

    @Test func pastTheLimitFilesAreReadAndClosed() async throws {
        let directory = temporaryDirectory()
        let disk = try await loadedTier(directory, budget: 1 << 20, openFileLimit: 2)
        let keys: [CacheKey] = ["a", "b", "c", "d"]
        for key in keys { disk.write(key, body("\(key)")) }
        await disk.waitForWrites()
        for _ in 0..<2 {
            for key in keys { #expect(await disk.readKept(key)?.entry == body("\(key)")) }
        }
        #expect(openFiles(under: directory).count == 2)
    }

    @Test func theTierClosesItsFilesWhenItGoes() async throws {
        let directory = temporaryDirectory()
        var disk: DiskTier? = try await loadedTier(directory, budget: 1 << 20)
        disk?.write("a", body("a"))
        await disk?.waitForWrites()
        _ = await disk?.readKept("a")
        #expect(openFiles(under: directory).count == 1)
        weak let gone = disk
        disk = nil
        // The reader thread's block that answered the read may hold the tier a moment longer.
        #expect(await eventually { gone == nil })
        #expect(openFiles(under: directory).isEmpty)
    }

    /// Reads on loops and reader threads while every key is written again and again: each
    /// read gets its own key's body (never another file's), nothing is taken for damage,
    /// and once writing stops only the current files are open.
    @Test func readsDuringRewritesNeverMixFiles() async throws {
        let directory = temporaryDirectory()
        let disk = try await loadedTier(directory, budget: 1 << 20)
        let keys: [CacheKey] = (0..<6).map { "key\($0)" }
        for key in keys { disk.write(key, body("\(key) 0")) }
        await disk.waitForWrites()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for generation in 1...40 {
                    for key in keys { disk.write(key, body("\(key) \(generation)")) }
                    await disk.waitForWrites()
                }
            }
            for reader in 0..<4 {
                group.addTask {
                    for round in 0..<150 {
                        let key = keys[(reader + round) % keys.count]
                        let read = await read(disk, key, onLoop: reader % 2 == 0)
                        let text = read.map { String(decoding: $0.body.inMemory ?? [], as: UTF8.self) } ?? "nothing"
                        #expect(text.hasPrefix("\(key) "), "read \(text) for \(key)")
                    }
                }
            }
        }
        #expect(disk.corruptions == 0)
        let open = openFiles(under: directory)
        #expect(open.allSatisfy { !$0.hasSuffix("(deleted)") }, "\(open)")
        #expect(open.count <= keys.count)
    }

    // The index's rules, with the moments a race would need set up by hand.

    /// A file of this test's own, so that its descriptor is told apart from the same number
    /// reused at once by another test running beside this one.
    private func ownFile() -> (fd: Int32, path: String) {
        let path = temporaryDirectory() + "-open"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        return (open(path, O_RDONLY), path)
    }

    /// Whether `fd` is still the descriptor of `path` (not closed, nor closed and reused).
    private func isOpen(_ fd: Int32, _ path: String) -> Bool {
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/fd/\(fd)", &target, target.count - 1)
        return length > 0 && String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) == path
    }

    @Test func aFileOpenedBeforeARewriteIsNotKept() {
        var index = DiskIndex()
        let name = DiskTier.name("a")
        index.insert(name, charge: 4096, stamp: 1, head: nil)
        guard case .path(let stamp, _)? = index.lease(name) else {
            Issue.record("an entry without a kept file is not read by its path")
            return
        }
        // The newer write lands between the read's open and its offer to keep the file.
        index.forget(name)
        index.insert(name, charge: 4096, stamp: 2, head: nil)
        let older = open("/dev/null", O_RDONLY)
        defer { close(older) }
        let keptOlder = index.keep(name, DiskTier.OpenFile(fd: older, size: 1), stamp: stamp, limit: 10)
        #expect(!keptOlder)
        let (newer, path) = ownFile()
        let keptNewer = index.keep(name, DiskTier.OpenFile(fd: newer, size: 1), stamp: 2, limit: 10)
        #expect(keptNewer)
        index.forget(name)
        #expect(!isOpen(newer, path), "a dropped entry's idle file is closed at once")
    }

    @Test func aFileDroppedDuringReadsIsClosedByTheLastOne() {
        var index = DiskIndex()
        let name = DiskTier.name("a")
        index.insert(name, charge: 4096, stamp: 1, head: nil)
        let (fd, path) = ownFile()
        let kept = index.keep(name, DiskTier.OpenFile(fd: fd, size: 1), stamp: 1, limit: 10)
        #expect(kept)
        for _ in 0..<2 {
            guard case .kept(let leased, _)? = index.lease(name) else {
                Issue.record("the kept file is not leased")
                return
            }
            #expect(leased == fd)
        }
        index.forget(name)
        #expect(isOpen(fd, path), "closed under a read")
        index.release(name, fd: fd)
        #expect(isOpen(fd, path), "closed under the second read")
        index.release(name, fd: fd)
        #expect(!isOpen(fd, path))
        #expect(index.retired.isEmpty && index.openFiles == 0)
    }
}
