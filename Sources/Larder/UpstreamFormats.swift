import Caching
import Crypto
import Foundation
import HTTPServer

/// A decoded upstream answer rendered once into Larder's own JSON, with its strong ETag and
/// the `Date` to send, so a cache hit only copies bytes.
struct RenderedBody: Sendable {
    let body: [UInt8]
    let etag: String
    /// The upstream's Date (or when its answer arrived, if it sent none): a cache forwards the
    /// origin's Date with Age beside it (RFC 9110 §6.6.1, RFC 9111 §4.2.3), never "now".
    let date: String

    init(json: String, entry: CacheEntry) {
        body = Array(json.utf8)
        etag = RenderedBody.etag(of: body)
        date = HTTPDate.format(epochSeconds: Int((entry.date ?? entry.responseTime).timeIntervalSince1970))
    }

    /// A strong validator over the body: the first 16 bytes of its SHA-256, quoted.
    static func etag(of body: [UInt8]) -> String {
        "\"" + SHA256.hash(data: body).prefix(16).map { String(format: "%02x", $0) }.joined() + "\""
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

    static func render(key: String, entry: CacheEntry) throws -> RenderedBody {
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
        return RenderedBody(json: "{\"latitude\":\(pair[0]),\"longitude\":\(pair[1]),\"temperature\":\(answer.current.temperature_2m),"
            + "\"temperatureUnit\":\(jsonQuote(unit)),\"weatherCode\":\(answer.current.weather_code),"
            + "\"condition\":\(jsonQuote(condition)),\"lastUpdate\":\"\(lastUpdate)\"}", entry: entry)
    }

    /// `2026-11-21T20:45` (GMT) → `2026-11-21T20:45:00Z`.
    static func isoTime(openMeteo time: String) -> String? {
        guard time.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?/) != nil else { return nil }
        return time.count == 16 ? time + ":00Z" : time + "Z"
    }
}

/// The balance upstream's format, decoded only here: status 200 with
/// `{"balance":1234.56,"date":"2021-06-02 11:01:48 +0000"}`.
enum BalanceFormat {
    private struct Answer: Decodable {
        let balance: Double
        let date: String
    }

    static func render(entry: CacheEntry) throws -> RenderedBody {
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(entry.body)), answer.balance.isFinite else {
            throw UndecodableAnswer(description: "the balance upstream's body is not {\"balance\":…,\"date\":…}")
        }
        guard let date = parseDate(answer.date) else {
            throw UndecodableAnswer(description: "unreadable balance date '\(answer.date)'")
        }
        return RenderedBody(json: "{\"balance\":\(answer.balance),\"lastUpdate\":\"\(isoFormat(date))\"}", entry: entry)
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

func jsonQuote(_ s: String) -> String { JSONString.quote(s) }
