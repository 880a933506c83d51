import HTTPCore
import Bodies

/// The directives of `Cache-Control` (RFC 9111 §5.2), from a request or a response.
///
/// Names compare case-insensitively, values may be tokens or quoted strings, unknown
/// directives are ignored, and when a directive repeats the first occurrence counts.
/// A delta-seconds value that is not a number makes `max-age` / `s-maxage` zero (the
/// response counts as stale, RFC 9111 §4.2.1) and is ignored elsewhere; a value too
/// large to represent becomes 2147483648 (§1.2.2).
///
/// Measured: read on raw bytes, a stored entry's `Cache-Control` costs 681 instructions
/// against 4,257 through String indices (gate path disk-hit).
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
        init?(_ name: UnsafeBufferPointer<UInt8>) {
            let found: Directive? = switch name.count {
            case 6: name.isExactly("public") ? .isPublic : nil
            case 7: name.isExactly("max-age") ? .maxAge : name.isExactly("private") ? .isPrivate : nil
            case 8: name.isExactly("no-cache") ? .noCache : name.isExactly("no-store") ? .noStore : name.isExactly("s-maxage") ? .sharedMaxAge : nil
            case 9: name.isExactly("max-stale") ? .maxStale : name.isExactly("min-fresh") ? .minFresh : name.isExactly("immutable") ? .immutable : nil
            case 12: name.isExactly("no-transform") ? .noTransform : nil
            case 14: name.isExactly("stale-if-error") ? .staleIfError : name.isExactly("only-if-cached") ? .onlyIfCached : nil
            case 15: name.isExactly("must-revalidate") ? .mustRevalidate : name.isExactly("must-understand") ? .mustUnderstand : nil
            case 16: name.isExactly("proxy-revalidate") ? .proxyRevalidate : nil
            case 22: name.isExactly("stale-while-revalidate") ? .staleWhileRevalidate : nil
            default: nil
            }
            guard let found else { return nil }
            self = found
        }

        /// The longest name above: a longer one is none of them, lower-cased or not.
        static let longestName = 22
    }

    private mutating func apply(_ directive: Directive, _ argument: UnsafeBufferPointer<UInt8>?) {
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

    /// `1*DIGIT`, optionally quoted; nil when absent or not a number.
    static func deltaSeconds(_ argument: Substring?) -> Int? {
        guard var argument else { return nil }
        return argument.withUTF8 { deltaSeconds($0) }
    }

    /// `deltaSeconds` on the bytes: every stored entry's `max-age` comes through here.
    static func deltaSeconds(_ argument: UnsafeBufferPointer<UInt8>?) -> Int? {
        guard var digits = argument?[...] else { return nil }
        if digits.count >= 2, digits.first == 0x22, digits.last == 0x22 { digits = digits.dropFirst().dropLast() }
        guard !digits.isEmpty, digits.allSatisfy(FieldSyntax.isDigit) else { return nil }
        guard digits.count <= 10 else { return deltaSecondsCeiling }
        return min(digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }, deltaSecondsCeiling)
    }

    /// Calls `body` with each directive of `a, b=1, c="x, y"`: its name lower-cased and its
    /// raw argument, honouring quotes. On the raw bytes (every separator is ASCII): through
    /// String indices it cost about 1,400 instructions a directive, and this runs for every
    /// entry fetched or read from disk.
    static func forEachDirective(in value: String,
                                 _ body: (_ name: UnsafeBufferPointer<UInt8>, _ argument: UnsafeBufferPointer<UInt8>?) -> Void) {
        var value = value
        value.withUTF8 { bytes in
            func trimmed(_ range: Range<Int>) -> Range<Int> {
                var (from, to) = (range.lowerBound, range.upperBound)
                while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
                while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
                return from..<to
            }
            var start = 0
            while start < bytes.count {
                var end = start
                var quoted = false
                var escaped = false
                while end < bytes.count {
                    let c = bytes[end]
                    if escaped { escaped = false } else if quoted && c == 0x5C { escaped = true } else if c == 0x22 { quoted.toggle() } else if c == 0x2C && !quoted { break }
                    end += 1
                }
                let item = trimmed(start..<end)
                start = end + 1
                guard !item.isEmpty else { continue }
                if let equals = bytes[item].firstIndex(of: 0x3D) {
                    let argument = UnsafeBufferPointer(rebasing: bytes[trimmed((equals + 1)..<item.upperBound)])
                    withLowercased(UnsafeBufferPointer(rebasing: bytes[trimmed(item.lowerBound..<equals)])) { body($0, argument) }
                } else {
                    withLowercased(UnsafeBufferPointer(rebasing: bytes[item])) { body($0, nil) }
                }
            }
        }
    }

    /// The name with its ASCII letters lower-cased: in place when it has no upper-case one
    /// (the usual case), else copied on the stack. A name longer than every directive's is
    /// passed as it is, since it matches none either way.
    private static func withLowercased(_ name: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        guard name.count <= Directive.longestName, name.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return body(name) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Directive.longestName) { buffer in
            for (i, byte) in name.enumerated() { buffer[i] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
            body(UnsafeBufferPointer(rebasing: buffer[..<name.count]))
        }
    }
}
