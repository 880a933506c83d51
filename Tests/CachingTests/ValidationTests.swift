import TestSupport
import Foundation
import HTTPCore
import Bodies
import Testing
@testable import Caching

/// Not Modified is an answer to a condition: it freshens the stored response it names
/// (RFC 9111 §4.3.4) and nothing else, and it is never passed on to a client that asked
/// without one.
@Suite(.timeLimit(.minutes(1))) struct ValidationTests {
    @Test func a304NamingAnotherResponseUpdatesNothingAndTheRequestIsMadeAgain() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(headers: [("Cache-Control", "max-age=10"), ("ETag", "\"orig\""), ("X-Copy", "first")], body: "first"))
        try await h.send("GET", "/v")
        h.clock.advance(by: 30)
        h.origin.reply { sent in
            sent.headers["if-none-match"] == nil
                ? .init(headers: [("Cache-Control", "max-age=10"), ("ETag", "\"new\""), ("X-Copy", "second")], body: "second")
                : .init(status: 304, headers: [("Cache-Control", "max-age=600"), ("ETag", "\"OTHER\""), ("X-Copy", "relabelled")])
        }
        let answer = try await h.send("GET", "/v")
        #expect(h.body(answer) == "second" && answer.entry.header("x-copy") == "second")
        #expect(answer.status.forwardStatus == 200 && answer.status.stored)
        #expect(h.origin.requests.suffix(2).map { $0.headers["if-none-match"] } == ["\"orig\"", nil])
    }

    @Test(arguments: [([("ETag", "\"orig\"")], true), ([("ETag", "W/\"orig\"")], true), ([("ETag", "\"OTHER\"")], false),
                      ([("ETag", "W/\"OTHER\"")], false), ([("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")], false), ([], true)])
    func a304SelectsTheStoredResponseByItsValidator(_ validators: [(String, String)], _ selected: Bool) {
        let stored = CacheEntry(status: 200, headers: [("ETag", "\"orig\"")], body: [], requestTime: Date(), responseTime: Date())
        let notModified = CacheEntry(status: 304, headers: HTTPHeaders(validators), body: [], requestTime: Date(), responseTime: Date())
        #expect(Cache.selects(notModified, stored) == selected)
    }

    @Test func a304ToAnUnconditionalRequestIsAFailureNotAnAnswer() async throws {
        let h = try SharedHarness()
        h.origin.reply(.init(status: 304, headers: [("ETag", "\"x\"")], body: ""))
        await #expect(throws: CacheFailure.self) { try await h.send("GET", "/u") }
        // Forwarded as it is (another method): a 304 to a request without a condition likewise.
        await #expect(throws: CacheFailure.self) { try await h.send("POST", "/u", body: "x") }
        // With the client's own condition, a forwarded request's 304 is its answer.
        #expect(try await h.send("POST", "/u", [("If-None-Match", "\"x\"")], body: "x").entry.status == 304)
    }
}
