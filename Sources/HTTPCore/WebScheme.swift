/// `http` and `https`, the only schemes Larder speaks, told apart at the start of a URL by
/// bytes and in any case: the request parser, the settings and the upstream client all ask,
/// and none needs a lowercased copy of the URL to do it.
public enum WebScheme {
    /// The length of `http:` or `https:` (5 or 6) when `text` starts with either, in any case;
    /// nil otherwise.
    /// Read in the string's own bytes: through its UTF-8 view, as two schemes zipped with it,
    /// this cost 1,130 instructions per pass-through miss (gate path pass-through-miss).
    public static func prefixLength(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { bytes in
            // Only letters fold (a lower-case letter's 0x20 bit is set): 0x1A | 0x20 is a colon too.
            func isLetter(_ at: Int, _ lower: Unicode.Scalar) -> Bool { bytes[at] | 0x20 == UInt8(ascii: lower) }
            guard bytes.count >= 5, isLetter(0, "h"), isLetter(1, "t"), isLetter(2, "t"), isLetter(3, "p") else { return nil }
            if bytes[4] == UInt8(ascii: ":") { return 5 }
            return bytes.count >= 6 && isLetter(4, "s") && bytes[5] == UInt8(ascii: ":") ? 6 : nil
        }
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
