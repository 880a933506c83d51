/// Entity tags compared as RFC 9110 §8.8.3.2 says: weakly (`W/` ignored) for `If-None-Match`
/// and a 304's weak validator, strongly (both strong, the same) for the rest.
public enum EntityTag {
    /// Whether two tags are the same under weak comparison.
    public static func weaklyEqual(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        opaque(a) == opaque(b)
    }

    /// RFC 9110 §13.1.2: whether any tag listed in the `If-None-Match` field lines matches
    /// `etag` weakly; `*` matches any current representation.
    public static func ifNoneMatch(_ fields: [String], matches etag: String) -> Bool {
        for field in fields {
            for tag in field.listMembers() where tag == "*" || weaklyEqual(tag, etag) { return true }
        }
        return false
    }

    private static func opaque(_ tag: some StringProtocol) -> Substring {
        let text = Substring(tag)
        return text.hasPrefix("W/") ? text.dropFirst(2) : text
    }
}
