import Caching
import Foundation
import HTTPCore
import Testing
import TestSupport
@testable import Routes

/// The upstream answers as Larder reads them: which bodies make a weather or balance
/// answer, what each becomes, and that no body, however broken, gets further than a refusal.
@Suite struct UpstreamDecodingTests {
    private func weather(_ body: String) -> String? {
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        return (try? OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry)).map { String(decoding: $0, as: UTF8.self) }
    }

    private func balance(_ body: String) -> String? {
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        return (try? BalanceFormat.json(entry: entry)).map { String(decoding: $0, as: UTF8.self) }
    }

    static let answer = #"{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.02,"utc_offset_seconds":0,"#
        + #""current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"\u00b0C","weather_code":"wmo code"},"#
        + #""current":{"time":"2026-11-21T20:45","interval":900,"temperature_2m":-3.25,"weather_code":71}}"#

    private static func made(_ temperature: String, _ unit: String, _ code: Int) -> String {
        "{\"latitude\":52.52,\"longitude\":13.41,\"temperature\":\(temperature),\"temperatureUnit\":\"\(unit)\","
            + "\"weatherCode\":\(code),\"condition\":\(JSONString.quote(WeatherCondition.description(of: code)!)),"
            + "\"lastUpdate\":\"2026-11-21T20:45:00Z\"}"
    }

    /// Each body, and the answer it makes (nil: refused). A temperature is written as
    /// `Double.description` writes it; a unit absent or null is °C.
    @Test(arguments: [
        (answer, made("-3.25", "°C", 71)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":3,"weather_code":3.0}}"#, made("3.0", "°C", 3)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":1e2,"weather_code":1e0}}"#, made("100.0", "°C", 1)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":-0,"weather_code":0},"current_units":null}"#, made("-0.0", "°C", 0)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":null}}"#,
         made("2.5", "°C", 0)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{}}"#, made("2.5", "°C", 0)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":"K"}}"#,
         made("2.5", "K", 0)),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":1}}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":[]}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":"2.5","weather_code":0}}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0.5}}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":1e400,"weather_code":0}}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":null,"weather_code":0}}"#, nil),
        (#"{"current":{"time":20,"temperature_2m":2,"weather_code":0}}"#, nil),
        (#"{"current":{"temperature_2m":2,"weather_code":0}}"#, nil),
        (#"{"current":null}"#, nil), (#"{"current":[]}"#, nil), ("[]", nil), ("null", nil), ("3", nil), ("", nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2,"weather_code":1000}}"#, nil),
        (#"{"current":{"time":"2026-11-21T20:45","temperature_2m":2,"weather_code":99999999999999999999}}"#, nil),
        ("\"\u{FFFD}\"", nil),
    ] as [(String, String?)])
    func weatherAnswers(_ body: String, _ expected: String?) {
        #expect(weather(body) == expected)
    }

    /// Invalid UTF-8 in a string is refused, not replaced.
    @Test func invalidUTF8IsRefused() {
        var body = Array(Self.answer.utf8)
        let unit = body.firstIndex(of: 0x5C)!  // the `\u00b0` escape
        body.replaceSubrange(unit..<(unit + 6), with: [0xC3])
        let entry = CacheEntry(status: 200, headers: [], body: body, requestTime: Date(), responseTime: Date())
        #expect((try? OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry)) == nil)
    }

    /// Every one-byte change, deletion and doubling of a real answer either is refused or
    /// makes an answer that is JSON with the same members; many still decode.
    @Test func mutatedAnswersAreRefusedOrStillWellFormed() throws {
        let original = Array(Self.answer.utf8)
        let replacements: [UInt8] = Array("{}[]\",:0-.eE9 tfn\\".utf8) + [0x00, 0x7F, 0xC3, 0xFF]
        var accepted = 0, malformed: [String] = []
        func check(_ body: [UInt8]) {
            guard let json = weather(String(decoding: body, as: UTF8.self)) else { return }
            accepted += 1
            let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
            if object?.keys.sorted() != ["condition", "lastUpdate", "latitude", "longitude", "temperature", "temperatureUnit", "weatherCode"] {
                malformed.append(json)
            }
        }
        byteMutations(of: original, replacements: replacements).forEach(check)
        #expect(malformed.isEmpty, "\(malformed.prefix(3))")
        #expect(accepted > 100)  // many mutations (in ignored members, digits) still decode
    }

    @Test(arguments: [
        (#"{"balance":1234.56,"date":"2021-06-02 11:01:48 +0000"}"#, #"{"balance":1234.56,"lastUpdate":"2021-06-02T11:01:48Z"}"#),
        (#"{"balance":-0.0,"date":"2021-06-02 11:01:48 +0000","x":[]}"#, #"{"balance":-0.0,"lastUpdate":"2021-06-02T11:01:48Z"}"#),
        (#"{"balance":7,"date":"2021-06-02 01:01:48 +0230"}"#, #"{"balance":7.0,"lastUpdate":"2021-06-01T22:31:48Z"}"#),
        (#"{"balance":7,"date":"2021-12-31 23:30:00 -0100"}"#, #"{"balance":7.0,"lastUpdate":"2022-01-01T00:30:00Z"}"#),
        (#"{"balance":"1","date":"2021-06-02 11:01:48 +0000"}"#, nil),
        (#"{"balance":1,"date":null}"#, nil),
        (#"{"date":"2021-06-02 11:01:48 +0000"}"#, nil),
        (#"[{"balance":1}]"#, nil),
        (#"{"balance":1e999,"date":"2021-06-02 11:01:48 +0000"}"#, nil),
        (#"{"balance":1,"date":"2021-02-29 11:01:48 +0000"}"#, nil),
        (#"{"balance":1,"date":"2021-06-02T11:01:48Z"}"#, nil),
        (#"{"balance":1,"date":"2021-06-02 11:01:48 +1900"}"#, nil),
        (#"{"balance":1,"date":"2021-06-02 11:01:48 +0060"}"#, nil),
    ] as [(String, String?)])
    func balanceAnswers(_ body: String, _ expected: String?) {
        #expect(balance(body) == expected)
    }

    /// The one date type: epoch seconds and calendar fields agree both ways, across era,
    /// century and leap-year boundaries, and its text is RFC 3339 as Foundation writes it.
    @Test func utcTimeRoundTrips() throws {
        for seconds in stride(from: -62_135_596_800, through: 253_402_300_799, by: 86_399 * 37 + 3_601) {
            let time = UTCTime(epochSeconds: seconds)
            #expect(time.epochSeconds == seconds)
            let again = try #require(UTCTime(year: time.year, month: time.month, day: time.day,
                                             hour: time.hour, minute: time.minute, second: time.second))
            #expect(again == time)
            // Foundation's calendar is Julian before 1582's reform; this one is Gregorian throughout.
            if seconds >= -12_212_553_600 {
                #expect(time.iso8601 == Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601), "\(seconds)")
            }
        }
        #expect(UTCTime(epochSeconds: 951_782_400).iso8601 == "2000-02-29T00:00:00Z")
        #expect(UTCTime(epochSeconds: 0).weekday == 4)
        #expect(UTCTime(epochSeconds: -1).iso8601 == "1969-12-31T23:59:59Z")
        #expect(UTCTime(year: 1900, month: 2, day: 29) == nil)
        #expect(UTCTime(year: 2026, month: 11, day: 21, hour: 24) == nil)
    }
}
