/// The path of a request target in the one form Larder matches, keys and forwards
/// (RFC 3986 §6.2.2): percent-encoded unreserved characters decoded (`%41` → `A`,
/// `%2E` → `.`), then dot segments removed (§5.2.4).
///
/// Matching a route on the raw path and letting the next hop remove `..` later would let
/// `/public/../admin` escape its prefix; normalising once, first, closes that. A path that
/// would climb above `/` is refused rather than clamped. `%2F` stays encoded: it is data
/// inside a segment, not a separator.
public enum TargetPath {
    /// The target (path and query) with its path normalised; the query is left as sent.
    /// Nil when the path climbs above the root, or holds a `%` that does not start a
    /// `%HH` escape: decoding around such a `%` could make a new escape (`%4%41` → `%4A`)
    /// that the next hop would decode again into a path Larder never matched.
    public static func normalized(_ target: String) -> String? {
        guard needsWork(target) else { return target }
        let bytes = target.utf8
        let queryStart = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        guard let decoded = decodeUnreserved(bytes[bytes.startIndex..<queryStart]), let normalized = removeDotSegments(decoded) else {
            return nil
        }
        return String(decoding: normalized, as: UTF8.self) + target[queryStart...]
    }

    /// Whether the target's path would change (or be refused) when normalised. Most paths
    /// have neither `%` nor a dot segment, and every request asks: one pass over the bytes
    /// up to the query.
    public static func needsWork(_ target: String) -> Bool {
        var target = target
        return target.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/") else { return false }
            var previous: UInt8 = 0
            for byte in bytes {
                if byte == UInt8(ascii: "?") { return false }
                if byte == UInt8(ascii: "%") || (byte == UInt8(ascii: ".") && previous == UInt8(ascii: "/")) { return true }
                previous = byte
            }
            return false
        }
    }

    /// ALPHA / DIGIT / "-" / "." / "_" / "~"
    private static func isUnreserved(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || FieldSyntax.isDigit(b)
            || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
    }

    /// The path with `%HH` of unreserved characters decoded; nil for a malformed escape.
    private static func decodeUnreserved(_ path: Substring.UTF8View) -> [UInt8]? {
        let input = Array(path)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var i = 0
        while i < input.count {
            guard input[i] == UInt8(ascii: "%") else {
                output.append(input[i])
                i += 1
                continue
            }
            guard i + 2 < input.count, let high = FieldSyntax.hexValue(input[i + 1]), let low = FieldSyntax.hexValue(input[i + 2]) else {
                return nil
            }
            let byte = UInt8(high << 4 | low)
            if isUnreserved(byte) {
                output.append(byte)
            } else {
                output += input[i..<(i + 3)]
            }
            i += 3
        }
        return output
    }

    /// RFC 3986 §5.2.4 on an absolute path, segment by segment; nil when `..` would go
    /// above the root.
    private static func removeDotSegments(_ path: [UInt8]) -> [UInt8]? {
        // Segments after the leading "/"; a trailing "." or ".." leaves a trailing "/".
        let segments = path.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        var kept: [ArraySlice<UInt8>] = []
        var trailingSlash = false
        for (index, segment) in segments.enumerated() {
            let last = index == segments.count - 1
            if segment.elementsEqual([UInt8(ascii: ".")]) {
                trailingSlash = last
            } else if segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                guard !kept.isEmpty else { return nil }
                kept.removeLast()
                trailingSlash = last
            } else {
                kept.append(segment)
                trailingSlash = false
            }
        }
        var output: [UInt8] = []
        for segment in kept {
            output.append(UInt8(ascii: "/"))
            output += segment
        }
        if trailingSlash || output.isEmpty { output.append(UInt8(ascii: "/")) }
        return output
    }
}
