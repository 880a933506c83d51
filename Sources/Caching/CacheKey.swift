import Foundation

/// Where a stored response lives in every tier: the route that owns it, the resource
/// within that route, and for a `Vary` variant, the variant. Built only through its
/// initialisers, so two routes can never name the same slot (a weather key cannot meet a
/// pass-through target, whatever either spells).
///
/// The parts are joined with NUL, which neither a route name nor a resource holds (a NUL
/// in a resource is escaped), so different parts always make different text; the text is
/// what the tiers hash, compare and (on disk) store.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    public let text: String

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
        var route = route.text, resource = Self.part(resource)
        // Copied once into one allocation: keys are made on every lookup.
        text = route.withUTF8 { first in
            resource.withUTF8 { second in
                String(unsafeUninitializedCapacity: first.count + 1 + second.count) { text in
                    _ = text.initialize(fromContentsOf: first)
                    text[first.count] = 0
                    _ = text[(first.count + 1)...].initialize(fromContentsOf: second)
                    return first.count + 1 + second.count
                }
            }
        }
    }

    /// A key as the disk tier stored it (its text is checked against the file's checksum).
    init(stored text: String) { self.text = text }

    /// The route part, as given to the initialiser when it held no NUL or `%`.
    public var route: Substring {
        text[..<(text.utf8.firstIndex(of: 0) ?? text.endIndex)]
    }

    /// Whether this is the key of a `Vary` variant (four parts) rather than a primary key (two).
    var isVariant: Bool { text.utf8.lazy.filter { $0 == 0 }.count > 1 }

    /// The primary key a variant key belongs to; a primary key is its own.
    var primary: CacheKey {
        var separators = 0
        guard let end = text.utf8.firstIndex(where: { byte in
            if byte == 0 { separators += 1 }
            return separators == 2
        }) else { return self }
        return CacheKey(stored: String(text[..<end]))
    }

    /// The key of one variant under this primary key: a generation of the variant index
    /// and the request fields the response varies on.
    func variant(generation: String, selector: String) -> CacheKey {
        CacheKey(stored: text + "\u{0}" + generation + "\u{0}" + Self.part(selector))
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
}
