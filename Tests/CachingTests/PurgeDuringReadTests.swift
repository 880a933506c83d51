import Synchronization
import Foundation
import Locking
import Testing
import TestSupport
@testable import Caching
import Bodies

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

    /// A newer answer stored while an older one was being read from another tier: the read
    /// does not put the older back over it.
    @Test func anItemReadBeforeANewerAnswerWasStoredIsNotKept() {
        let memory = MemoryTier(budget: 1 << 20)
        let newer = entry([("Cache-Control", "max-age=600")], body: "{\"v\":2}")
        let before = memory.removals
        memory.set("/a", .response(StoredResponse(entry: newer, rendered: .plain(newer))))
        #expect(memory.set("/a", item, unlessRemovedSince: before) == nil)
        guard case .response(let held)? = memory.get("/a") else { return #expect(Bool(false), "the newer answer is gone") }
        #expect(held.entry == newer)
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

    /// The case CI met, end to end: a replica reads an entry from the shared store, a purge
    /// reaches the replica while that read is under way, and the read must not bring the entry
    /// back into memory or onto the disk.
    @Test func aPurgeDuringASharedReadLeavesNothingBehind() async throws {
        let store = HeldStore()
        let memory = MemoryTier(budget: 1 << 20), disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 20)
        let shared = SharedTier(store: store, prefix: "t:", lockExpiry: .seconds(5), waitLimit: .seconds(5), memory: memory, disk: disk)
        let fetcher = ScriptedUpstream(clock: ManualClock())
        let cache = Cache(route: "test", policy: CachePolicy(defaultLifetime: 600), memory: memory, disk: disk, shared: shared,
                          fetcher: fetcher, clock: fetcher.clock) { _, entry in .plain(entry) }
        let key = cache.key("k")
        _ = await cache.answer(Harness.request("k"))
        for _ in 0..<400 where !store.holdsEntry { try await Task.sleep(for: .milliseconds(5)) }
        #expect(store.holdsEntry, "the miss was stored in the shared tier")
        // Only the shared store has it now, as on a replica that has not read it yet.
        memory.remove(key)
        await disk.remove(key)

        store.holdReads()
        let reading = Task { await cache.answer(Harness.request("k")) }
        for _ in 0..<400 where store.readsHeld == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(store.readsHeld == 1)
        #expect(await CachePurger(memory: memory, disk: disk).purge(.key(key)) == 0)
        store.releaseReads()
        let answer = try #require(await reading.value.answer)
        #expect(answer.status.description.contains("detail=redis"), "the read under way still answers")
        await cache.waitForDiskWrites()
        #expect(memory.get(key) == nil, "not put back in memory")
        #expect(await disk.readKept(key) == nil, "not put back on disk")
        #expect(fetcher.calls == 1)
    }
}

/// A shared store in memory whose reads of values the test can hold.
private final class HeldStore: SharedStore {
    private struct State {
        var values: [String: [UInt8]] = [:]
        var holding = false
        var held: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    var holdsEntry: Bool { state.withLock { $0.values.keys.contains { $0.hasPrefix("t:entry:") } } }
    var readsHeld: Int { state.withLock { $0.held.count } }
    func holdReads() { state.withLock { $0.holding = true } }
    func releaseReads() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        held.forEach { $0.resume() }
    }

    func value(at key: String, limit: Int) async throws -> [UInt8]? {
        await withCheckedContinuation { continuation in
            let holding = state.withLock { state in
                if state.holding { state.held.append(continuation) }
                return state.holding
            }
            if !holding { continuation.resume() }
        }
        return state.withLock { $0.values[key] }
    }
    func store(_ value: [UInt8], at key: String, expiry: Duration, member: String, sets: [String]) async throws {
        state.withLock { $0.values[key] = value }
    }
    func lock(_ key: String, token: String, expiry: Duration, reading: String, limit: Int) async throws -> (taken: Bool, value: [UInt8]?) {
        (true, state.withLock { $0.values[reading] })
    }
    func unlock(_ key: String, token: String, publishing message: [UInt8]) async throws {}
    func members(of sets: [String]) async throws -> [String] { [] }
    func keys(withPrefix prefix: String) async throws -> [String] { state.withLock { $0.values.keys.filter { $0.hasPrefix(prefix) } } }
    func remove(_ keys: [String]) async throws -> [Bool] { state.withLock { state in keys.map { state.values.removeValue(forKey: $0) != nil } } }
    func publish(_ message: [UInt8]) async throws {}
}
