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
        if let query {
            let items = query.split(separator: "&", omittingEmptySubsequences: false).map { item -> String in
                guard let equals = item.firstIndex(of: "="), isCredential(item[..<equals]) else { return String(item) }
                return item[...equals] + mark
            }
            text += "?" + items.joined(separator: "&")
        }
        return text + fragment
    }

    static func isCredential(_ name: Substring) -> Bool {
        let plain = (name.removingPercentEncoding ?? String(name)).lowercased().filter { $0 != "-" && $0 != "_" }
        return names.contains(plain) || suffixes.contains { plain.hasSuffix($0) }
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
