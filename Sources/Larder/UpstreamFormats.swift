import Caching
import Crypto
import Foundation
import HTTPCore
import HTTPServer

/// Why an upstream 200 cannot be used: it is an upstream error (502 or a stale answer), never stored.
struct UndecodableAnswer: Error, CustomStringConvertible {
    let description: String
}

/// Open-Meteo's current-weather format, decoded only here.
enum OpenMeteoFormat {
    /// The version of the JSON `json` makes: one more with every change to its bytes, so no
    /// JSON kept on disk by an older build is served.
    static let version = 1

    private struct Answer: Decodable {
        struct Units: Decodable { let temperature_2m: String? }
        struct Current: Decodable {
            let time: String
            let temperature_2m: Double
            let weather_code: Int
        }
        let current_units: Units?
        let current: Current
    }

    /// The upstream request for a place.
    static func url(base: String, resource: String) -> String {
        let separator = base.utf8.contains(UInt8(ascii: "?")) ? "&" : "?"
        let comma = resource.firstIndex(of: ",") ?? resource.endIndex
        let latitude = resource[..<comma], longitude = resource[comma...].dropFirst()
        return "\(base)\(separator)latitude=\(latitude)&longitude=\(longitude)&current=temperature_2m,weather_code"
    }

    /// Larder's weather JSON for a fetched entry; throws `UndecodableAnswer` when it is not Open-Meteo's format.
    /// `resource` is the place's rounded pair (`52.52,13.41`), as the cache keys it.
    static func json(resource: String, entry: CacheEntry) throws -> String {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(entry.body)) else {
            throw UndecodableAnswer(description: "the weather upstream's body is not Open-Meteo current weather")
        }
        guard let condition = WeatherCondition.description(of: answer.current.weather_code) else {
            throw UndecodableAnswer(description: "unknown WMO weather code \(answer.current.weather_code)")
        }
        guard let lastUpdate = isoTime(openMeteo: answer.current.time) else {
            throw UndecodableAnswer(description: "unreadable time '\(answer.current.time)'")
        }
        guard answer.current.temperature_2m.isFinite else { throw UndecodableAnswer(description: "temperature is not finite") }
        let pair = resource.split(separator: ",", omittingEmptySubsequences: false)
        guard pair.count == 2 else { throw UndecodableAnswer(description: "no place in '\(resource)'") }
        let unit = answer.current_units?.temperature_2m ?? "°C"
        return "{\"latitude\":\(pair[0]),\"longitude\":\(pair[1]),\"temperature\":\(answer.current.temperature_2m),"
            + "\"temperatureUnit\":\(JSONString.quote(unit)),\"weatherCode\":\(answer.current.weather_code),"
            + "\"condition\":\(JSONString.quote(condition)),\"lastUpdate\":\"\(lastUpdate)\"}"
    }

    /// `2026-11-21T20:45` (GMT) → `2026-11-21T20:45:00Z`; nil unless it is a real moment
    /// (month 1–12, a day the month has, hour 0–23, minute and second 0–59).
    static func isoTime(openMeteo time: String) -> String? {
        // `yyyy-MM-ddTHH:mm` or with `:ss`, checked by position (a Regex costs more than the
        // whole rest of the decode on this path).
        let bytes = Array(time.utf8)
        let layout = Array("dddd-dd-ddTdd:dd:dd".utf8)
        guard bytes.count == 16 || bytes.count == 19 else { return nil }
        for (byte, expected) in zip(bytes, layout) {
            let ok = expected == UInt8(ascii: "d") ? (byte >= 0x30 && byte <= 0x39) : byte == expected
            guard ok else { return nil }
        }
        func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        let year = number(0..<4), month = number(5..<7), day = number(8..<10)
        guard (1...12).contains(month), day >= 1, day <= CalendarDays.inMonth(month, year: year),
              number(11..<13) < 24, number(14..<16) < 60, bytes.count == 16 || number(17..<19) < 60 else { return nil }
        return bytes.count == 16 ? time + ":00Z" : time + "Z"
    }
}

/// The balance upstream's format, decoded only here: status 200 with
/// `{"balance":1234.56,"date":"2021-06-02 11:01:48 +0000"}`.
enum BalanceFormat {
    /// The version of the JSON `json` makes (see `OpenMeteoFormat.version`).
    static let version = 1

    private struct Answer: Decodable {
        let balance: Double
        let date: String
    }

    /// Larder's balance JSON for a fetched entry; throws `UndecodableAnswer` when it is not the balance format.
    static func json(entry: CacheEntry) throws -> String {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(entry.body)), answer.balance.isFinite else {
            throw UndecodableAnswer(description: "the balance upstream's body is not {\"balance\":…,\"date\":…}")
        }
        guard let date = parseDate(answer.date) else {
            throw UndecodableAnswer(description: "unreadable balance date '\(answer.date)'")
        }
        return "{\"balance\":\(answer.balance),\"lastUpdate\":\"\(isoFormat(date))\"}"
    }

    /// `yyyy-MM-dd HH:mm:ss Z`.
    static func parseDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return formatter.date(from: text)
    }

    static func isoFormat(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss'Z'"
        return formatter.string(from: date)
    }
}
