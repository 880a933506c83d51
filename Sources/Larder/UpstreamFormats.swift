import Caching
import Crypto
import Foundation
import HTTPCore
import HTTPServer

/// A decoded upstream answer rendered once into Larder's own JSON, with its strong ETag and
/// its fixed header fields, so a cache hit copies bytes and renders only `Age` and
/// `Cache-Status`.
struct RenderedBody: Sendable {
    let body: [UInt8]
    let etag: String
    /// The upstream's Date (or when its answer arrived, if it sent none): a cache forwards the
    /// origin's Date with Age beside it (RFC 9110 §6.6.1, RFC 9111 §4.2.3), never "now".
    let date: String
    /// The full lifetime the prepared Cache-Control states.
    let lifetime: Int
    /// Cache-Control, Date and ETag: what a 304 carries besides Age and Cache-Status.
    let validators: PreparedHeaders
    /// The same plus Content-Type: what a 200 carries.
    let full: PreparedHeaders

    init(body: [UInt8], date: String, lifetime: Int, cacheControl: String) {
        self.body = body
        etag = RenderedBody.etag(of: body)
        self.date = date
        self.lifetime = lifetime
        let fields = [("Cache-Control", cacheControl), ("Date", date), ("ETag", etag)]
        validators = PreparedHeaders(fields)
        full = PreparedHeaders(fields + [("Content-Type", "application/json")])
    }

    init(json: String, entry: CacheEntry, lifetime: Int, cacheControl: String) {
        self.init(body: Array(json.utf8), date: HTTPDate.format(epochSeconds: Int((entry.date ?? entry.responseTime).timeIntervalSince1970)),
                  lifetime: lifetime, cacheControl: cacheControl)
    }

    /// A strong validator over the body: the first 16 bytes of its SHA-256, quoted.
    static func etag(of body: [UInt8]) -> String {
        "\"" + Hex.string(SHA256.hash(data: body).prefix(16)) + "\""
    }
}

/// Why an upstream 200 cannot be used: it is an upstream error (502 or a stale answer), never stored.
struct UndecodableAnswer: Error, CustomStringConvertible {
    let description: String
}

/// Open-Meteo's current-weather format, decoded only here.
enum OpenMeteoFormat {
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

    /// The upstream request for a weather key (`weather:LAT,LON`).
    static func url(base: String, key: String) -> String {
        let pair = key.dropFirst("weather:".count).split(separator: ",")
        let separator = base.contains("?") ? "&" : "?"
        return "\(base)\(separator)latitude=\(pair.first ?? "")&longitude=\(pair.last ?? "")&current=temperature_2m,weather_code"
    }

    /// Larder's weather JSON for a fetched entry; throws `UndecodableAnswer` when it is not Open-Meteo's format.
    static func json(key: String, entry: CacheEntry) throws -> String {
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
        let pair = key.dropFirst("weather:".count).split(separator: ",")
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


extension RenderedBody: MemoryCosted {
    /// The body, the ETag and Date strings and both rendered field blocks.
    var memoryCost: Int {
        MemoryCost.array(bytes: body.count) + MemoryCost.string(etag) + MemoryCost.string(date)
            + MemoryCost.array(bytes: validators.bytes.count) + MemoryCost.array(bytes: full.bytes.count)
    }
}
