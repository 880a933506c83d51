/// `http` and `https`, the only schemes Larder speaks, told apart at the start of a URL by
/// bytes and in any case: the request parser, the settings and the upstream client all ask,
/// and none needs a lowercased copy of the URL to do it.
public enum WebScheme {
    /// The length of `http:` or `https:` (5 or 6) when `text` starts with either, in any case;
    /// nil otherwise.
    public static func prefixLength(_ text: String) -> Int? {
        let bytes = text.utf8
        // Only letters fold: 0x1A | 0x20 is a colon too.
        for scheme in ["http:".utf8, "https:".utf8]
        where bytes.count >= scheme.count && zip(bytes, scheme).allSatisfy({ $0 == $1 || ($1 >= 0x61 && $0 | 0x20 == $1) }) {
            return scheme.count
        }
        return nil
    }

    /// The length of `http://` or `https://` (7 or 8) when `text` starts with either, in any case.
    public static func authorityStart(_ text: String) -> Int? {
        guard let scheme = prefixLength(text), text.utf8.dropFirst(scheme).starts(with: "//".utf8) else { return nil }
        return scheme + 2
    }

    /// An absolute-form request target split for RFC 9112 §3.2.2: `http://host:port/path?q`
    /// → (authority, `/path?q`); nil when it is not one with an authority.
    public static func originForm(ofAbsolute target: String) -> (authority: String, target: String)? {
        guard let scheme = authorityStart(target) else { return nil }
        let rest = target.dropFirst(scheme)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<end])
        guard !authority.isEmpty else { return nil }
        var path = String(rest[end...])
        if !path.hasPrefix("/") { path = "/" + path }
        return (authority, path)
    }
}
