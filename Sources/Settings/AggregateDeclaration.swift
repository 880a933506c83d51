import HTTPCore

/// An aggregate as a configuration file declares it: a path of its own, answered with the
/// JSON of several parts, each a request to a route of this Larder (built-in or
/// pass-through) whose query takes values from the aggregate's own (`lat={lat}`).
///
/// ```yaml
/// aggregates:
///   /dashboard:
///     deadline: 800ms
///     parts:
///       weather: /weather?lat={lat}&lon={lon}
///       rates: {target: "/rates/latest?base={currency}", required: false, pointer: /rates, fields: [EUR, USD]}
/// ```
public struct AggregateDeclaration: Sendable, Equatable {
    public let path: String
    public var parts: [Part]
    /// Each part's members at the top level (a later part's member replaces an earlier
    /// one's of the same name) instead of each part under its name.
    public var merge = false
    /// How long the aggregate waits for its parts; nil: the longest upstream timeout of its
    /// parts' routes, plus one second, so a part's own timeout speaks first.
    public var deadline: Duration?

    /// One part: its name in the answer, the request made of a route, whether the aggregate
    /// fails without it, and which of its JSON is kept.
    public struct Part: Sendable, Equatable {
        public let name: String
        public let target: PartTarget
        public var required = true
        /// An RFC 6901 JSON pointer to the value kept (`/rates`); nil keeps the whole answer.
        public var pointer: String?
        /// The members kept of the (pointed-to) object; nil keeps them all.
        public var fields: [String]?

        public init(name: String, target: PartTarget) {
            self.name = name
            self.target = target
        }
    }

    public init(path: String, parts: [Part]) {
        self.path = path
        self.parts = parts
    }

    /// `/overview`, the aggregate every Larder serving both built-in routes declares unless a
    /// configuration file declares its own at that path: the weather at `lat`/`lon` and the
    /// balance, each required.
    public static let overview = AggregateDeclaration(path: "/overview", parts: [
        Part(name: "weather", target: PartTarget("/weather?lat={lat}&lon={lon}")!),
        Part(name: "balance", target: PartTarget("/balance")!),
    ])

    /// A part's name: a lower-case letter, then lower-case letters, digits, `_` and `-` (up
    /// to 64). It is a JSON member, a structured-field key and a metrics label as it stands.
    public static func isPartName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (0x61...0x7A).contains(first), name.utf8.count <= 64 else { return false }
        return name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// RFC 6901: empty (the whole document), or `/`-separated tokens where `~` only starts `~0` or `~1`.
    public static func isJSONPointer(_ text: String) -> Bool {
        guard text.isEmpty || text.hasPrefix("/") else { return false }
        let bytes = Array(text.utf8)
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "~") {
            guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "0") || bytes[index + 1] == UInt8(ascii: "1") else { return false }
        }
        return true
    }
}

/// A part's request target: a path of this Larder and a query whose `{name}` placeholders
/// take the raw (still percent-encoded) value of the aggregate's query parameter `name`.
/// Placeholders stand in the query only, so a value can never change which route answers.
public struct PartTarget: Sendable, Equatable, CustomStringConvertible {
    public let path: String
    /// The query as literal text and placeholders, in order; empty without a query.
    public let query: [Piece]

    public enum Piece: Sendable, Equatable {
        case text(String)
        case parameter(String)
    }

    /// Nil when the target is not a path, holds a placeholder in its path, or has a `{`
    /// without its `}` or an empty or odd name between them.
    public init?(_ text: String) {
        guard text.hasPrefix("/"), !text.contains("#"), !text.contains(" ") else { return nil }
        let parts = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        guard !path.contains("{"), !path.contains("}") else { return nil }
        var pieces: [Piece] = []
        var rest = parts.count > 1 ? parts[1] : ""
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{", let close = rest[open...].firstIndex(of: "}") else { return nil }
            let name = rest[rest.index(after: open)..<close]
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "_.-".contains($0) }), name.allSatisfy(\.isASCII) else {
                return nil
            }
            if open > rest.startIndex { pieces.append(.text(String(rest[..<open]))) }
            pieces.append(.parameter(String(name)))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { pieces.append(.text(String(rest))) }
        self.path = path
        query = pieces
    }

    /// The aggregate's query parameters this target uses, each once, in order.
    public var parameters: [String] {
        var names: [String] = []
        for case .parameter(let name) in query where !names.contains(name) { names.append(name) }
        return names
    }

    public var description: String {
        query.isEmpty ? path : path + "?" + query.map { piece in
            switch piece {
            case .text(let text): text
            case .parameter(let name): "{\(name)}"
            }
        }.joined()
    }
}
