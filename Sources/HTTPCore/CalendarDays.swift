/// Proleptic Gregorian calendar arithmetic for the dates Larder reads from outside (HTTP
/// dates, upstream timestamps): plain integers, no `Calendar`, total for any input.
public enum CalendarDays {
    /// Days in `month` (1–12) of `year`; 0 for a month that does not exist.
    public static func inMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        case 1, 3, 5, 7, 8, 10, 12: 31
        default: 0
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil),
    /// plain arithmetic instead of a Calendar: this runs for every entry read from disk.
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
