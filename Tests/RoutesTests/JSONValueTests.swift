import Foundation
import Testing
@testable import Routes

/// The one reader of untyped JSON: what it reads (as `JSONDecoder` reads it), what it
/// refuses without trapping, and the text it writes back.
@Suite struct JSONValueTests {
    private func read(_ text: String) -> JSONValue? { try? JSONValue(reading: Array(text.utf8)) }
    private func written(_ text: String) -> String? { read(text).map { String(decoding: $0.json, as: UTF8.self) } }

    @Test func everyKindOfValueIsRead() {
        #expect(read(#" {"a":[1,2.5,"s",true,null,{}],"b":-3e0} "#)
            == .object(["a": .array([.integer(1), .double(2.5), .string("s"), .bool(true), .null, .object([:])]), "b": .integer(-3)]))
        #expect(read("7") == .integer(7) && read(#""\u00e9\ud83d\ude00""#) == .string("é😀") && read("null") == .null)
        #expect(read("12345678901234567890") == .double(Double("12345678901234567890")!))
    }

    /// Of two members with one name the first counts, as in the upstream formats' types.
    @Test func theFirstOfTwoMembersWithOneNameCounts() {
        #expect(read(#"{"k":1,"k":2}"#) == .object(["k": .integer(1)]))
        #expect(read(#"{"a\u006cl":1,"all":2}"#) == .object(["all": .integer(1)]))
    }

    @Test(arguments: ["", " ", "{", #"{"a":1"#, #"{a:1}"#, "[1 2]", #"{"x":tru}"#, #"{"x":NaN}"#, "{\"x\":\"a\tb\"}",
                      #"{"x":"\ud800"}"#, #"{"x":1e400}"#, #"{"x":.5}"#, "<html>", #"{"a":1} x"#])
    func whatIsNotJSONIsRefused(_ text: String) {
        #expect(read(text) == nil)
    }

    @Test func invalidUTF8IsRefused() {
        #expect((try? JSONValue(reading: Array(#"{"x":""#.utf8) + [0xC3] + Array(#""}"#.utf8))) == nil)
    }

    /// `JSONDecoder` stops at 512 levels, so no body can exhaust the stack here.
    @Test func nestingIsRefusedPastTheLimitNotRecursed() {
        #expect(read(String(repeating: "[", count: 511) + String(repeating: "]", count: 511)) != nil)
        #expect(read(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)) == nil)
        #expect(read(String(repeating: #"{"a":"#, count: 100_000)) == nil)
    }

    /// The text is what `JSONSerialization` writes with `.sortedKeys`, members in the same
    /// order: an aggregate that keeps a part's fields has the bytes and the ETag it had.
    @Test(arguments: [
        (#"{"b":1,"B":2,"a":3,"10":4,"9":5,"é":6,"z":7,"_":8,"a1":9,"A":10}"#, #"{"_":8,"9":5,"10":4,"a":3,"A":10,"a1":9,"b":1,"B":2,"é":6,"z":7}"#),
        ("[1.1,0.85,100,1e2,3.0,1e-7,1.5e300,5e-324,-9223372036854775808]", "[1.1,0.85,100,100,3,1e-07,1.5e+300,5e-324,-9223372036854775808]"),
        (#""a/b\u0000\u001f\u007f\u00e9\ud83d\ude00\"\\""#, "\"a/b\\u0000\\u001f\u{7F}é😀\\\"\\\\\""),
        (#"{"x":[{"y":null}],"t":true,"f":false}"#, #"{"f":false,"t":true,"x":[{"y":null}]}"#),
    ])
    func theTextWrittenIsAsJSONSerializationWritesIt(_ text: String, _ expected: String) {
        #expect(written(text) == expected)
    }

    @Test func whatIsWrittenReadsBackTheSame() throws {
        let value = try #require(read(#"{"a":[1,-2.5e-3,"\n\"",{"b":[]}],"c":{"d":null,"e":1e300}}"#))
        #expect(try JSONValue(reading: value.json) == value)
    }
}
