public import HTTPCore

/// What an origin says that a pass-through route was told to ignore (nginx's
/// `proxy_ignore_headers`, Varnish's `beresp` edits), applied to its answer as it arrives:
/// `no-cache` is taken out of `Cache-Control` (the answer is then reused without
/// revalidation, as its other directives allow); `private` stays in it, for the clients and
/// caches after Larder, and only Larder's own reading ignores it (`CacheEntry`), so the answer
/// is stored; and `Set-Cookie` is removed (the answer may then be stored; a cookie is never
/// stored or sent on, to the client whose request fetched it either). An answer changed so
/// keeps a note of what was ignored (`Larder-Override`, stored with it, never sent, never
/// taken from an origin), which `Cache-Status` then says (`override="private set-cookie"`).
public struct CacheOverrides: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let noCache = CacheOverrides(rawValue: 1)
    public static let `private` = CacheOverrides(rawValue: 2)
    public static let setCookie = CacheOverrides(rawValue: 4)

    /// The names a configuration file uses, in the order `Cache-Status` lists them.
    public static let names: [(String, CacheOverrides)] = [("no-cache", .noCache), ("private", .private), ("set-cookie", .setCookie)]

    /// The field that keeps, with a stored answer, what was ignored in it.
    public static let noteField = "larder-override"

    /// `headers` with what these overrides ignore taken out, and the note when anything was.
    public func applied(to headers: HTTPHeaders) -> HTTPHeaders {
        guard !isEmpty else { return headers }
        var ignored: CacheOverrides = []
        var kept = HTTPHeaders()
        for field in headers {
            if contains(.setCookie), HTTPHeaders.namesEqual(field.name, "set-cookie") {
                ignored.insert(.setCookie)
                continue
            }
            guard HTTPHeaders.namesEqual(field.name, "cache-control") else {
                kept.append(field)
                continue
            }
            var members: [Substring] = []
            var removed = false
            for member in field.value.listMembers() {
                // `private="Field"` and `no-cache="Field"` are the same directives, qualified.
                let name = member.split(separator: "=", maxSplits: 1).first?.trimmingOWS().lowercased() ?? ""
                if name == "private", contains(.private) { ignored.insert(.private) }
                if name == "no-cache", contains(.noCache) {
                    ignored.insert(.noCache)
                    removed = true
                    continue
                }
                members.append(member)
            }
            if !removed {
                kept.append(field)
            } else if !members.isEmpty {
                kept.add(field.name, members.joined(separator: ", "))
            }
        }
        guard !ignored.isEmpty else { return headers }
        kept.add(Self.noteField, ignored.description)
        return kept
    }

    /// Whether a note (`noteField`'s value) says `private` is ignored.
    public static func notesPrivate(_ note: String) -> Bool {
        note.split(separator: " ").contains("private")
    }

    /// The names of these overrides, space-separated (`private set-cookie`).
    public var description: String {
        Self.names.filter { contains($0.1) }.map(\.0).joined(separator: " ")
    }
}
