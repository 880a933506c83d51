import Foundation
import HTTPCore
import Bodies
import Locking
import Synchronization
import Testing
@testable import Caching

/// The disk index loaded in the background: stored answers served before it is whole, and
/// purges and eviction holding while it loads. The load's steps are driven by hand.
@Suite(.timeLimit(.minutes(2))) struct DiskLoadingTests {
    private let sample = entry([("Cache-Control", "max-age=60")], requested: 10, received: 11, body: "{\"t\":1}")

    /// A directory holding `keys`, written by a tier of its own, oldest first by a second each.
    private func stored(_ keys: [CacheKey]) async throws -> String {
        let directory = temporaryDirectory()
        let writer = try DiskTier(directory: directory, budget: 1 << 24)
        for key in keys { writer.write(key, sample) }
        await writer.waitForWrites()
        for (age, key) in keys.reversed().enumerated() {
            var times = [timespec(tv_sec: 1_700_000_000 - age, tv_nsec: 0), timespec(tv_sec: 1_700_000_000 - age, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, writer.path(for: DiskTier.name(key)), &times, 0) == 0)
        }
        return directory
    }

    private func k(_ route: String, _ number: Int) -> CacheKey { CacheKey(route: route, resource: String(number)) }

    private func exists(_ disk: DiskTier, _ key: CacheKey) -> Bool {
        FileManager.default.fileExists(atPath: disk.path(for: DiskTier.name(key)))
    }

    @Test func aFileNotIndexedYetIsServedByItsName() async throws {
        let directory = try await stored([k("a", 1), k("a", 2)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        #expect(disk.count == 0)
        #expect(await disk.read(k("a", 1)) == sample)
        #expect(await disk.read(k("a", 3)) == nil)
        #expect(disk.count == 1 && disk.corruptions == 0)
        disk.loadListing()
        disk.loadHeads()
        #expect(disk.finishLoading() == 2)
        #expect(await disk.read(k("a", 2)) == sample)
    }

    /// A stop ends the load after the batch of heads under way; what was not read is read
    /// on first use. With nothing loading, the stop returns at once.
    @Test func aStopEndsTheLoadBeforeTheHeadsItHasNotRead() async throws {
        let keys = (1...600).map { k("a", $0) }
        let disk = try DiskTier(directory: try await stored(keys), budget: 1 << 24, loadsIndex: false)
        disk.loadListing()
        await disk.stopLoading()
        disk.loadHeads()
        disk.finishLoading()
        let unread = disk.index.withLock { $0.entries.slots.filter { $0.flags.contains(.headUnknown) }.count }
        #expect(unread == keys.count, "no head read after the stop")
        #expect(await disk.read(k("a", 600)) == sample)

        let loading = try DiskTier(directory: try await stored(keys), budget: 1 << 24)
        await loading.stopLoading()
        #expect(loading.isIndexWhole, "the load has ended, its waiters let go")
        await loading.waitForIndex()
    }

    @Test func aTagPurgeWhileListingReachesFilesFoundLater() async throws {
        let directory = try await stored([k("a", 1), k("a", 2), k("b", 1)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        _ = await disk.remove(.tags(["a"]))
        #expect(await disk.read(k("a", 1)) == nil, "served after its purge")
        disk.loadListing()
        disk.loadHeads()
        disk.finishLoading()
        #expect(disk.count == 1)
        #expect(!exists(disk, k("a", 1)) && !exists(disk, k("a", 2)) && exists(disk, k("b", 1)))
        #expect(await disk.read(k("b", 1)) == sample)
    }

    @Test func aTagPurgeBeforeTheHeadsAreReadReachesThemWhenRead() async throws {
        let directory = try await stored([k("a", 1), k("a", 2), k("b", 1)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        disk.loadListing()
        #expect(disk.count == 3)
        _ = await disk.remove(.tags(["a"]))
        #expect(await disk.read(k("a", 1)) == nil, "served after its purge")
        disk.loadHeads()
        disk.finishLoading()
        #expect(disk.count == 1 && !exists(disk, k("a", 2)))
        // Once whole, the index alone answers: a later answer under the tag is kept.
        disk.write(k("a", 9), sample)
        await disk.waitForWrites()
        #expect(await disk.read(k("a", 9)) == sample)
    }

    @Test func aKeyPurgeWhileLoadingRemovesItsVariantsFoundLater() async throws {
        let primary = CacheKey(route: "v", resource: "1")
        let variant = primary.variant(generation: "g", selector: "accept=json")
        let directory = try await stored([primary, variant, k("b", 1)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        _ = await disk.remove(.key(primary))
        disk.loadListing()
        disk.loadHeads()
        disk.finishLoading()
        #expect(!exists(disk, primary) && !exists(disk, variant) && exists(disk, k("b", 1)))
        #expect(disk.count == 1)
    }

    @Test func purgingEverythingWhileListingKeepsOnlyLaterAnswers() async throws {
        let directory = try await stored([k("a", 1), k("b", 1)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        _ = await disk.remove(.all)
        disk.write(k("c", 1), sample)
        await disk.waitForWrites()
        disk.loadListing()
        disk.loadHeads()
        disk.finishLoading()
        #expect(disk.count == 1)
        #expect(!exists(disk, k("a", 1)) && !exists(disk, k("b", 1)))
        #expect(await disk.read(k("c", 1)) == sample)
    }

    /// Eviction waits for the listing, then takes the oldest files found (by time), before
    /// anything written since start.
    @Test func evictionTakesTheOldestFoundFirst() async throws {
        let keys: [CacheKey] = [k("k", 0), k("k", 1), k("k", 2)]
        let directory = try await stored(keys)
        let size = DiskTier.charge(DiskEntryCodec.encode(key: k("k", 0).text, entry: sample).count)
        let disk = try DiskTier(directory: directory, budget: size * 3, loadsIndex: false)
        disk.write(k("new", 1), sample)
        await disk.waitForWrites()
        #expect(disk.evictions == 0)
        disk.loadListing()
        #expect(disk.evictions == 1 && !exists(disk, k("k", 0)))
        disk.write(k("new", 2), sample)
        await disk.waitForWrites()
        #expect(!exists(disk, k("k", 1)) && exists(disk, k("k", 2)) && exists(disk, k("new", 1)) && exists(disk, k("new", 2)))
        disk.loadHeads()
        disk.finishLoading()
        #expect(disk.count == 3 && disk.bytes == size * 3)
    }

    /// The cache directory deleted between the listing and the heads: the load goes on over
    /// an empty index, and the directory is used again.
    @Test func aDirectoryReplacedWhileLoadingIsForgottenNotACrash() async throws {
        let directory = try await stored([k("a", 1), k("a", 2)])
        let disk = try DiskTier(directory: directory, budget: 1 << 24, loadsIndex: false)
        disk.loadListing()
        #expect(disk.count == 2)
        try FileManager.default.removeItem(atPath: directory)
        #expect(disk.isWritable)  // notices the directory went, and makes it again
        #expect(disk.count == 0)
        disk.loadHeads()
        #expect(disk.finishLoading() == 0)
        disk.write(k("b", 1), sample)
        await disk.waitForWrites()
        #expect(await disk.read(k("b", 1)) == sample)
    }

    /// Tens of thousands of entries: the tier answers from disk before its index is whole.
    @Test func aLargeDirectoryIsServedAtOnceAndIndexedInTheBackground() async throws {
        let keys = (0..<20_000).map { CacheKey(stringLiteral: "many:\($0)") }
        let directory = temporaryDirectory()
        let writer = try DiskTier(directory: directory, budget: 1 << 30)
        for key in keys { writer.write(key, sample) }
        await writer.waitForWrites()
        #expect(writer.skippedWrites == 0)

        let disk = try DiskTier(directory: directory, budget: 1 << 30)
        let first = await disk.read(keys[keys.count / 2])
        #expect(first == sample)
        await disk.waitForIndex()
        #expect(disk.isIndexWhole && disk.count == keys.count)
        #expect(await disk.read(keys[0]) == sample)
    }
}
