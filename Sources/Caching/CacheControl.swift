/// The directives of `Cache-Control` (RFC 9111 §5.2), from a request or a response.
///
/// Names compare case-insensitively, values may be tokens or quoted strings, unknown
/// directives are ignored, and when a directive repeats the first occurrence counts.
/// A delta-seconds value that is not a number makes `max-age` / `s-maxage` zero (the
/// response counts as stale, RFC 9111 §4.2.1) and is ignored elsewhere; a value too
/// large to represent becomes 2147483648 (§1.2.2).
public struct CacheControl: Sendable, Equatable {
    public enum MaxStale: Sendable, Equatable {
        case any
        case seconds(Int)
    }

    public var maxAge: Int?
    public var sharedMaxAge: Int?
    public var noCache = false
    public var noStore = false
    public var isPrivate = false
    public var isPublic = false
    public var mustRevalidate = false
    public var proxyRevalidate = false
    public var mustUnderstand = false
    public var noTransform = false
    public var immutable = false
    public var maxStale: MaxStale?
    public var minFresh: Int?
    public var onlyIfCached = false
    public var staleWhileRevalidate: Int?
    public var staleIfError: Int?

    public init() {}

    /// Parses every field line of the header (each a comma-separated list).
    public init(_ fieldValues: some Sequence<String>) {
        var seen = Set<String>()
        for value in fieldValues {
            for (name, argument) in Self.directives(in: value) where seen.insert(name).inserted {
                apply(name, argument)
            }
        }
    }

    public init(_ fieldValue: String) { self.init([fieldValue]) }

    /// The greatest delta-seconds RFC 9111 §1.2.2 asks a cache to work with.
    public static let deltaSecondsCeiling = 2_147_483_648

    private mutating func apply(_ name: String, _ argument: Substring?) {
        switch name {
        case "max-age": maxAge = Self.deltaSeconds(argument) ?? 0
        case "s-maxage": sharedMaxAge = Self.deltaSeconds(argument) ?? 0
        case "no-cache": noCache = true  // a field-name list, if any, is treated as unqualified no-cache
        case "no-store": noStore = true
        case "private": isPrivate = true
        case "public": isPublic = true
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "no-transform": noTransform = true
        case "immutable": immutable = true
        case "max-stale":
            if argument == nil { maxStale = .any } else if let seconds = Self.deltaSeconds(argument) { maxStale = .seconds(seconds) }
        case "min-fresh": minFresh = Self.deltaSeconds(argument)
        case "only-if-cached": onlyIfCached = true
        case "stale-while-revalidate": staleWhileRevalidate = Self.deltaSeconds(argument)
        case "stale-if-error": staleIfError = Self.deltaSeconds(argument)
        default: break
        }
    }

    /// `1*DIGIT`, optionally quoted; nil when absent or not a number.
    static func deltaSeconds(_ argument: Substring?) -> Int? {
        guard var text = argument else { return nil }
        if text.count >= 2, text.first == "\"", text.last == "\"" { text = text.dropFirst().dropLast() }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        guard text.count <= 10, let value = Int(text) else { return deltaSecondsCeiling }
        return min(value, deltaSecondsCeiling)
    }

    /// Splits `a, b=1, c="x, y"` into lower-cased names and raw arguments, honouring quotes.
    static func directives(in value: String) -> [(String, Substring?)] {
        var result: [(String, Substring?)] = []
        var rest = Substring(value)
        while !rest.isEmpty {
            var end = rest.startIndex
            var quoted = false
            var escaped = false
            while end < rest.endIndex {
                let c = rest[end]
                if escaped { escaped = false } else if quoted && c == "\\" { escaped = true } else if c == "\"" { quoted.toggle() } else if c == "," && !quoted { break }
                end = rest.index(after: end)
            }
            let item = rest[..<end].trimmingOWS()
            rest = end < rest.endIndex ? rest[rest.index(after: end)...] : ""
            guard !item.isEmpty else { continue }
            if let equals = item.firstIndex(of: "=") {
                let name = item[..<equals].trimmingOWS().lowercased()
                result.append((name, item[item.index(after: equals)...].trimmingOWS()))
            } else {
                result.append((item.lowercased(), nil))
            }
        }
        return result
    }
}
