import Foundation
import HTTPCore
import CacheVocabulary
import Testing
@testable import Caching

/// What a pass-through route sends of a stored answer: every stored field but Larder's own
/// (`Age`, `Content-Length`, framing, tags, the override note) plus `Accept-Ranges: bytes`
/// (a stored body answers ranges), and for a 304 only those that do not describe a body.
@Suite struct RelayedFieldsTests {
    private let stored = entry([
        ("Date", httpDate(0)), ("Content-Type", "text/plain"), ("Age", "5"), ("Content-Length", "2"),
        ("Connection", "close"), ("Transfer-Encoding", "chunked"), ("Surrogate-Key", "a b"), ("ETag", "\"v1\""),
        ("Content-Location", "/x"), ("content-encoding", "gzip"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2"),
        (CacheOverrides.noteField, "ignored"), ("X-Odd", ""),
    ])

    private func lines(_ fields: RenderedFields) -> [String] {
        String(decoding: fields.bytes, as: UTF8.self).components(separatedBy: "\r\n").dropLast().map { $0 }
    }

    @Test func aFullAnswerCarriesEveryStoredFieldButLardersOwnInOrder() {
        let rendered = RenderedResponse(relaying: stored)
        #expect(lines(rendered.fields) == [
            "Date: \(httpDate(0))", "Content-Type: text/plain", "ETag: \"v1\"", "Content-Location: /x",
            "content-encoding: gzip", "Set-Cookie: a=1", "Set-Cookie: b=2", "X-Odd: ", "Accept-Ranges: bytes",
        ])
        #expect(rendered.fields.hasDate)
    }

    @Test func aNotModifiedAnswerLeavesOutTheFieldsThatDescribeABody() {
        let rendered = RenderedResponse(relaying: stored)
        #expect(lines(rendered.notModifiedFields) == [
            "Date: \(httpDate(0))", "ETag: \"v1\"", "Content-Location: /x", "Set-Cookie: a=1", "Set-Cookie: b=2", "X-Odd: ",
        ])
        #expect(rendered.notModifiedFields.hasDate)
    }

    @Test func withoutADateNeitherSetSaysItHasOne() {
        let rendered = RenderedResponse(relaying: entry([("Content-Type", "text/plain")]))
        #expect(!rendered.fields.hasDate && !rendered.notModifiedFields.hasDate)
        #expect(lines(rendered.notModifiedFields).isEmpty)
    }
}
