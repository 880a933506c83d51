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
}
