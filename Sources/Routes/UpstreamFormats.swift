import Caching
import Crypto
import Foundation
public import HTTPCore
import Bodies
import HTTPServer

/// Why an upstream 200 cannot be used: it is an upstream error (502 or a stale answer), never stored.
struct UndecodableAnswer: Error, CustomStringConvertible {
    let description: String
}

/// Open-Meteo's current-weather format, decoded only here, by Foundation's `JSONDecoder`: it
/// runs only on a miss, which waits tens of milliseconds on its upstream.
enum OpenMeteoFormat {
    /// The version of the JSON `json` makes: one more with every change to its bytes, so no
    /// JSON kept on disk by an older build is served (2: `utc_offset_seconds` applied).
    static let version = 2

    /// The upstream request for a place.
    static func url(base: String, resource: String) -> String {
        // Found and appended by bytes, into one reserved String: by Characters it cost a
        // fortieth of the whole miss.
        let place = resource.utf8
        let comma = place.firstIndex(of: UInt8(ascii: ",")) ?? place.endIndex
        let longitude = comma == place.endIndex ? comma : place.index(after: comma)
        var url = base
        url.reserveCapacity(base.utf8.count + place.count + 64)
        url += base.utf8.contains(UInt8(ascii: "?")) ? "&latitude=" : "?latitude="
        url += resource[..<comma]
        url += "&longitude="
        url += resource[longitude...]
        url += "&current=temperature_2m,weather_code"
        return url
    }

    /// Larder's weather JSON for a fetched entry; throws `UndecodableAnswer` when it is not Open-Meteo's format.
    /// `resource` is the place's rounded pair (`52.52,13.41`), as the cache keys it.
    static func json(resource: String, entry: CacheEntry) throws -> [UInt8] {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(entry.body.inMemory ?? [])), answer.current.temperature.isFinite else {
            throw UndecodableAnswer(description: "the weather upstream's body is not Open-Meteo current weather")
        }
        guard let condition = WeatherCondition.description(of: answer.current.weatherCode) else {
            throw UndecodableAnswer(description: "unknown WMO weather code \(answer.current.weatherCode)")
        }
        guard let lastUpdate = isoTime(openMeteo: answer.current.time, utcOffset: answer.utcOffset ?? 0) else {
            throw UndecodableAnswer(description: "unreadable time '\(answer.current.time)' at offset \(answer.utcOffset ?? 0) s")
        }
        let place = resource.utf8
        guard let comma = place.firstIndex(of: UInt8(ascii: ",")), !place[place.index(after: comma)...].contains(UInt8(ascii: ",")) else {
            throw UndecodableAnswer(description: "no place in '\(resource)'")
        }
        // Bytes appended into one reserved buffer, the body as it is served: String appends
        // cost twice as much, and the String was copied into bytes after.
        var json: [UInt8] = []
        json.reserveCapacity(224)
        json += #"{"latitude":"#.utf8
        json += place[..<comma]
        json += #","longitude":"#.utf8
        json += place[place.index(after: comma)...]
        json += #","temperature":"#.utf8
        json += answer.current.temperature.description.utf8
        json += #","temperatureUnit":"#.utf8
        JSONString.append(answer.units?.temperature ?? "°C", to: &json)
        json += #","weatherCode":"#.utf8
        DecimalText.append(answer.current.weatherCode, to: &json)
        json += #","condition":"#.utf8
        JSONString.append(condition, to: &json)
        json += #","lastUpdate":""#.utf8
        json += lastUpdate.utf8
        json += #""}"#.utf8
        return json
    }

    /// What Larder reads of an answer: `current.time`, `current.temperature_2m` (a finite
    /// number), `current.weather_code` (an integer) and, when given and not null, the string
    /// `current_units.temperature_2m` (°C when absent) and the integer `utc_offset_seconds`
    /// (the offset of `current.time` from UTC; 0 when absent). Other members are ignored; a
    /// required one missing, or any of these of another type, makes the answer unusable.
    private struct Answer: Decodable {
        struct Current: Decodable {
            let time: String
            let temperature: Double
            let weatherCode: Int
            enum CodingKeys: String, CodingKey {
                case time, temperature = "temperature_2m", weatherCode = "weather_code"
            }
        }
        struct Units: Decodable {
            let temperature: String?
            enum CodingKeys: String, CodingKey { case temperature = "temperature_2m" }
        }
        let current: Current
        let units: Units?
        let utcOffset: Int?
        enum CodingKeys: String, CodingKey {
            case current, units = "current_units", utcOffset = "utc_offset_seconds"
        }
    }

    /// The most a local time is off UTC (ISO 8601 and RFC 3339 stop at ±18:00).
    static let largestUTCOffset = 18 * 3600

    /// `2026-11-21T20:45` at `utcOffset` seconds east of UTC (Open-Meteo's
    /// `utc_offset_seconds`; 0 is GMT, Open-Meteo's default) → that moment in UTC,
    /// `2026-11-21T19:45:00Z` at 3600; nil unless it is a real moment (month 1–12, a day the
    /// month has, hour 0–23, minute and second 0–59) at an offset within ±18 h.
    static func isoTime(openMeteo time: String, utcOffset: Int = 0) -> String? {
        // `yyyy-MM-ddTHH:mm` or with `:ss`, checked by position (a Regex costs more than the
        // whole rest of the decode on this path).
        guard let digits = PositionalText(time, layout: time.utf8.count == 16 ? "dddd-dd-ddTdd:dd" : "dddd-dd-ddTdd:dd:dd") else { return nil }
        let year = digits.number(0..<4), month = digits.number(5..<7), day = digits.number(8..<10)
        let hour = digits.number(11..<13), minute = digits.number(14..<16), second = time.utf8.count == 16 ? 0 : digits.number(17..<19)
        guard abs(utcOffset) <= largestUTCOffset,
              let local = UTCTime(year: year, month: month, day: day, hour: hour, minute: minute, second: second) else { return nil }
        return UTCTime(epochSeconds: local.epochSeconds - utcOffset).iso8601
    }
}

/// The balance upstream's format, decoded only here: status 200 with
/// `{"balance":1234.56,"date":"2021-06-02 11:01:48 +0000"}`, the balance a finite number and
/// the date `yyyy-MM-dd HH:mm:ss ±hhmm`.
public enum BalanceFormat {
    /// The version of the JSON `json` makes (see `OpenMeteoFormat.version`).
    static let version = 1

    private struct Answer: Decodable {
        let balance: Double
        let date: String
    }

    /// Larder's balance JSON for a fetched entry; throws `UndecodableAnswer` when it is not the balance format.
    static func json(entry: CacheEntry) throws -> [UInt8] {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(entry.body.inMemory ?? [])), answer.balance.isFinite else {
            throw UndecodableAnswer(description: "the balance upstream's body is not {\"balance\":…,\"date\":…}")
        }
        guard let date = parseDate(answer.date) else {
            throw UndecodableAnswer(description: "unreadable balance date '\(answer.date)'")
        }
        return Array("{\"balance\":\(answer.balance),\"lastUpdate\":\"\(date.iso8601)\"}".utf8)
    }

    /// `yyyy-MM-dd HH:mm:ss ±hhmm` (the offset at most ±18:00), as the moment in UTC.
    public static func parseDate(_ text: String) -> UTCTime? {
        guard let digits = PositionalText(text, layout: "dddd-dd-dd dd:dd:dd +dddd") else { return nil }
        let offsetMinutes = digits.number(21..<23) * 60 + digits.number(23..<25)
        guard digits.number(23..<25) < 60, offsetMinutes <= 18 * 60,
              let local = UTCTime(year: digits.number(0..<4), month: digits.number(5..<7), day: digits.number(8..<10),
                                  hour: digits.number(11..<13), minute: digits.number(14..<16), second: digits.number(17..<19)) else { return nil }
        let offset = (digits.bytes[20] == UInt8(ascii: "-") ? -60 : 60) * offsetMinutes
        return UTCTime(epochSeconds: local.epochSeconds - offset)
    }
}

/// A date and time laid out by position, as both upstreams write theirs: `layout` has `d`
/// for a digit, `+` for a sign (`+` or `-`), and any other character for itself.
private struct PositionalText {
    let bytes: [UInt8]

    init?(_ text: String, layout: String) {
        bytes = Array(text.utf8)
        guard bytes.count == layout.utf8.count else { return nil }
        for (byte, expected) in zip(bytes, layout.utf8) {
            let ok = switch expected {
            case UInt8(ascii: "d"): byte >= 0x30 && byte <= 0x39
            case UInt8(ascii: "+"): byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            default: byte == expected
            }
            guard ok else { return nil }
        }
    }

    /// The digits at `range` as a number.
    func number(_ range: Range<Int>) -> Int { bytes[range].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
}
