import Foundation
import HTTPCore
import Bodies

/// What a primary key holds when the stored response varies: the `Vary` names and a
/// generation, with each variant stored under a key made of both. Removing the index
/// (invalidation) strands every variant of the old generation at once, so none can be
/// served again; the tiers' budgets then evict them.
public struct VariantIndex: Sendable, Equatable {
    let vary: Vary
    let generation: String

    init(vary: Vary, generation: String = String(UInt64.random(in: .min ... .max), radix: 16)) {
        self.vary = vary
        self.generation = generation
    }

    func variantKey(_ primary: CacheKey, request headers: HTTPHeaders) -> CacheKey {
        primary.variant(generation: generation, selector: vary.selector(headers))
    }

    // MARK: On disk

    /// A status no response has marks an index in the disk tier's entry format.
    static let diskStatus = 0

    /// The index a disk entry holds, or nil when the entry is a response.
    init?(diskEntry entry: CacheEntry) {
        guard entry.status == Self.diskStatus else { return nil }
        self.init(vary: Vary(of: entry), generation: String(decoding: entry.body.inMemory ?? [], as: UTF8.self))
    }

    func diskEntry(at time: Date) -> CacheEntry {
        CacheEntry(status: Self.diskStatus, headers: [("Vary", vary.names.joined(separator: ", "))], body: Array(generation.utf8),
                   requestTime: time, responseTime: time)
    }

    var memoryCost: Int { MemoryCost.allocation(64) + vary.names.reduce(0) { $0 + MemoryCost.string($1) } + MemoryCost.string(generation) }
}
