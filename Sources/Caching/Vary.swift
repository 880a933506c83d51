import Foundation

/// The request fields a stored response was selected by (`Vary`, RFC 9110 §12.5.5), and the
/// part of a cache key they make: two requests share a stored response only when every
/// listed field has the same value in both (absent counts as a value of its own).
public struct Vary: Sendable, Equatable {
    /// Lower-cased field names, each once, sorted, so the order `Vary` lists them in does not matter.
    public let names: [String]
    /// `Vary: *` anywhere: no later request can match, so the response is not stored.
    public let isStar: Bool

    public init(_ fieldValues: [String]) {
        var names = Set<String>()
        var star = false
        for value in fieldValues {
            for member in value.split(separator: ",") {
                let name = member.trimmingWhitespace().lowercased()
                if name == "*" { star = true } else if !name.isEmpty { names.insert(name) }
            }
        }
        self.names = names.sorted()
        isStar = star
    }

    public init(of entry: CacheEntry) {
        self.init(entry.headers.filter { CacheEntry.named($0.name, "vary") }.map(\.value))
    }

    public var isEmpty: Bool { names.isEmpty && !isStar }

    /// The listed fields' values in a request, one line each: lines of a field joined with
    /// commas and the spaces around its members dropped, so `a, b` and `a,b` agree.
    public func selector(_ headers: [(name: String, value: String)]) -> String {
        var selector = ""
        for name in names {
            let lines = headers.filter { CacheEntry.named($0.name, name) }.map(\.value)
            selector += name
            if lines.isEmpty {
                selector += "\u{1}\n"  // absent, which no sent value can equal
                continue
            }
            selector += ":"
            selector += lines.joined(separator: ",").split(separator: ",", omittingEmptySubsequences: false)
                .map { $0.trimmingWhitespace() }.joined(separator: ",")
            selector += "\n"
        }
        return selector
    }
}

/// What the primary key holds when the stored response varies: the `Vary` names and a
/// generation, with each variant stored under a secondary key made of both. Removing the
/// index (invalidation) strands every variant of the old generation at once, so none can
/// be served again; the tiers' budgets then evict them.
struct VariantIndex: Sendable, Equatable {
    /// A status no response has marks an index entry.
    static let status = 0

    let vary: Vary
    let generation: String

    init(vary: Vary, generation: String = String(UInt64.random(in: .min ... .max), radix: 16)) {
        self.vary = vary
        self.generation = generation
    }

    init?(_ entry: CacheEntry) {
        guard entry.status == Self.status else { return nil }
        self.init(vary: Vary(of: entry), generation: String(decoding: entry.body, as: UTF8.self))
    }

    func entry(at time: Date) -> CacheEntry {
        CacheEntry(status: Self.status, headers: [("Vary", vary.names.joined(separator: ", "))], body: Array(generation.utf8),
                   requestTime: time, responseTime: time)
    }

    func variantKey(_ primary: String, request headers: [(name: String, value: String)]) -> String {
        primary + "\n#" + generation + "\n" + vary.selector(headers)
    }
}
