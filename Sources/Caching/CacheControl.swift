import HTTPCore

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
        var seen: UInt32 = 0  // a bit per known directive: its first occurrence counts
        for value in fieldValues {
            Self.forEachDirective(in: value) { name, argument in
                guard let directive = Directive(name) else { return }
                let bit = UInt32(1) << directive.rawValue
                guard seen & bit == 0 else { return }
                seen |= bit
                apply(directive, argument)
            }
        }
    }

    public init(_ fieldValue: String) { self.init([fieldValue]) }

    /// The greatest delta-seconds RFC 9111 §1.2.2 asks a cache to work with.
    public static let deltaSecondsCeiling = 2_147_483_648

    /// The directives this cache acts on; every other name is ignored.
    private enum Directive: Int {
        case maxAge, sharedMaxAge, noCache, noStore, isPrivate, isPublic, mustRevalidate, proxyRevalidate, mustUnderstand,
             noTransform, immutable, maxStale, minFresh, onlyIfCached, staleWhileRevalidate, staleIfError

        /// The directive a name (already lower-cased) stands for. Its length picks the one or
        /// few names to compare: every stored entry's fields are read through this.
        init?(_ name: Substring) {
            let found: Directive? = switch name.utf8.count {
            case 6: name == "public" ? .isPublic : nil
            case 7: name == "max-age" ? .maxAge : name == "private" ? .isPrivate : nil
            case 8: name == "no-cache" ? .noCache : name == "no-store" ? .noStore : name == "s-maxage" ? .sharedMaxAge : nil
            case 9: name == "max-stale" ? .maxStale : name == "min-fresh" ? .minFresh : name == "immutable" ? .immutable : nil
            case 12: name == "no-transform" ? .noTransform : nil
            case 14: name == "stale-if-error" ? .staleIfError : name == "only-if-cached" ? .onlyIfCached : nil
            case 15: name == "must-revalidate" ? .mustRevalidate : name == "must-understand" ? .mustUnderstand : nil
            case 16: name == "proxy-revalidate" ? .proxyRevalidate : nil
            case 22: name == "stale-while-revalidate" ? .staleWhileRevalidate : nil
            default: nil
            }
            guard let found else { return nil }
            self = found
        }
    }

    private mutating func apply(_ directive: Directive, _ argument: Substring?) {
        switch directive {
        case .maxAge: maxAge = Self.deltaSeconds(argument) ?? 0
        case .sharedMaxAge: sharedMaxAge = Self.deltaSeconds(argument) ?? 0
        case .noCache: noCache = true  // a field-name list, if any, is treated as unqualified no-cache
        case .noStore: noStore = true
        case .isPrivate: isPrivate = true
        case .isPublic: isPublic = true
        case .mustRevalidate: mustRevalidate = true
        case .proxyRevalidate: proxyRevalidate = true
        case .mustUnderstand: mustUnderstand = true
        case .noTransform: noTransform = true
        case .immutable: immutable = true
        case .maxStale:
            if argument == nil { maxStale = .any } else if let seconds = Self.deltaSeconds(argument) { maxStale = .seconds(seconds) }
        case .minFresh: minFresh = Self.deltaSeconds(argument)
        case .onlyIfCached: onlyIfCached = true
        case .staleWhileRevalidate: staleWhileRevalidate = Self.deltaSeconds(argument)
        case .staleIfError: staleIfError = Self.deltaSeconds(argument)
        }
    }

    /// `1*DIGIT`, optionally quoted; nil when absent or not a number. Read on the bytes:
    /// every stored entry's `max-age` comes through here.
    static func deltaSeconds(_ argument: Substring?) -> Int? {
        guard var digits = argument?.utf8[...] else { return nil }
        if digits.count >= 2, digits.first == 0x22, digits.last == 0x22 { digits = digits.dropFirst().dropLast() }
        guard !digits.isEmpty, digits.allSatisfy(FieldSyntax.isDigit) else { return nil }
        guard digits.count <= 10 else { return deltaSecondsCeiling }
        return min(digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }, deltaSecondsCeiling)
    }

    /// Calls `body` with each directive of `a, b=1, c="x, y"`: its name lower-cased and its
    /// raw argument, honouring quotes. Read byte by byte (every separator is ASCII), since
    /// this runs for every entry fetched or read from disk.
    static func forEachDirective(in value: String, _ body: (_ name: Substring, _ argument: Substring?) -> Void) {
        let bytes = value.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            var end = start
            var quoted = false
            var escaped = false
            while end < bytes.endIndex {
                let c = bytes[end]
                if escaped { escaped = false } else if quoted && c == 0x5C { escaped = true } else if c == 0x22 { quoted.toggle() } else if c == 0x2C && !quoted { break }
                bytes.formIndex(after: &end)
            }
            let item = value[start..<end].trimmingOWS()
            start = end < bytes.endIndex ? bytes.index(after: end) : end
            guard !item.isEmpty else { continue }
            if let equals = item.utf8.firstIndex(of: 0x3D) {
                body(lowercased(item[..<equals].trimmingOWS()), item[item.utf8.index(after: equals)...].trimmingOWS())
            } else {
                body(lowercased(item), nil)
            }
        }
    }

    /// The name as it is when it has no upper-case ASCII letter (the usual case), else lower-cased.
    private static func lowercased(_ name: Substring) -> Substring {
        name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } ? Substring(name.lowercased()) : name
    }
}
