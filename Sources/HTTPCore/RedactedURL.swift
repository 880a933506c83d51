import Foundation

/// An upstream or origin URL as Larder prints it (the settings line, route lines, readiness,
/// the admin API): a password in its user part, and the value of every query parameter
/// named like a credential, become `<redacted>`. APIs that take their key in the URL
/// (Open-Meteo's commercial `apikey`) then never put it in a log.
public enum RedactedURL {
    /// Parameter names taken for credentials, compared without case, `-` and `_`; a name that
    /// ends in one of `suffixes` is one too (`client_secret`, `auth_token`, `x-api-key`).
    static let names: Set<String> = ["key", "apikey", "token", "accesstoken", "sig", "signature", "password", "secret"]
    static let suffixes = ["apikey", "token", "secret", "password", "signature"]
    static let mark = "<redacted>"

    public static func text(_ url: String) -> String {
        var rest = Substring(url)
        var fragment: Substring = ""
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[hash...]
            rest = rest[..<hash]
        }
        var query: Substring?
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        var text = withoutPassword(String(rest))
        if let query { text += "?" + redacted(query: query) }
        return text + fragment
    }

    /// A query with the value of each parameter named like a credential `<redacted>`.
    public static func redacted(query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
            guard let equals = item.firstIndex(of: "="), isCredential(item[..<equals]) else { return String(item) }
            return item[...equals] + mark
        }.joined(separator: "&")
    }

    /// Whether any parameter of a query is named like a credential: read on its bytes, with
    /// no string made, as every access line asks it of its request's query.
    public static func hasCredential(query: Substring) -> Bool {
        var query = query
        return query.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")),
                   isCredential(name: UnsafeBufferPointer(rebasing: bytes[start..<equals])) { return true }
                start = end + 1
            }
            return false
        }
    }

    static func isCredential(_ name: Substring) -> Bool {
        var name = name
        return name.withUTF8 { isCredential(name: $0) }
    }

    private static let nameBytes = names.map { Array($0.utf8) }
    private static let suffixBytes = suffixes.map { Array($0.utf8) }

    /// The name percent-decoded, `-` and `_` dropped and ASCII lower-cased, then compared
    /// with `names` and `suffixes`.
    static func isCredential(name: UnsafeBufferPointer<UInt8>) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(name.count, 1)) { plain in
            var count = 0
            var index = 0
            while index < name.count {
                var byte = name[index]
                index += 1
                if byte == UInt8(ascii: "%"), index + 1 < name.count,
                   let high = FieldSyntax.hexValue(name[index]), let low = FieldSyntax.hexValue(name[index + 1]) {
                    byte = UInt8(high << 4 | low)
                    index += 2
                }
                if byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") { continue }
                plain[count] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
                count += 1
            }
            let text = UnsafeBufferPointer(rebasing: plain[..<count])
            return nameBytes.contains { text.elementsEqual($0) }
                || suffixBytes.contains { text.count >= $0.count && text[(text.count - $0.count)...].elementsEqual($0) }
        }
    }

    /// `scheme://user:password@host…` with the password replaced.
    private static func withoutPassword(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = url[authorityStart...].firstIndex(of: "/") ?? url.endIndex
        guard let at = url[authorityStart..<authorityEnd].lastIndex(of: "@"),
              let colon = url[authorityStart..<at].firstIndex(of: ":") else { return url }
        return url[..<url.index(after: colon)] + mark + url[at...]
    }
}
