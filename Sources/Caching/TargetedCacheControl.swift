import RawStructuredFieldValues

/// `CDN-Cache-Control` (RFC 9213): cache directives aimed at gateway caches like Larder.
///
/// The field is a Structured Field Dictionary (RFC 8941, parsed by swift-http-structured-headers).
/// A value that does not parse as one, or whose known directives have the wrong type
/// (`max-age="60"`), is invalid and the whole field is ignored, so `Cache-Control` and
/// `Expires` apply again (RFC 9213 §2.1). A directive Larder does not know is ignored
/// whatever its value, an inner list included.
public enum TargetedCacheControl {
    public static let fieldName = "cdn-cache-control"

    /// The directives with a number of seconds as their value.
    private static let durations: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]

    /// The directives, or nil when the field lines are absent, empty or invalid.
    public static func parse(_ fieldValues: [String]) -> CacheControl? {
        var parser = StructuredFieldValueParser(Array(fieldValues.joined(separator: ",").utf8))
        guard let members = try? parser.parseDictionaryFieldValue(), members.count > 0 else { return nil }
        var text: [String] = []
        for (key, member) in members {
            let value: RFC9651BareItem? = if case .item(let item) = member { item.rfc9651BareItem } else { nil }
            if durations.contains(key) {
                guard case .integer(let seconds)? = value, seconds >= 0 else { return nil }
                text.append("\(key)=\(seconds)")
            } else if case .bool(true)? = value {
                text.append(key)  // a bare directive: `private`, `no-store`
            }
        }
        return CacheControl(text.joined(separator: ", "))
    }
}
