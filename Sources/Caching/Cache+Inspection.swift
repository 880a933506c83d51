import HTTPCore
import Bodies
import Foundation

/// What is stored for a resource, as the admin listener's `GET /cache` shows it.
public struct StoredSummary: Sendable, Equatable {
    /// `memory`, `disk`, or both.
    public var tiers: [String]
    public var status: Int
    /// Current age and freshness lifetime (RFC 9111 §4.2), whole seconds.
    public var age: Int
    public var lifetime: Int
    public var etag: String?
    public var lastModified: String?
    public var tags: [String]
    /// Body bytes.
    public var size: Int
    /// Whether this is one `Vary` variant of the resource.
    public var isVariant: Bool
}

extension Cache {
    /// Every response stored for `resource` (one per variant), from both tiers, without
    /// changing what is stored or how recently it was used.
    public func stored(_ resource: String) async -> [StoredSummary] {
        let primary = key(resource)
        var found: [CacheKey: (entry: CacheEntry, tiers: [String])] = [:]
        for (key, item) in memory.items(where: { key, _ in key == primary || key.primary == primary }) {
            if case .response(let response) = item { found[key] = (response.entry, ["memory"]) }
        }
        if let disk {
            for name in disk.names(under: primary) {
                guard let (key, entry) = await disk.read(name: name), VariantIndex(diskEntry: entry) == nil else { continue }
                found[key, default: (entry, [])].tiers.append("disk")
            }
        }
        let now = clock.now()
        return found.sorted { $0.key.text < $1.key.text }.map { key, stored in
            StoredSummary(tiers: stored.tiers, status: stored.entry.status,
                          age: Freshness.ageHeader(Freshness.currentAge(of: stored.entry, now: now)),
                          lifetime: Freshness.wholeSeconds(Freshness.lifetime(of: stored.entry, policy: policy)),
                          etag: stored.entry.etag, lastModified: stored.entry.lastModified, tags: CacheTags.of(key, stored.entry),
                          size: stored.entry.body.countSoFar, isVariant: key.isVariant)
        }
    }
}
