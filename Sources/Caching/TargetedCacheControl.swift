/// `CDN-Cache-Control` (RFC 9213): cache directives aimed at gateway caches like Larder.
///
/// The field is a Structured Field Dictionary (RFC 8941). A value that does not parse as
/// one, or whose known directives have the wrong type (`max-age="60"`), is invalid and the
/// whole field is ignored, so `Cache-Control` and `Expires` apply again (RFC 9213 §2.1).
public enum TargetedCacheControl {
    public static let fieldName = "cdn-cache-control"

    /// The directives, or nil when the field lines are absent, empty or invalid.
    public static func parse(_ fieldValues: [String]) -> CacheControl? {
        let joined = fieldValues.joined(separator: ",")
        guard let members = dictionary(joined), !members.isEmpty else { return nil }
        var text: [String] = []
        for (key, value) in members {
            switch (key, value) {
            case ("max-age", .integer(let n)), ("s-maxage", .integer(let n)),
                 ("stale-while-revalidate", .integer(let n)), ("stale-if-error", .integer(let n)):
                guard n >= 0 else { return nil }
                text.append("\(key)=\(n)")
            case ("max-age", _), ("s-maxage", _), ("stale-while-revalidate", _), ("stale-if-error", _):
                return nil
            case (_, .bare):
                text.append(key)
            default:
                continue  // a directive with a value we have no use for: valid, ignored
            }
        }
        return CacheControl(text.joined(separator: ", "))
    }

    enum Member: Equatable {
        case bare
        case integer(Int)
        case other
    }

    /// RFC 8941 §4.2.2 for the parts a directive list uses; nil on any syntax error.
    static func dictionary(_ input: String) -> [(String, Member)]? {
        var bytes = Array(input.utf8)[...]
        var members: [(String, Member)] = []
        func skipSpaces() { while let b = bytes.first, b == 0x20 || b == 0x09 { bytes.removeFirst() } }
        skipSpaces()
        while !bytes.isEmpty {
            guard let key = self.key(&bytes) else { return nil }
            var member = Member.bare
            if bytes.first == UInt8(ascii: "=") {
                bytes.removeFirst()
                guard let value = item(&bytes) else { return nil }
                member = value
            }
            guard parameters(&bytes) else { return nil }
            if let existing = members.firstIndex(where: { $0.0 == key }) { members[existing].1 = member } else { members.append((key, member)) }
            skipSpaces()
            guard let next = bytes.first else { break }
            guard next == UInt8(ascii: ",") else { return nil }
            bytes.removeFirst()
            skipSpaces()
            if bytes.isEmpty { return nil }  // a trailing comma is an error
        }
        return members
    }

    private static func key(_ bytes: inout ArraySlice<UInt8>) -> String? {
        guard let first = bytes.first, (first >= 0x61 && first <= 0x7A) || first == UInt8(ascii: "*") else { return nil }
        var key: [UInt8] = []
        while let b = bytes.first, (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || "_-.*".utf8.contains(b) {
            key.append(b)
            bytes.removeFirst()
        }
        return String(decoding: key, as: UTF8.self)
    }

    private static func item(_ bytes: inout ArraySlice<UInt8>) -> Member? {
        guard let first = bytes.first else { return nil }
        if first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39) {
            var text: [UInt8] = []
            while let b = bytes.first, b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || (b >= 0x30 && b <= 0x39) {
                text.append(b)
                bytes.removeFirst()
            }
            let digits = text.filter { $0 >= 0x30 && $0 <= 0x39 }.count
            if text.contains(UInt8(ascii: ".")) { return digits > 0 && digits <= 15 && text.last != UInt8(ascii: ".") ? .other : nil }
            guard digits > 0, digits <= 15, let n = Int(String(decoding: text, as: UTF8.self)) else { return nil }
            return .integer(n)
        }
        if first == UInt8(ascii: "\"") {
            bytes.removeFirst()
            while let b = bytes.popFirst() {
                if b == UInt8(ascii: "\\") { guard bytes.popFirst() != nil else { return nil } } else if b == UInt8(ascii: "\"") { return .other }
                else if b < 0x20 || b > 0x7E { return nil }
            }
            return nil
        }
        if first == UInt8(ascii: "?") {
            bytes.removeFirst()
            guard let b = bytes.popFirst(), b == UInt8(ascii: "0") || b == UInt8(ascii: "1") else { return nil }
            return b == UInt8(ascii: "1") ? .bare : .other
        }
        if first == UInt8(ascii: ":") {
            bytes.removeFirst()
            while let b = bytes.popFirst() {
                if b == UInt8(ascii: ":") { return .other }
                guard (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || "+/=".utf8.contains(b) else { return nil }
            }
            return nil
        }
        if (first >= 0x41 && first <= 0x5A) || (first >= 0x61 && first <= 0x7A) || first == UInt8(ascii: "*") {
            while let b = bytes.first, b > 0x20, b < 0x7F, !"\"(),;<=>?@[\\]{}".utf8.contains(b) { bytes.removeFirst() }
            return .other
        }
        return nil
    }

    private static func parameters(_ bytes: inout ArraySlice<UInt8>) -> Bool {
        while bytes.first == UInt8(ascii: ";") {
            bytes.removeFirst()
            while bytes.first == 0x20 { bytes.removeFirst() }
            guard key(&bytes) != nil else { return false }
            if bytes.first == UInt8(ascii: "=") {
                bytes.removeFirst()
                guard item(&bytes) != nil else { return false }
            }
        }
        return true
    }
}
