import Foundation
import HTTPCore
import Bodies
import Testing
@testable import Caching

/// Origins choose an answer's tags (`Surrogate-Key`, `Cache-Tag`), so an origin may send
/// thousands: the tags kept are capped per answer and per tag (`CacheTags`), count against
/// the budget of the tier holding them, and a purge by one tag stays quick however many
/// tagged answers are stored.
@Suite(.timeLimit(.minutes(2))) struct CacheTagLimitsTests {
    /// 5,000 distinct tags of about 16 bytes: some 80 KB of header, as an origin may send.
    private static func manyTags(_ answer: Int, count: Int = 5_000) -> String {
        (0..<count).map { "a\(answer)-tag-\(String($0 + 100_000))" }.joined(separator: " ")
    }

    /// An answer with 5,000 tags, `first` before them and `last` after (past the cap).
    private static func tagged(_ answer: Int, first: String = "", last: String = "") -> CacheEntry {
        entry([("Cache-Control", "max-age=600"), ("Surrogate-Key", first + " " + manyTags(answer) + " " + last)],
              body: "{\"n\":\(answer)}")
    }

    @Test func aPurgeOfOneTagAmongManyTaggedAnswersIsQuickAndExact() async throws {
        let memory = MemoryTier(budget: 64 << 20)
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 30)
        for answer in 0..<300 {
            let stored = Self.tagged(answer, first: answer % 100 == 7 ? "wanted" : "")
            let key = CacheKey(stringLiteral: "/t\(answer)")
            memory.set(key, .response(StoredResponse(entry: stored, rendered: .plain(stored))))
            disk.write(key, stored)
        }
        await disk.waitForWrites()
        let started = ContinuousClock.now
        let purged = await CachePurger(memory: memory, disk: disk).purge(.tags(["wanted"]))
        let took = ContinuousClock.now - started
        #expect(purged == 3)
        #expect(took < .seconds(3), "purging one tag took \(took)")  // 7.7–9.4 s when every entry's tags were split into strings
        #expect(memory.get("/t7") == nil && memory.get("/t8") != nil)
    }

    @Test func tagsBeyondTheCapsAreNotKeptAndSelectNothing() async throws {
        let long = String(repeating: "x", count: CacheTags.tagLimit + 1), longest = String(repeating: "y", count: CacheTags.tagLimit)
        let stored = entry([("Cache-Tag", "first, \(long), \(longest)"), ("Surrogate-Key", Self.manyTags(0) + " last")])
        let tags = CacheTags.of("/a", stored)
        #expect(tags.prefix(3) == ["test", "first", longest])
        #expect(!tags.contains(long) && !tags.contains("last"))
        #expect(tags.dropFirst().reduce(0) { $0 + $1.utf8.count + 1 } <= CacheTags.answerLimit + 1)
        #expect(tags.count > 800, "the cap keeps the first 16 KiB, not fewer")
        // The entry itself keeps no more than that: every tier stores the trimmed fields.
        let fieldBytes = stored.headers.filter { CacheTags.isTagField($0.name) }.reduce(0) { $0 + $1.value.utf8.count }
        #expect(fieldBytes <= CacheTags.answerLimit)
        #expect(stored.headers.first?.value.hasPrefix("first, ") == true)

        let memory = MemoryTier(budget: 1 << 20)
        memory.set("/a", .response(StoredResponse(entry: stored, rendered: .plain(stored))))
        let purger = CachePurger(memory: memory, disk: nil)
        #expect(await purger.purge(.tags([long, "last"])) == 0)
        #expect(await purger.purge(.tags([longest])) == 1)
    }

    @Test func theMemoryTierCountsTagBytesAndStaysWithinItsBudget() {
        let plain = entry([("Cache-Control", "max-age=600")], body: "{\"n\":0}")
        let stored = Self.tagged(0)
        let cost = StoredResponse(entry: stored, rendered: .plain(stored)).cost
        let plainCost = StoredResponse(entry: plain, rendered: .plain(plain)).cost
        let kept = stored.headers.first { CacheTags.isTagField($0.name) }!.value.utf8.count
        #expect(cost - plainCost >= kept, "the header's bytes count")
        let memory = MemoryTier(budget: 16 << 20)
        for answer in 0..<600 {
            let tagged = Self.tagged(answer)
            memory.set(CacheKey(stringLiteral: "/t\(answer)"), .response(StoredResponse(entry: tagged, rendered: .plain(tagged))))
            #expect(memory.bytes <= memory.budget)
        }
        #expect(memory.count == 600, "capped tags leave room for every answer")
    }

    @Test func theDiskIndexKeepsOnlyTheCappedTags() async throws {
        let disk = try DiskTier(directory: temporaryDirectory(), budget: 1 << 30)
        disk.write("/a", Self.tagged(1, last: "late"))
        await disk.waitForWrites()
        #expect(await disk.remove(.tags(["late"])).isEmpty)
        #expect(await disk.remove(.tags(["a1-tag-100000"])).count == 1)
    }
}
