/// Text from a configuration file as a problem quotes it. A configuration path may be a
/// symbolic link to any file (a secret one too), and its problems go to the log and to the
/// admin API's answer to a reload: a problem quotes a short visible-ASCII excerpt of what it
/// names, never long or binary content.
enum QuotedText {
    /// The most characters a problem quotes of one value or key.
    static let limit = 64

    /// `text` with each character outside visible ASCII as `?`, cut after `limit` characters
    /// (and then followed by its length).
    static func of(_ text: some StringProtocol) -> String {
        var shown = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if shown.count == limit { return String(shown) + "… (\(text.utf8.count) bytes)" }
            shown.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
        }
        return String(shown)
    }

    /// A key Larder does not know, as a problem names it: quoted when it could be a setting's
    /// name mistyped (letters, digits, `-`, `_`, `.`), else described by its length only, as
    /// a line of another kind of file would be (`root:$6$…:` of a password file).
    static func unknownKey(_ key: String) -> String {
        let isName = (1...limit).contains(key.utf8.count) && key.utf8.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        return isName ? key : "a key of \(key.utf8.count) bytes that is no setting's name (not quoted)"
    }
}
