import Foundation

/// Where a stored response lives in every tier: the route that owns it, the resource
/// within that route, and for a `Vary` variant, the variant. Built only through its
/// initialisers, so two routes can never name the same slot (a weather key cannot meet a
/// pass-through target, whatever either spells).
///
/// The parts are joined with NUL, which neither a route name nor a resource holds (a NUL
/// in a resource is escaped), so different parts always make different text; the text is
/// what the disk and shared tiers store and name files by.
///
/// The key is held as the route's part and the rest (resource, and a variant's parts), so
/// that making one per lookup allocates nothing: a route's part is shared by every key of
/// the route, and a short resource fits in its String. Two keys are equal exactly when their
/// texts are, since the route's part holds no NUL.
///
/// Measured: held as a shared route part and the rest, a key costs no allocation per
/// lookup: 18,204 → 17,568 instructions per memory hit (gate path memory-hit).
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The route's part, escaped.
    private let head: String
    /// What follows the first NUL; nil for a text with none (only ever read back from storage).
    private let rest: String?

    /// The whole key, parts joined with NUL (in one allocation: the disk tier asks on every read).
    public var text: String {
        guard var rest else { return head }
        var head = head
        return head.withUTF8 { first in
            rest.withUTF8 { second in
                String(unsafeUninitializedCapacity: first.count + 1 + second.count) { Self.join(first, second, into: $0) }
            }
        }
    }

    /// The whole key's bytes (as `text`), joined on the stack when short: a disk read names
    /// its file from them and checks the file's key against them, and two joined Strings
    /// per read were two allocations.
    public func withText<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        guard var rest, head.utf8.count + 1 + rest.utf8.count <= 1024 else {
            var text = text
            return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
        var head = head
        return head.withUTF8 { first in
            rest.withUTF8 { second in
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: first.count + 1 + second.count) { text in
                    let count = Self.join(first, second, into: text)
                    return body(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: text[..<count])))
                }
            }
        }
    }

    /// Writes `first`, a NUL and `second` at the start of `text`; answers how many bytes.
    private static func join(_ first: UnsafeBufferPointer<UInt8>, _ second: UnsafeBufferPointer<UInt8>,
                             into text: UnsafeMutableBufferPointer<UInt8>) -> Int {
        _ = text.initialize(fromContentsOf: first)
        text[first.count] = 0
        _ = text[(first.count + 1)...].initialize(fromContentsOf: second)
        return first.count + 1 + second.count
    }

    /// The primary key of `resource` in `route` (a route name such as `weather`, or a
    /// pass-through route's origin URL).
    public init(route: String, resource: String) {
        self.init(route: Route(route), resource: resource)
    }

    /// A route's part of its keys, escaped once: a cache makes a key on every lookup.
    public struct Route: Sendable {
        let text: String
        public init(_ route: String) { text = CacheKey.part(route) }
    }

    /// The primary key of `resource` in a route whose part is made already.
    public init(route: Route, resource: String) {
        head = route.text
        rest = Self.part(resource)
    }

    /// A key as the disk tier stored it (its text is checked against the file's checksum).
    init(stored text: String) {
        guard let separator = text.utf8.firstIndex(of: 0) else {
            (head, rest) = (text, nil)
            return
        }
        head = String(text[..<separator])
        rest = String(text[text.utf8.index(after: separator)...])
    }

    private init(head: String, rest: String?) {
        self.head = head
        self.rest = rest
    }

    /// The route part, as given to the initialiser when it held no NUL or `%`.
    public var route: Substring { head[...] }

    /// Whether this is the key of a `Vary` variant (four parts) rather than a primary key (two).
    var isVariant: Bool { rest?.utf8.contains(0) ?? false }

    /// The primary key a variant key belongs to; a primary key is its own.
    var primary: CacheKey {
        guard let rest, let end = rest.utf8.firstIndex(of: 0) else { return self }
        return CacheKey(head: head, rest: String(rest[..<end]))
    }

    /// The key of one variant under this primary key: a generation of the variant index
    /// and the request fields the response varies on.
    func variant(generation: String, selector: String) -> CacheKey {
        CacheKey(head: head, rest: (rest.map { $0 + "\u{0}" } ?? "") + generation + "\u{0}" + Self.part(selector))
    }

    /// A part as it goes into the text. A part holding NUL or `%` has both escaped, so it
    /// cannot end early; the escaped form always holds `%` and a verbatim one never does,
    /// so no two parts come out the same.
    private static func part(_ text: String) -> String {
        var bytes = text
        guard bytes.withUTF8({ $0.contains { $0 == 0 || $0 == 0x25 } }) else { return text }
        return text.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\u{0}", with: "%00")
    }

    public var description: String { text.replacingOccurrences(of: "\u{0}", with: " ") }

    /// A hash of the key for the memory tier's frequency sketch: a multiply-and-rotate over
    /// eight bytes at a time, far less than `hashValue`'s SipHash (the gate's disk-hit path
    /// offers every read to memory, so every one computes it). Seeded anew in each process,
    /// as `hashValue` is, so colliding keys cannot be worked out from outside.
    var sketchHash: Int {
        var head = head, rest = rest ?? ""
        var hash = Self.sketchSeed
        head.withUTF8 { hash = Self.fold($0, into: hash) }
        rest.withUTF8 { hash = Self.fold($0, into: hash ^ 0xFF) }
        return Int(truncatingIfNeeded: hash)
    }

    /// From `Hasher`'s own per-process seed (fixed under `SWIFT_DETERMINISTIC_HASHING`, as the gate runs).
    private static let sketchSeed: UInt64 = {
        var hasher = Hasher()
        hasher.combine(0x6C61_7264_6572 as UInt64)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }()

    private static func fold(_ bytes: UnsafeBufferPointer<UInt8>, into seed: UInt64) -> UInt64 {
        var hash = seed ^ UInt64(bytes.count)
        var at = 0
        let raw = UnsafeRawBufferPointer(bytes)
        while at + 8 <= bytes.count {
            hash = ((hash ^ raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15).rotateLeft(by: 29)
            at += 8
        }
        var tail: UInt64 = 0
        while at < bytes.count {
            tail = tail << 8 | UInt64(bytes[at])
            at += 1
        }
        return ((hash ^ tail) &* 0xBF58_476D_1CE4_E5B9).rotateLeft(by: 31)
    }
}

private extension UInt64 {
    func rotateLeft(by count: UInt64) -> UInt64 { self << count | self >> (64 - count) }
}
