import HTTPCore
import Bodies

/// The tags a stored answer carries, by which an operator purges it: its route's name
/// (`weather`, `balance`, or a pass-through route's origin), and the origin's own from
/// `Surrogate-Key` (space-separated) and `Cache-Tag` (comma-separated). Read from the stored
/// entry whenever needed, so they survive restarts with it; the two fields are meant for
/// caches and are never sent to clients.
///
/// An origin chooses how many tags it sends, and each tier keeps them (memory and disk in the
/// entry, the disk index and Redis as sets), so what is kept is capped as Fastly caps
/// `Surrogate-Key`: a tag longer than `tagLimit` bytes is dropped, and of the rest an answer
/// keeps the first ones, in the order sent, up to `answerLimit` bytes (each tag with one
/// separator, a repeat each time). A tag not kept does not select the answer in a purge.
public enum CacheTags {
    /// The fields tags are read from (lower case), which a relayed answer leaves out.
    public static let fields: Set<String> = ["surrogate-key", "cache-tag"]
    /// The bytes of the origin's tags one answer keeps, separators counted.
    public static let answerLimit = 16 * 1024
    /// The longest tag kept, in bytes.
    public static let tagLimit = 1024

    public static func of(_ key: CacheKey, _ entry: CacheEntry) -> [String] { of(key, headers: entry.headers) }

    static func of(_ key: CacheKey, headers: HTTPHeaders) -> [String] {
        var tags = [String(key.route)]
        var seen: Set<String> = [tags[0]]
        forEachKept(in: headers) { _, tag in
            let tag = String(decoding: tag, as: UTF8.self)
            if seen.insert(tag).inserted { tags.append(tag) }
            return true
        }
        return tags
    }

    /// Tags a purge looks for, arranged for `carry(_:key:headers:)`'s scan of every entry in
    /// memory (under its lock): by byte count, so most of an entry's tags are passed over
    /// after a length check, and none is copied or hashed.
    struct Wanted: Sendable {
        let names: Set<Substring>
        /// The wanted tags' bytes, at the index of their byte count (up to `tagLimit`).
        let byCount: [[[UInt8]]]

        init(_ tags: Set<String>) {
            names = Set(tags.map { Substring($0) })
            var byCount = [[[UInt8]]](repeating: [], count: CacheTags.tagLimit + 1)
            for tag in tags where tag.utf8.count <= CacheTags.tagLimit { byCount[tag.utf8.count].append(Array(tag.utf8)) }
            self.byCount = byCount
        }
    }

    /// Whether the answer stored under `key` with `headers` carries any of `wanted`.
    static func carry(_ wanted: Wanted, key: CacheKey, headers: HTTPHeaders) -> Bool {
        if wanted.names.contains(key.route) { return true }
        var found = false
        forEachKept(in: headers) { _, tag in
            found = wanted.byCount[tag.count].contains { $0.elementsEqual(tag) }
            return !found
        }
        return found
    }

    /// `headers` with the tag fields holding only the tags kept: what a tier stores, so that
    /// no tier holds more of an origin's tags than the caps allow.
    static func capped(_ headers: HTTPHeaders) -> HTTPHeaders {
        var kept: [Int: [String]] = [:]
        forEachKept(in: headers) { field, tag in
            kept[field, default: []].append(String(decoding: tag, as: UTF8.self))
            return true
        }
        var capped: HTTPHeaders = []
        for (index, field) in headers.enumerated() {
            guard isTagField(field.name) else {
                capped.append(field)
                continue
            }
            guard let tags = kept[index] else { continue }
            capped.append((field.name, tags.joined(separator: HTTPHeaders.namesEqual(field.name, "cache-tag") ? ", " : " ")))
        }
        return capped
    }

    /// Whether `name` is one of the tag fields.
    static func isTagField(_ name: String) -> Bool {
        HTTPHeaders.namesEqual(name, "surrogate-key") || HTTPHeaders.namesEqual(name, "cache-tag")
    }

    /// Calls `body` with each tag kept (see the type's note) as bytes, with the index of the
    /// field it is in, until `body` returns false. A repeated tag counts each time, as the
    /// bytes sent do. By byte, not `Character`: grapheme breaking over 16 KiB of tags per
    /// entry made a purge's scan of memory several times slower.
    private static func forEachKept(in headers: HTTPHeaders, _ body: (Int, UnsafeBufferPointer<UInt8>) -> Bool) {
        var used = 0
        for (index, field) in headers.enumerated() {
            let commas: Bool
            if HTTPHeaders.namesEqual(field.name, "surrogate-key") {
                commas = false
            } else if HTTPHeaders.namesEqual(field.name, "cache-tag") {
                commas = true
            } else {
                continue
            }
            var value = field.value
            let goOn = value.withUTF8 { bytes -> Bool in
                var start = 0
                while start < bytes.count {
                    var end = start
                    if commas {
                        while end < bytes.count, bytes[end] != 0x2C { end += 1 }  // ","
                    } else {
                        while end < bytes.count, bytes[end] != 0x20, bytes[end] != 0x09 { end += 1 }  // space, tab
                    }
                    var (low, high) = (start, end)
                    while low < high, isBlank(bytes[low]) { low += 1 }  // a `Cache-Tag` member's OWS
                    while high > low, isBlank(bytes[high - 1]) { high -= 1 }
                    start = end + 1
                    let count = high - low
                    guard count > 0, count <= tagLimit else { continue }
                    guard used + count <= answerLimit else { return false }
                    used += count + 1
                    guard body(index, UnsafeBufferPointer(rebasing: bytes[low..<high])) else { return false }
                }
                return true
            }
            guard goOn else { return }
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
}
