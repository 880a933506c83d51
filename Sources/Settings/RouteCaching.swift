import HTTPCore
public import CacheVocabulary

/// How a pass-through route caches, where the defaults (RFC 9111 as it is) are not wanted:
/// a lifetime by status for answers whose origin states none, stale windows the origin did
/// not name, a cache key that leaves out or sorts query parameters, and the upstream's
/// timeout and concurrency. Set per route in a configuration file.
public struct RouteCaching: Sendable, Equatable {
    /// Freshness by status for an answer without `max-age`, `s-maxage` or `Expires` (nginx's
    /// `proxy_cache_valid`); what the origin states always wins. A status listed here may be
    /// stored without a lifetime of the origin's.
    public var lifetimes: [Int: Duration] = [:]
    /// Stale windows used when the origin names none (its own directives win).
    public var staleWhileRevalidate: Duration = .zero
    public var staleIfError: Duration = .zero
    /// Query parameters left out of the cache key (`utm_source`); the origin still gets them.
    public var ignoredQuery: [String] = []
    /// Whether the key's query parameters are sorted, so `?b=1&a=2` and `?a=2&b=1` share an entry.
    public var sortsQuery = false
    /// The whole upstream exchange and the requests in flight to the origin; nil for the
    /// top-level `upstream-timeout` and `upstream-concurrency`.
    public var timeout: Duration?
    public var concurrency: Int?
    /// The largest answer this route stores; nil for the top-level `max-object-size`.
    public var maxObjectSize: Int?
    /// What of the origin's answer is ignored (`no-cache`, `private`, `Set-Cookie`); none by default.
    public var overrides: CacheOverrides = []
    /// A client's `no-cache` or `max-age=0` on a fresh stored answer: ignored by default, as
    /// nginx and Varnish do, so no client can send every request to the origin.
    public var clientRefresh: ClientRefresh = .ignore

    public init() {}

    /// The target as the cache keys it: the path, then the query without ignored parameters,
    /// sorted if asked. Unchanged when neither applies.
    public func keyTarget(_ target: String) -> String {
        guard !ignoredQuery.isEmpty || sortsQuery, let mark = target.firstIndex(of: "?") else { return target }
        var parameters = target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: false)
        if !ignoredQuery.isEmpty {
            parameters.removeAll { parameter in
                let name = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                return ignoredQuery.contains(String(name)) && !Self.mayCloak(parameter)
            }
        }
        if sortsQuery { parameters.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
        let path = target[..<mark]
        return parameters.isEmpty ? String(path) : path + "?" + parameters.joined(separator: "&")
    }

    /// Whether an ignored parameter may hide another one from the key (parameter cloaking):
    /// an origin that also splits on `;` (Rack, PHP, older Python) reads `utm=x;page=666` as
    /// `page=666`, and one that decodes before it splits reads `%3B` and `%26` as separators
    /// (`%25` as a `%` for a second decoding). Such a parameter stays in the key.
    static func mayCloak(_ parameter: Substring) -> Bool {
        let bytes = Array(parameter.utf8)
        for (at, byte) in bytes.enumerated() {
            if byte == UInt8(ascii: ";") { return true }
            guard byte == UInt8(ascii: "%"), at + 2 < bytes.count else { continue }
            switch (bytes[at + 1], bytes[at + 2] | 0x20) {
            case (UInt8(ascii: "3"), UInt8(ascii: "b")), (UInt8(ascii: "2"), UInt8(ascii: "6")), (UInt8(ascii: "2"), UInt8(ascii: "5")): return true
            default: continue
            }
        }
        return false
    }
}
