/// Takes stored answers out of every tier at an operator's request (the admin listener):
/// a resource with all its `Vary` variants, everything carrying a tag, or everything.
public struct CachePurger: Sendable {
    /// What a purge removes.
    public enum Selection: Sendable, Equatable {
        /// A primary key (`Cache.key(resource)`) and every variant stored under it.
        case key(CacheKey)
        /// Every answer carrying any of these tags (see `CacheTags`).
        case tags(Set<String>)
        case all
    }

    public let memory: MemoryTier
    public let disk: DiskTier?
    /// The tier every replica shares: a purge there also reaches every other replica's tiers.
    public let shared: SharedTier?

    public init(memory: MemoryTier, disk: DiskTier?, shared: SharedTier? = nil) {
        self.memory = memory
        self.disk = disk
        self.shared = shared
    }

    /// Removes the selected answers and returns how many stored responses went: one held in
    /// several tiers counts once, and a variant index (no response of its own) not at all.
    public func purge(_ selection: Selection) async -> Int {
        var removed = Set<EntryName>()
        func removeFromMemory() {
            for (key, item) in memory.removeAll(where: { key, item in Self.matches(selection, key, item) }) {
                if case .response = item { removed.insert(DiskTier.name(key)) }
            }
        }
        removeFromMemory()
        if let disk {
            for (name, heldResponse) in await disk.remove(selection) where heldResponse { removed.insert(name) }
            // A request that missed memory meanwhile may have read the file before it went and
            // put it back in memory: take it out again, now that the disk no longer has it.
            removeFromMemory()
        }
        guard let shared else { return removed.count }
        return Set(removed.map(\.hex)).union(await shared.purge(selection)).count
    }

    static func matches(_ selection: Selection, _ key: CacheKey, _ item: MemoryTier.Item) -> Bool {
        switch selection {
        case .all:
            return true
        case .key(let primary):
            return key == primary || key.primary == primary
        case .tags(let tags):
            switch item {
            case .response(let response): return CacheTags.of(key, response.entry).contains(where: tags.contains)
            case .variants: return CacheTags.of(key, headers: []).contains(where: tags.contains)
            }
        }
    }
}
