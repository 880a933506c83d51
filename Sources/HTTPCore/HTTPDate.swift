#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// IMF-fixdate (RFC 9110 §5.6.7), the only date format an HTTP/1.1 sender may generate.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for a moment (whole seconds, rounded down).
    public static func format(_ date: Date) -> String {
        format(epochSeconds: Int(date.timeIntervalSince1970.rounded(.down)))
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the epoch.
    public static func format(epochSeconds: Int) -> String {
        var t = time_t(epochSeconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(tm.tm_year + 1900) "
            + "\(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }
}
