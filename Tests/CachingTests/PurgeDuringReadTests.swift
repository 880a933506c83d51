import Foundation
import Testing
@testable import Caching

/// A read of the disk or shared tier that a purge overtakes does not put back what the purge
/// took: not into memory (`MemoryTier.set(_:_:unlessRemovedSince:)`), not onto the disk
/// (`DiskTier.rewrite`). Otherwise a replica told of a purge could serve the purged answer
/// from memory until it expired.
@Suite(.timeLimit(.minutes(1))) struct PurgeDuringReadTests {
    private let stored = entry([("Cache-Control", "max-age=600")], body: "{\"v\":1}")
    private var item: MemoryTier.Item { .response(StoredResponse(entry: stored, rendered: .plain(stored))) }

    @Test func anItemReadBeforeItsKeyWasRemovedIsNotKept() {
        let memory = MemoryTier(budget: 1 << 20)
        let before = memory.removals
        memory.remove("/a")
        #expect(memory.set("/a", item, unlessRemovedSince: before) == nil)
        #expect(memory.get("/a") == nil)
        #expect(memory.set("/a", item, unlessRemovedSince: memory.removals) == true, "a read begun after the removal is kept")
        #expect(memory.get("/a") != nil)
    }

    @Test func anotherKeysRemovalLetsItInButAPurgeBySelectionDoesNot() {
        let memory = MemoryTier(budget: 1 << 20)
        let before = memory.removals
        memory.remove("/other")
        #expect(memory.set("/a", item, unlessRemovedSince: before) == true)
        let again = memory.removals
        _ = memory.removeAll { _, _ in false }  // a purge by tag: it may take any key
        #expect(memory.set("/b", item, unlessRemovedSince: again) == nil)
        #expect(memory.get("/b") == nil)
    }

    @Test func removalsTooManyToRememberKeepEveryReadOut() {
        let memory = MemoryTier(budget: 1 << 20)
        let before = memory.removals
        for i in 0..<40 { memory.remove(CacheKey(stringLiteral: "/other\(i)")) }
        #expect(memory.set("/a", item, unlessRemovedSince: before) == nil)
    }

    @Test func aRewriteOfAFilePurgedSinceItWasReadIsNotWritten() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24)
        disk.write("/a", stored)
        await disk.waitForWrites()
        #expect(await disk.remove(.key("/a")).count == 1)
        disk.rewrite("/a", stored, rendition: Rendition(tag: "json 2", body: Array("{}".utf8)))
        await disk.waitForWrites()
        #expect(await disk.readKept("/a") == nil)
        #expect(!FileManager.default.fileExists(atPath: disk.path(for: DiskTier.name("/a"))))
    }

    @Test func aRewriteOfAFileStillIndexedReplacesIt() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 24)
        disk.write("/a", stored)
        await disk.waitForWrites()
        disk.rewrite("/a", stored, rendition: Rendition(tag: "json 2", body: Array("{}".utf8)))
        await disk.waitForWrites()
        let read = await disk.readKept("/a")
        #expect(read?.entry == stored)
        #expect(read?.rendition?.tag == "json 2")
    }
}
