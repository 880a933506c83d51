import HTTPCore
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
        let test = Test(selection)
        func removeFromMemory() {
            for (key, item) in memory.removeAll(where: test.matches) {
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

    /// A selection as memory's scan tests it: the wanted tags arranged once for the scan.
    struct Test: Sendable {
        let selection: Selection
        let tags: CacheTags.Wanted

        init(_ selection: Selection) {
            self.selection = selection
            if case .tags(let wanted) = selection { tags = CacheTags.Wanted(wanted) } else { tags = CacheTags.Wanted([]) }
        }

        func matches(_ key: CacheKey, _ item: MemoryTier.Item) -> Bool {
            switch selection {
            case .all:
                return true
            case .key(let primary):
                return key == primary || key.primary == primary
            case .tags:
                switch item {
                case .response(let response): return CacheTags.carry(tags, key: key, headers: response.entry.headers)
                case .variants: return CacheTags.carry(tags, key: key, headers: [])
                }
            }
        }
    }
}
