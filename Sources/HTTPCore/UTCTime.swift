/// A moment in UTC as calendar fields, whole seconds: the one date type behind HTTP dates
/// (RFC 9110 §5.6.7), the RFC 3339 times in answers and log lines, and the upstreams' local
/// times. Proleptic Gregorian arithmetic on integers (Howard Hinnant's days-from-civil and
/// back), no `Calendar` or `DateFormatter`: total for any input, and cheap enough for every
/// disk hit, which renders a `Date` field.
public struct UTCTime: Equatable, Sendable {
    public let year: Int
    /// 1–12.
    public let month: Int
    /// 1 to the month's last day.
    public let day: Int
    public let hour: Int
    public let minute: Int
    /// 0–59: a leap second is never a field here.
    public let second: Int

    /// Nil unless it is a real moment: month 1–12, a day the month has, hour 0–23, minute and second 0–59.
    public init?(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        guard (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year),
              (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(second) else { return nil }
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// The moment `epochSeconds` after 1970-01-01T00:00:00Z (before it when negative).
    public init(epochSeconds: Int) {
        let days = Self.days(epochSeconds)
        let secondOfDay = epochSeconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
    }

    /// Seconds since 1970-01-01T00:00:00Z.
    public var epochSeconds: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return (era * 146_097 + dayOfEra - 719_468) * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// 0 for Sunday to 6 for Saturday.
    public var weekday: Int { Self.weekday(epochSeconds: epochSeconds) }

    /// The weekday of a moment (0 for Sunday), without making its fields: `HTTPDate`
    /// writes one for every rendered answer.
    public static func weekday(epochSeconds: Int) -> Int {
        ((days(epochSeconds) % 7) + 11) % 7  // 1970-01-01 was a Thursday (4)
    }

    /// Whole days since 1970-01-01, rounded down for moments before it.
    private static func days(_ epochSeconds: Int) -> Int {
        epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
    }

    /// Days in `month` (1–12) of `year`; 0 for a month that does not exist.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        case 1, 3, 5, 7, 8, 10, 12: 31
        default: 0
        }
    }

    /// RFC 3339 in UTC, `2026-11-21T20:45:00Z`; the year has at least four digits.
    public var iso8601: String { text(separator: "T", zone: "Z") }

    /// `2026-11-21` `separator` `20:45:00` `zone`: RFC 3339 and the balance upstream's
    /// `2021-06-02 11:01:48 +0000` differ only there.
    public func text(separator: String, zone: String) -> String {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let digits = String(abs(year))
        let yearText = (year < 0 ? "-" : "") + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return "\(yearText)-\(two(month))-\(two(day))\(separator)\(two(hour)):\(two(minute)):\(two(second))\(zone)"
    }
}
