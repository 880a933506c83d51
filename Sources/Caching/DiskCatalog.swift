import HTTPCore

/// What the disk tier knows of each file beyond its size: its tags, whether it is a
/// variant index, and for a `Vary` variant the primary key it belongs to. Purges find their
/// files here instead of reading the disk. Filled when a file is written, and at start from
/// the head of each file found.
struct DiskCatalog {
    struct Record {
        var tags: [String]
        /// The primary key's file, for a variant; nil for a primary key.
        var primary: EntryName?
        var isVariantIndex: Bool

        init(key: CacheKey, status: Int, headers: HTTPHeaders) {
            tags = CacheTags.of(key, headers: headers)
            primary = key.isVariant ? DiskTier.name(key.primary) : nil
            isVariantIndex = status == VariantIndex.diskStatus
        }
    }

    private(set) var records: [EntryName: Record] = [:]
    private var tagged: [String: Set<EntryName>] = [:]
    private var variants: [EntryName: Set<EntryName>] = [:]

    mutating func add(_ name: EntryName, _ record: Record) {
        remove(name)
        var record = record
        // One copy of each tag's text, however many files carry it.
        record.tags = record.tags.map { tag in tagged.index(forKey: tag).map { tagged[$0].key } ?? tag }
        for tag in record.tags { tagged[tag, default: []].insert(name) }
        if let primary = record.primary { variants[primary, default: []].insert(name) }
        records[name] = record
    }

    mutating func remove(_ name: EntryName) {
        guard let record = records.removeValue(forKey: name) else { return }
        for tag in record.tags {
            tagged[tag]?.remove(name)
            if tagged[tag]?.isEmpty == true { tagged[tag] = nil }
        }
        if let primary = record.primary {
            variants[primary]?.remove(name)
            if variants[primary]?.isEmpty == true { variants[primary] = nil }
        }
    }

    /// The files carrying any of `tags`.
    func names(taggedWithAnyOf tags: Set<String>) -> Set<EntryName> {
        tags.reduce(into: Set<EntryName>()) { $0.formUnion(tagged[$1] ?? []) }
    }

    /// The primary key's file and every variant filed under it.
    func names(under primary: EntryName) -> Set<EntryName> {
        var names = variants[primary] ?? []
        if records[primary] != nil { names.insert(primary) }
        return names
    }
}
