public import Foundation

/// Reads the three date formats RFC 9110 §5.6.7 obliges a recipient to accept:
/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`)
/// and asctime (`Sun Nov  6 08:49:37 1994`). Anything else is nil.
public enum HTTPDateParser {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Exactly those grammars (one space between parts, the comma after the day name, the
    /// digit counts), so a malformed `Expires` counts as invalid, meaning already expired.
    /// Letter case alone is forgiven, as senders get it wrong without ambiguity.
    public static func parse(_ text: String) -> Date? {
        imfFixdate(text) ?? anyFormat(text)
    }

    /// Each of the three grammars, by its parts.
    static func anyFormat(_ text: String) -> Date? {
        var parts = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        if parts.count == 6, parts[2].isEmpty, parts[3].count == 1 { parts.remove(at: 2) }  // asctime's " 6"
        switch parts.count {
        case 6 where parts[5].uppercased() == "GMT" && parts[0].count == 4 && parts[0].hasSuffix(",") && parts[1].count == 2 && parts[3].count == 4:
            // IMF-fixdate
            day = Int(parts[1]); month = monthIndex(parts[2]); year = Int(parts[3]); time = clock(parts[4])
        case 4 where parts[3].uppercased() == "GMT" && parts[0].count > 4 && parts[0].hasSuffix(","):  // RFC 850
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, dmy[0].count == 2, dmy[2].count == 2, let yy = Int(dmy[2]) else { return nil }
            day = Int(dmy[0]); month = monthIndex(dmy[1]); time = clock(parts[2])
            // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
            let currentYear = 1970 + Int(Date().timeIntervalSince1970 / 31_556_952)
            var full = 2000 + yy
            if full > currentYear + 50 { full -= 100 }
            year = full
        case 5 where parts[0].count == 3 && parts[4].count == 4:  // asctime
            month = monthIndex(parts[1]); day = Int(parts[2]); time = clock(parts[3]); year = Int(parts[4])
        default:
            return nil
        }
        guard let day, let month, let year, let time else { return nil }
        return date(year: year, month: month, day: day, hour: time[0], minute: time[1], second: time[2])
    }

    /// The moment, when every part is in range.
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        // A leap second (:60) counts as :59, so it never carries into the next minute (or, on
        // 9999-12-31, into a five-digit year no HTTP date can state).
        guard year >= 1900, year < 10_000, second < 61,
              let time = UTCTime(year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59)) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(time.epochSeconds))
    }

    /// IMF-fixdate read by byte position (`Sun, 06 Nov 1994 08:49:37 GMT`), the form every
    /// current sender uses and every stored entry carries, without a String per part. Nil
    /// for anything not laid out exactly so (letters for names, digits for numbers), which
    /// the reading by parts then decides.
    static func imfFixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 29, b[3] == 0x2C, b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20, b[19] == 0x3A,
                  b[22] == 0x3A, b[25] == 0x20, isLetter(b[0]), isLetter(b[1]), isLetter(b[2]),
                  b[26] | 0x20 == 0x67, b[27] | 0x20 == 0x6D, b[28] | 0x20 == 0x74,  // gmt
                  let day = number(b, 5, 2), let year = number(b, 12, 4), let hour = number(b, 17, 2),
                  let minute = number(b, 20, 2), let second = number(b, 23, 2), let month = month(b[8], b[9], b[10]) else { return nil }
            return date(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }

    /// The decimal number in `count` digits from `start`; nil if any is not a digit.
    private static func number(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, _ count: Int) -> Int? {
        var value = 0
        for i in start..<(start + count) {
            guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
            value = value * 10 + Int(b[i] - 0x30)
        }
        return value
    }

    /// 1–12 for a month's three letters in any case.
    private static func month(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int? {
        let packed = UInt32(a | 0x20) << 16 | UInt32(b | 0x20) << 8 | UInt32(c | 0x20)
        return packedMonths.firstIndex(of: packed).map { $0 + 1 }
    }

    /// Each month's three lower-case letters in one integer, as `month` packs them.
    private static let packedMonths: [UInt32] = months.map { name in name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }


    private static func monthIndex(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    private static func clock(_ text: String) -> [Int]? {
        let parts = text.split(separator: ":")
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }) else { return nil }
        let values = parts.compactMap { Int($0) }
        return values.count == 3 ? values : nil
    }
}
