import HTTPCore
import Testing
@testable import Caching

/// The compact disk index on its own: the hash table, the policy's order (least recently
/// used first while nothing contests), the tag sets and what an entry weighs.
@Suite struct DiskIndexTests {
    private func head(_ key: CacheKey, tags: [String] = []) -> DiskIndex.Head {
        DiskIndex.Head(key: key, status: 200, headers: HTTPHeaders(tags.isEmpty ? [] : [("Surrogate-Key", tags.joined(separator: " "))]))
    }

    @Test func anEntryCostsASlotOfFortyEightBytesAndAPolicyNodeOfThirtyTwo() {
        #expect(MemoryLayout<DiskIndex.Slot>.stride == 48)
        #expect(AdmissionPolicy.nodeStride == 32)
    }

    /// Random inserts, uses and removals against a plain model: membership, bytes, and the
    /// order eviction takes, through the table's growth and its backward-shift deletions.
    /// Without a budget set every entry stays in the policy's window: least recently used order.
    @Test func agreesWithAModelOfNamesInUseOrder() {
        var index = DiskIndex()
        var model: [EntryName] = []  // least recently used first
        var random = SystemRandomNumberGenerator()
        let names = (0..<600).map { DiskTier.name(CacheKey(stringLiteral: "r:\($0)")) }
        for step in 0..<20_000 {
            let name = names[Int.random(in: 0..<names.count, using: &random)]
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                index.insert(name, charge: 4096, stamp: UInt32(step), head: nil)
                model.removeAll { $0 == name }
                model.append(name)
            case 5..<8:
                index.touch(name)
                if let at = model.firstIndex(of: name) { model.append(model.remove(at: at)) }
            default:
                let charged = index.forget(name)
                #expect((charged != nil) == model.contains(name), "step \(step)")
                model.removeAll { $0 == name }
            }
            #expect(index.count == model.count && index.bytes == model.count * 4096, "step \(step)")
            #expect(index.nextVictim == model.first, "step \(step)")
        }
        #expect(names.allSatisfy { index.contains($0) == model.contains($0) })
        var evicted: [EntryName] = []
        while let oldest = index.nextVictim {
            index.forget(oldest)
            evicted.append(oldest)
        }
        #expect(evicted == model)
        #expect(index.count == 0 && index.bytes == 0)
    }

    @Test func tagsAndPrimariesSelectTheirFiles() {
        var index = DiskIndex()
        let keys = [("a", "1"), ("a", "2"), ("b", "1")].map { CacheKey(route: $0.0, resource: $0.1) }
        for (number, key) in keys.enumerated() {
            index.insert(DiskTier.name(key), charge: 4096, stamp: UInt32(number), head: head(key, tags: number == 2 ? ["red"] : []))
        }
        #expect(Set(index.names(taggedWithAnyOf: ["a"])) == Set([DiskTier.name(keys[0]), DiskTier.name(keys[1])]))
        #expect(index.names(taggedWithAnyOf: ["red", "nothing"]) == [DiskTier.name(keys[2])])
        #expect(index.names(taggedWithAnyOf: ["nothing"]).isEmpty)
        // A variant is filed under its primary key's file.
        let variant = (CacheKey(route: "v", resource: "1")).variant(generation: "g1", selector: "accept=json")
        index.insert(DiskTier.name(variant), charge: 4096, stamp: 9, head: head(variant))
        let primary = DiskTier.name(variant.primary)
        index.insert(primary, charge: 4096, stamp: 10,
                     head: DiskIndex.Head(key: variant.primary, status: VariantIndex.diskStatus, headers: HTTPHeaders([])))
        #expect(Set(index.names(under: primary)) == Set([primary, DiskTier.name(variant)]))
        #expect(!index.holdsResponse(primary) && index.holdsResponse(DiskTier.name(variant)))
    }

    /// Tags that every answer carries differently do not stay once their entries are gone.
    @Test func tagSetsAreFreedWithTheirLastEntry() {
        var index = DiskIndex()
        for i in 0..<1000 { index.insert(DiskTier.name(CacheKey(stringLiteral: "t:\(i)")), charge: 4096, stamp: 0, head: head("t:\(i)", tags: ["item-\(i)"])) }
        #expect(index.tagSets.count == 1001)
        for i in 0..<1000 where i % 2 == 0 { index.forget(DiskTier.name(CacheKey(stringLiteral: "t:\(i)"))) }
        #expect(index.tagSets.count == 501)
        #expect(index.names(taggedWithAnyOf: ["item-1"]) == [DiskTier.name("t:1")])
        #expect(index.names(taggedWithAnyOf: ["item-2"]).isEmpty)
        for i in 0..<1000 where i % 2 == 1 { index.forget(DiskTier.name(CacheKey(stringLiteral: "t:\(i)"))) }
        #expect(index.tagSets.count == 1)
    }

    /// Entries found at start join the order behind those used since (on probation, never
    /// asked as far as the policy knows), newest of them first given.
    @Test func entriesFoundAtStartAreOrderedBehindTheOnesUsedSince() {
        var index = DiskIndex()
        let found = (0..<3).map { DiskTier.name(CacheKey(stringLiteral: "f:\($0)")) }
        for name in found { index.insert(name, charge: 4096, stamp: 0, head: nil, unordered: true) }
        index.insert(DiskTier.name("new:1"), charge: 4096, stamp: 1, head: nil)
        index.touch(found[1])  // read before the order was known: it is recent
        #expect(index.nextVictim == DiskTier.name("new:1"))
        index.order(newestFirst: [found[2], found[1], found[0]].map { index.slot(of: $0)! })
        var order: [EntryName] = []
        while let oldest = index.nextVictim {
            index.forget(oldest)
            order.append(oldest)
        }
        #expect(order == [found[0], found[2], DiskTier.name("new:1"), found[1]])
    }
}
