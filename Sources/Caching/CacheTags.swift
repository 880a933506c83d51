import HTTPCore

/// The tags a stored answer carries, by which an operator purges it: its route's name
/// (`weather`, `balance`, or a pass-through route's origin), and the origin's own from
/// `Surrogate-Key` (space-separated) and `Cache-Tag` (comma-separated). Read from the stored
/// entry whenever needed, so they survive restarts with it; the two fields are meant for
/// caches and are never sent to clients.
public enum CacheTags {
    /// The fields tags are read from (lower case), which a relayed answer leaves out.
    public static let fields: Set<String> = ["surrogate-key", "cache-tag"]

    public static func of(_ key: CacheKey, _ entry: CacheEntry) -> [String] { of(key, headers: entry.headers) }

    static func of(_ key: CacheKey, headers: HTTPHeaders) -> [String] {
        var tags = [String(key.route)]
        for field in headers {
            if HTTPHeaders.namesEqual(field.name, "surrogate-key") {
                tags += field.value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            } else if HTTPHeaders.namesEqual(field.name, "cache-tag") {
                tags += field.value.listMembers().map(String.init)
            }
        }
        var seen = Set<String>()
        return tags.filter { seen.insert($0).inserted }
    }
}
