import Foundation
import Testing
import TestSupport
@testable import Routes

/// Larder's two readers of JSON, both Foundation's `JSONDecoder`: the Codable types of the
/// upstream formats and the untyped `JSONValue` of aggregates and the admin API. They read
/// one body alike, refuse what is not JSON or not the member's type, and never trap,
/// however deep or broken the body.
@Suite struct UpstreamJSONTests {
    private func typed(_ bytes: [UInt8]) -> JSONSample? { try? JSONDecoder().decode(JSONSample.self, from: Data(bytes)) }
    private func typed(_ text: String) -> JSONSample? { typed(Array(text.utf8)) }

    /// What the typed reader makes of the untyped reader's value written back as text: the
    /// same sample when the two agree on every member the typed one reads.
    private func retyped(_ text: String) -> JSONSample? {
        (try? JSONValue(reading: Array(text.utf8))).flatMap { typed($0.json) }
    }

    @Test(arguments: [
        "{}",
        #"{"int":1,"double":2.5,"string":"x","flag":true,"u":7,"i64":-7}"#,
        " \n\r\t{\"int\":-0 ,\"flag\" : false}\t\n",
        #"{"int":3.0,"u":1e2,"i64":-9223372036854775808,"double":-0}"#,
        #"{"double":1e-310,"int":0.1e1}"#,
        #"{"double":12345678901234567890,"int":120E-1}"#,
        #"{"int":88888888888888884.0,"i64":-12345678901234567e1,"u":1000000000000000000.0e1}"#,
        #"{"int":9007199254740993.0,"i64":-9223372036854775807.0,"u":0.0e99999999999999999999}"#,
        #"{"string":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r"}"#,
        #"{"string":"é😀 \u0000"}"#,
        #"{"\u0069nt":5,"str\u0069ng":"s"}"#,
        #"{"int":1,"int":2,"string":"first","string":3}"#,
        #"{"list":[{"i8":-128,"u16":65535,"f":1.5,"s":"a"},null,{},{"f":3.4028234e38},{"f":1e-45},{"f":1.00000005960464477539062499}]}"#,
        #"{"map":{"a":1,"b":2},"other":[1,{"x":[]},true,null,"s",-1.5E+3],"n":null}"#,
        #"{"int":null,"list":null,"map":{}}"#,
        "\u{FEFF}{\"int\":1}",
    ])
    func theTwoReadersReadOneBodyAlike(_ text: String) throws {
        let expected = try #require(typed(text))
        let untyped = try #require(retyped(text))
        #expect(expected.agrees(with: untyped), "\(untyped)")
    }

    /// Bodies that are not JSON, or hold what the member's type cannot: the typed reader
    /// refuses each.
    @Test(arguments: [
        "{\"string\":\"\u{01}\"}", #"{"x":.5}"#, #"{"x":+1}"#, #"{"x":"\u12"}"#,
        #"{"string":"\ud800"}"#, #"{"string":"\udc00"}"#, #"{"string":"\ud83dA"}"#,
        #"{"int":1} x"#, #"{"int":1}{"int":1}"#, #"{"int":1"#, #"{"int""#, "", " ", #"{a:1}"#, #"{"x":tru}"#, #"{"x":nul}"#,
        #"{"x":NaN}"#, "{\"int\":1\u{0B}}", "[1]", "null", #""s""#,
        #"{"int":"1"}"#, #"{"int":1.5}"#, #"{"int":12345e-6}"#, #"{"int":9.3e18}"#, #"{"int":-9.223372036854775808e18}"#,
        #"{"int":1e99999999999999999999}"#, #"{"u":-1.0}"#,
        #"{"int":1e9223372036854775807}"#, #"{"int":1e100001}"#, #"{"int":1e400}"#, #"{"int":9223372036854775808}"#, #"{"u":-1}"#, #"{"flag":1}"#,
        #"{"double":1e400}"#, #"{"double":-1e400}"#, #"{"double":1e-400}"#, #"{"double":"1"}"#, #"{"string":1}"#,
        #"{"list":{}}"#, #"{"list":[{"i8":128}]}"#, #"{"list":[{"f":1e39}]}"#, #"{"list":[{"f":3.4028236e38}]}"#, #"{"list":[{"f":1e-46}]}"#, #"{"map":[]}"#, #"{"map":{"a":null}}"#,
    ])
    func refusesWhatIsNotJSONOrNotItsType(_ text: String) {
        #expect(typed(text) == nil)
    }

    /// Breaks of JSON's grammar in a member nothing reads pass the typed reader, as they pass
    /// `JSONDecoder` (the issue accepts its reading); the untyped reader reads every member,
    /// so it refuses the bodies whose break is inside a value.
    @Test(arguments: [
        (#"{"int":1,}"#, false), (#"{"int":1,"x":[1,]}"#, false), (#"{"x":01,"int":1}"#, true), (#"{"x":-,"int":1}"#, true),
        (#"{"x":"\q","int":1}"#, true), ("{\"x\":\"a\tb\"}", true), (#"{"x":1.}"#, true), (#"{"x":1e}"#, true),
    ] as [(String, Bool)])
    func aBreakInAMemberNothingReadsPassesTheTypedReader(_ text: String, _ untypedRefuses: Bool) {
        #expect(typed(text) != nil)
        #expect(((try? JSONValue(reading: Array(text.utf8))) == nil) == untypedRefuses)
    }

    /// A number so small it is nothing but zero reads as the integer 0, as `JSONDecoder` reads it.
    @Test(arguments: [#"{"int":1e-99999999999999999999}"#, #"{"int":1.5e-9223372036854775808}"#])
    func aVanishingNumberReadsAsAZeroInteger(_ text: String) {
        #expect(typed(text)?.int == 0)
    }

    /// `JSONDecoder` on Linux refuses a zero written with an exponent as a Double.
    @Test func aZeroWithAnExponentIsRefusedAsADouble() {
        #expect(typed(#"{"double":0e3}"#) == nil)
        #expect(typed(#"{"int":0E5}"#)?.int == 0)
    }

    /// Invalid UTF-8 in a string read is refused, not replaced.
    @Test func invalidUTF8IsRefused() throws {
        let body = Array(#"{"string":""#.utf8) + [0xC3] + Array(#""}"#.utf8)
        #expect(typed(body) == nil)
        #expect((try? JSONValue(reading: body)) == nil)
    }

    /// Foundation's `JSONDecoder` stops at 512 levels, both readers with it.
    @Test func nestingIsRefusedPastTheLimitNotRecursed() {
        let deep = "{\"x\":" + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        #expect(typed(deep) == nil && retyped(deep) == nil)
        let limit = 512
        let within = "{\"x\":" + String(repeating: "[", count: limit - 1) + String(repeating: "]", count: limit - 1) + ",\"int\":4}"
        #expect(typed(within)?.int == 4 && retyped(within)?.int == 4)
        let beyond = "{\"x\":" + String(repeating: "[", count: limit) + String(repeating: "]", count: limit) + ",\"int\":4}"
        #expect(typed(beyond) == nil && retyped(beyond) == nil)
        #expect(typed("{\"x\":" + String(repeating: "{\"a\":", count: 100_000)) == nil)
    }

    @Test func errorsNameTheMemberAndWhatWasWrong() {
        struct Required: Decodable {
            struct Inner: Decodable { let value: Int }
            let inner: Inner
        }
        func error(_ text: String) -> DecodingError? {
            do {
                _ = try JSONDecoder().decode(Required.self, from: Data(text.utf8))
                return nil
            } catch {
                return error as? DecodingError
            }
        }
        guard case .keyNotFound(let key, let context)? = error(#"{"inner":{}}"#) else { Issue.record("no keyNotFound"); return }
        #expect(key.stringValue == "value" && context.codingPath.map(\.stringValue) == ["inner"])
        guard case .typeMismatch(_, let mismatch)? = error(#"{"inner":{"value":"1"}}"#) else { Issue.record("no typeMismatch"); return }
        #expect(mismatch.codingPath.map(\.stringValue) == ["inner", "value"])
        guard case .valueNotFound? = error(#"{"inner":null}"#) else { Issue.record("no valueNotFound"); return }
    }

    /// Every one-byte change, deletion and doubling of a real Open-Meteo answer: what the
    /// typed reader reads, the untyped reader reads alike.
    @Test func mutatedAnswersReadAlikeByBothReaders() {
        struct Answer: Decodable, Equatable {
            struct Current: Decodable, Equatable {
                let time: String
                let temperature_2m: Double
                let weather_code: Int
            }
            let current: Current
            let current_units: [String: String]?
            let utc_offset_seconds: Int?
        }
        let original = Array(UpstreamDecodingTests.answer.utf8)
        let replacements: [UInt8] = Array("{}[]\",:0-.eE9 tfn\\u".utf8) + [0x00, 0x7F, 0xC3, 0xFF]
        var read = 0, differing: [String] = []
        func check(_ body: [UInt8]) {
            guard let ours = try? JSONDecoder().decode(Answer.self, from: Data(body)), let value = try? JSONValue(reading: body) else { return }
            read += 1
            if (try? JSONDecoder().decode(Answer.self, from: Data(value.json))) != ours { differing.append(String(decoding: body, as: UTF8.self)) }
        }
        byteMutations(of: original, replacements: replacements).forEach(check)
        #expect(differing.isEmpty, "\(differing.prefix(3))")
        #expect(read > 100)
    }
}
