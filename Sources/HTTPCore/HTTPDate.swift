#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// IMF-fixdate (RFC 9110 §5.6.7), the only date format an HTTP/1.1 sender may generate.
public enum HTTPDate {
    private static let dayNames = Array("SunMonTueWedThuFriSat".utf8)
    private static let monthNames = Array("JanFebMarAprMayJunJulAugSepOctNovDec".utf8)

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for a moment (whole seconds, rounded down).
    public static func format(_ date: Date) -> String {
        format(epochSeconds: Int(date.timeIntervalSince1970.rounded(.down)))
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for seconds since the epoch. Written as bytes: every
    /// rendered answer and every disk hit formats one, and interpolation cost five times more.
    public static func format(epochSeconds: Int) -> String {
        var t = time_t(epochSeconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        func name(_ table: [UInt8], _ index: Int32) { out += table[Int(index) * 3..<Int(index) * 3 + 3] }
        func two(_ value: Int32, _ separator: UInt8) { out += [0x30 + UInt8(value / 10), 0x30 + UInt8(value % 10), separator] }
        name(dayNames, tm.tm_wday)
        out += [0x2C, 0x20]  // ", "
        two(tm.tm_mday, 0x20)
        name(monthNames, tm.tm_mon)
        out.append(0x20)
        DecimalText.append(Int(tm.tm_year) + 1900, to: &out)
        out.append(0x20)
        two(tm.tm_hour, 0x3A)
        two(tm.tm_min, 0x3A)
        two(tm.tm_sec, 0x20)
        out += [0x47, 0x4D, 0x54]  // "GMT"
        return String(decoding: out, as: UTF8.self)
    }
}
