import Foundation
@testable import HTTPCore
import Testing

/// The RFC 9110 pieces every module shares: byte ranges, entity-tag comparison, hop-by-hop
/// fields and HTTP dates.
@Suite struct HTTPVocabularyTests {
    @Test(arguments: [
        ("bytes=0-9", 100, ByteRange.Selection.partial(ByteRange(first: 0, last: 9))),
        ("bytes=90-", 100, .partial(ByteRange(first: 90, last: 99))),
        ("bytes=-10", 100, .partial(ByteRange(first: 90, last: 99))),
        ("bytes=-1000", 100, .partial(ByteRange(first: 0, last: 99))),
        ("bytes=50-5000", 100, .partial(ByteRange(first: 50, last: 99))),
        ("BYTES = 1-2", 100, .whole),
        ("Bytes=1-2", 100, .partial(ByteRange(first: 1, last: 2))),
        ("bytes=100-", 100, .unsatisfiable),
        ("bytes=-0", 100, .unsatisfiable),
        ("bytes=0-1,5-6", 100, .whole),
        ("bytes=9-1", 100, .whole),
        ("items=0-1", 100, .whole),
        ("bytes=-", 100, .whole),
        ("bytes=99999999999999999999999-", 100, .unsatisfiable),
    ])
    func aRangeSelectsWithinTheRepresentation(_ header: String, _ length: Int, _ expected: ByteRange.Selection) {
        #expect(ByteRange.select(header, length: length) == expected)
    }

    @Test func entityTagsCompareWeaklyWhereTheRFCSaysSo() {
        #expect(EntityTag.weaklyEqual("W/\"a\"", "\"a\""))
        #expect(EntityTag.weaklyEqual("\"a\"", "W/\"a\""))
        #expect(!EntityTag.weaklyEqual("\"a\"", "\"b\""))
        #expect(EntityTag.ifNoneMatch(["\"x\", W/\"a\""], matches: "\"a\""))
        #expect(EntityTag.ifNoneMatch(["\"x\"", " * "], matches: "\"a\""))
        #expect(!EntityTag.ifNoneMatch(["\"x\", \"y\""], matches: "\"a\""))
        #expect(!EntityTag.ifNoneMatch([], matches: "\"a\""))
    }

    @Test func hopByHopFieldsAndTheOnesConnectionNamesAreRemoved() {
        let fields: HTTPHeaders = [("Connection", "close, X-Private"), ("Keep-Alive", "5"), ("TE", "trailers"),
                                   ("x-private", "1"), ("Content-Type", "text/plain"), ("Cookie", "a=b")]
        let kept = HopByHop.removed(from: fields, dropping: ["cookie"])
        #expect(kept.map(\.name) == ["Content-Type"])
        #expect(HopByHop.contains("Transfer-Encoding"))
        #expect(!HopByHop.contains("Content-Length"))
    }

    /// RFC 9110 §5.6.1: members split on commas, OWS trimmed, empty members ignored.
    @Test func listMembersAreSplitOnCommasTrimmedAndNeverEmpty() {
        #expect("a, b,\tc ".listMembers() == ["a", "b", "c"])
        #expect(", ,a,,  ,b,".listMembers() == ["a", "b"])
        #expect(" \t ".listMembers().isEmpty)
        #expect("".listMembers().isEmpty)
        // A comma is a separator even when a combining mark follows it (one Character with it).
        #expect("x,\u{301}y".listMembers() == ["x", "\u{301}y"])
        #expect("é, ü".listMembers() == ["é", "ü"])
    }

    @Test func httpDatesRoundTripInEveryFormTheRFCAccepts() throws {
        #expect(HTTPDate.format(epochSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            let date = try #require(HTTPDateParser.parse(text), "\(text)")
            #expect(date.timeIntervalSince1970 == 784_111_777, "\(text)")
        }
        #expect(HTTPDateParser.parse("yesterday") == nil)
        #expect(HTTPDateParser.parse("Sun, 32 Nov 1994 08:49:37 GMT") == nil)
    }
}
