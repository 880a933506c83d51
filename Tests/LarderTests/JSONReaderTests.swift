import Caching
import Foundation
import HTTPCore
import HTTPServer
import Testing
@testable import Larder
@testable import Routes

/// The JSON reader that decodes upstream answers: strict on outside bytes, and, for the
/// weather and balance formats, the same answers (and the same refusals) as the
/// `JSONDecoder` it replaced.
@Suite struct JSONReaderTests {
    @Test func aDocumentIsReadIntoItsTree() throws {
        let text = #" { "a" : [1, -0.5e+3, true, false, null, {}], "b\"\\\/\b\f\n\r\t" : "\u00b0C \ud83d\ude00", "c": {"d": [[]]} } "#
        let value = try #require(JSONValue.parse(Array(text.utf8)))
        #expect(value == .object([
            ("a", .array([.number("1"), .number("-0.5e+3"), .bool(true), .bool(false), .null, .object([])])),
            ("b\"\\/\u{08}\u{0C}\n\r\t", .string("°C 😀")),
            ("c", .object([("d", .array([.array([])]))])),
        ]))
        #expect(value["a"] != nil && value["missing"] == nil)
        #expect(JSONValue.number("-0.5e+3").double == -500)
        #expect(JSONValue.number("3.0").integer == 3 && JSONValue.number("1e2").integer == 100)
        #expect(JSONValue.number("3.5").integer == nil && JSONValue.number("1e400").double == nil)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[1 2]", "01", "1.", ".5", "+1", "-", "1e", "1e+",
        "tru", "nul", "True", "\"open", "\"tab\there\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "[1] x", "{} {}", "NaN", "Infinity", "'single'", "[\"\u{0}\"]",
    ])
    func invalidDocumentsAreRefused(_ text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
    }

    @Test func bytesThatAreNotUTF8AreRefused() {
        #expect(JSONValue.parse([0x22, 0xFF, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0xC3, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0xC3, 0xA9, 0x22]) == .string("é"))
    }

    @Test func onlyTheMembersKeptAreBuiltAndTheRestIsStillChecked() throws {
        let text = #"{"skip":{"x":[1,"é",{"y":null}],"z":"\u00e9"},"keep":{"a":1,"b":[true,"two"],"c":"three"},"n":-0.5e1,"#
            + #""keep":{"a":2}}"#
        let keep = JSONKeep.members(["keep": .members(["a": .whole, "b": .whole]), "n": .whole])
        let value = try #require(JSONValue.parse(Array(text.utf8), keeping: keep))
        // What is left out is absent, not null; a repeated member is kept each time (the first answers).
        #expect(value == .object([
            ("keep", .object([("a", .number("1")), ("b", .array([.bool(true), .string("two")]))])),
            ("n", .number("-0.5e1")),
            ("keep", .object([("a", .number("2"))])),
        ]))
        #expect(value["keep"]?["a"] == .number("1"))
        // A key written with escapes is the same key.
        let escaped = try #require(JSONValue.parse(Array(#"{"k\u0065ep":{"a":3}}"#.utf8), keeping: keep))
        #expect(escaped["keep"]?["a"] == .number("3"))
        // A member that should be an object and is not is kept whole, for the format to refuse.
        #expect(JSONValue.parse(Array(#"{"keep":[1,2]}"#.utf8), keeping: keep)?["keep"] == .array([.number("1"), .number("2")]))
    }

    @Test(arguments: [
        #"{"skip":"\x"}"#, #"{"skip":"tab\#there"}"#, #"{"skip":01}"#, #"{"skip":[1,]}"#, #"{"skip":{"a" 1}}"#, #"{"skip":tru}"#,
        #"{"skip":"\ud800"}"#, #"{"skip":1} x"#,
    ])
    func whatIsNotKeptIsRefusedAsStrictly(_ text: String) {
        let keep = JSONKeep.members(["keep": .whole])
        #expect(JSONValue.parse(Array(text.utf8)) == nil)
        #expect(JSONValue.parse(Array(text.utf8), keeping: keep) == nil)
    }

    @Test func bytesThatAreNotUTF8AreRefusedWhereverTheyAre() {
        let keep = JSONKeep.members(["keep": .whole])
        for bytes: [UInt8] in [[0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D]] {
            #expect(JSONValue.parse(bytes) == nil)
            #expect(JSONValue.parse(bytes, keeping: keep) == nil)
        }
        let valid: [UInt8] = [0x7B, 0x22, 0x73, 0x22, 0x3A, 0x22, 0xC3, 0xA9, 0x22, 0x7D]
        #expect(JSONValue.parse(valid, keeping: keep) == .object([]))
    }

    @Test func nestingIsBoundedSoNoAnswerCanExhaustTheStack() {
        let deepest = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect(JSONValue.parse(Array(deepest.utf8)) != nil)
        let tooDeep = "[" + deepest + "]"
        #expect(JSONValue.parse(Array(tooDeep.utf8)) == nil)
        let hostile = String(repeating: "[", count: 1_000_000)
        #expect(JSONValue.parse(Array(hostile.utf8)) == nil)
        // A member that is only checked is bounded the same way.
        let skipped = Array(("{\"skip\":" + tooDeep + "}").utf8)
        #expect(JSONValue.parse(skipped, keeping: .members(["keep": .whole])) == nil)
        #expect(JSONValue.parse(Array(("{\"skip\":" + deepest.dropFirst().dropLast() + "}").utf8), keeping: .members(["keep": .whole])) != nil)
    }

    // MARK: The formats, against JSONDecoder

    /// The weather decoding as it was, with `JSONDecoder`: the reference.
    private struct ReferenceAnswer: Decodable {
        struct Units: Decodable { let temperature_2m: String? }
        struct Current: Decodable {
            let time: String
            let temperature_2m: Double
            let weather_code: Int
        }
        let current_units: Units?
        let current: Current
        let utc_offset_seconds: Int?
    }

    private func reference(_ body: [UInt8]) -> String? {
        guard let answer = try? JSONDecoder().decode(ReferenceAnswer.self, from: Data(body)), answer.current.temperature_2m.isFinite,
              let condition = WeatherCondition.description(of: answer.current.weather_code),
              let lastUpdate = OpenMeteoFormat.isoTime(openMeteo: answer.current.time, utcOffset: answer.utc_offset_seconds ?? 0)
        else { return nil }
        return "{\"latitude\":52.52,\"longitude\":13.41,\"temperature\":\(answer.current.temperature_2m),"
            + "\"temperatureUnit\":\(JSONString.quote(answer.current_units?.temperature_2m ?? "°C")),"
            + "\"weatherCode\":\(answer.current.weather_code),\"condition\":\(JSONString.quote(condition)),\"lastUpdate\":\"\(lastUpdate)\"}"
    }

    private func weather(_ body: [UInt8]) -> String? {
        let entry = CacheEntry(status: 200, headers: [], body: body, requestTime: Date(), responseTime: Date())
        return (try? OpenMeteoFormat.json(resource: "52.52,13.41", entry: entry)).map { String(decoding: $0, as: UTF8.self) }
    }

    static let answer = #"{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.02,"utc_offset_seconds":0,"#
        + #""current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"\u00b0C","weather_code":"wmo code"},"#
        + #""current":{"time":"2026-11-21T20:45","interval":900,"temperature_2m":-3.25,"weather_code":71}}"#

    @Test(arguments: [
        answer,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":3,"weather_code":3.0}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":1e2,"weather_code":1e0}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":-0,"weather_code":0},"current_units":null}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":null}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":"K"}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":{"temperature_2m":1}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0},"current_units":[]}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":"2.5","weather_code":0}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2.5,"weather_code":0.5}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":1e400,"weather_code":0}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":null,"weather_code":0}}"#,
        #"{"current":{"time":20,"temperature_2m":2,"weather_code":0}}"#,
        #"{"current":{"temperature_2m":2,"weather_code":0}}"#,
        #"{"current":null}"#, #"{"current":[]}"#, "[]", "null", "3",
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2,"weather_code":1000}}"#,
        #"{"current":{"time":"2026-11-21T20:45","temperature_2m":2,"weather_code":99999999999999999999}}"#,
    ])
    func weatherAnswersDecodeAsJSONDecoderDecodedThem(_ body: String) {
        #expect(weather(Array(body.utf8)) == reference(Array(body.utf8)))
    }

    @Test func theRealAnswerDecodes() {
        #expect(weather(Array(Self.answer.utf8))?.contains("\"temperature\":-3.25,\"temperatureUnit\":\"°C\"") == true)
    }

    /// Every one-byte change, deletion and doubling of a real answer. Where `JSONDecoder`
    /// refused, so does the reader; where the reader accepts, the JSON is the same. The reader
    /// is stricter in one way only: `JSONDecoder` never looked at members it did not decode
    /// (a malformed number or string there passed), while the whole body must be valid JSON
    /// now; every such case is one `JSONSerialization` refuses too.
    @Test func mutatedAnswersDecodeAsJSONDecoderDecodedThem() {
        let original = Array(Self.answer.utf8)
        let replacements: [UInt8] = Array("{}[]\",:0-.eE9 tfn\\".utf8) + [0x00, 0x7F, 0xC3, 0xFF]
        var disagreements: [String] = []
        var accepted = 0, stricter = 0
        func compare(_ body: [UInt8]) {
            let mine = weather(body), theirs = reference(body)
            if mine != nil { accepted += 1 }
            guard mine != theirs else { return }
            if mine == nil, (try? JSONSerialization.jsonObject(with: Data(body))) == nil {
                stricter += 1
            } else {
                disagreements.append(String(decoding: body, as: UTF8.self))
            }
        }
        for index in original.indices {
            var removed = original
            removed.remove(at: index)
            compare(removed)
            var doubled = original
            doubled.insert(original[index], at: index)
            compare(doubled)
            for byte in replacements where byte != original[index] {
                var changed = original
                changed[index] = byte
                compare(changed)
            }
        }
        #expect(disagreements.count == 0, "\(disagreements.count): \(disagreements.prefix(3))")
        #expect(accepted > 100)  // many mutations (in ignored members, digits) still decode
        #expect(stricter > 0)  // and the malformed ones among them no longer do
    }

    @Test func aNumberIsWrittenAsDoubleDescriptionWritesIt() {
        var texts: [String] = []
        for sign in ["", "-"] {
            for whole in ["0", "1", "7", "12", "100", "123456789", "999999999", "1000000000", "9007199254740993"] {
                for fraction in ["", ".0", ".5", ".05", ".001", ".0001", ".50", ".123456", ".1234567", ".000001", ".333333"] {
                    for exponent in ["", "e2", "E-7", "e400"] { texts.append(sign + whole + fraction + exponent) }
                }
            }
        }
        for text in texts {
            let reference = Double(text).flatMap { $0.isFinite ? $0.description : nil }
            #expect(JSONValue.number(text).doubleText == reference, "\(text)")
        }
        // Temperatures as Open-Meteo writes them take the copy, not a parse.
        for text in ["12.3", "-7", "0.05", "-0.001", "23.456789", "0"] {
            #expect(JSONValue.plainDecimal(text) != nil, "\(text)")
        }
        #expect(JSONValue.string("1").doubleText == nil)
    }

    @Test(arguments: [
        #"{"balance":1234.56,"date":"2021-06-02 11:01:48 +0000"}"#, #"{"balance":"1","date":"2021-06-02 11:01:48 +0000"}"#,
        #"{"balance":1,"date":null}"#, #"{"date":"2021-06-02 11:01:48 +0000"}"#, #"{"balance":-0.0,"date":"2021-06-02 11:01:48 +0000","x":[]}"#,
        #"[{"balance":1}]"#, #"{"balance":1e999,"date":"2021-06-02 11:01:48 +0000"}"#,
    ])
    func balanceAnswersDecodeAsJSONDecoderDecodedThem(_ body: String) {
        struct Reference: Decodable {
            let balance: Double
            let date: String
        }
        let entry = CacheEntry(status: 200, headers: [], body: Array(body.utf8), requestTime: Date(), responseTime: Date())
        let mine = (try? BalanceFormat.json(entry: entry)).map { String(decoding: $0, as: UTF8.self) }
        let theirs = (try? JSONDecoder().decode(Reference.self, from: Data(body.utf8))).flatMap { answer -> String? in
            guard answer.balance.isFinite, let date = BalanceFormat.parseDate(answer.date) else { return nil }
            return "{\"balance\":\(answer.balance),\"lastUpdate\":\"\(BalanceFormat.isoFormat(date))\"}"
        }
        #expect(mine == theirs)
    }
}
