import HTTPCore
import Bodies
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPServer
import Synchronization
import Testing
import TestSupport
@testable import Larder
import Locking
@testable import Settings

/// The forwarding rules of pass-through routes against hostile clients and broken origins:
/// paths cannot escape their prefix, a body changes what a GET means, HEAD never waits for
/// a body, and an origin's malformed head is neither relayed nor stored.
@Suite(.timeLimit(.minutes(1))) struct ForwardingRulesTests {
    /// A raw origin that records each request head and answers `reply` (then closes).
    final class Recorder: Sendable {
        private final class Log: Sendable {
            let heads = Locked<[[UInt8]]>([])
        }
        private let log = Log()
        let server: RawServer
        init(reply: String) throws {
            let log = log
            server = try RawServer { fd, _ in
                log.heads.withLock { $0.append(RawServer.readHeadBytes(fd)) }
                RawServer.send(fd, reply)
            }
        }
        var heads: [[UInt8]] { log.heads.withLock { $0 } }
        var requestLines: [String] {
            heads.map { String(decoding: $0, as: UTF8.self).components(separatedBy: "\r\n")[0] }
        }
        var count: Int { heads.count }
    }

    static let ok = "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"

    @Test func dotSegmentsCannotEscapeTheRoutePrefix() async throws {
        let origin = try Recorder(reply: Self.ok)
        defer { origin.server.stop() }
        try await withLarder({ $0.routes = [RouteMount("/public=http://127.0.0.1:\(origin.server.port)/internal/public")!] }) { larder in
            let escape = try await larder.get("/public/../../admin/secret")
            #expect(escape.status == 400)
            let encoded = try await larder.get("/public/%2E%2E/%2e%2e/admin")
            #expect(encoded.status == 400)
            // A half escape could become a new one once its neighbour is decoded (`%2%45` → `%2E`).
            let doubled = try await larder.get("/public/%2%45%2%45/%2%45%2%45/admin")
            #expect(doubled.status == 400)
            let inside = try await larder.get("/public/a/../b%41/./c")
            #expect(inside.status == 200)
            let sibling = try await larder.get("/public/../other")
            #expect(sibling.status == 404)
            // What an origin could read as a separator Larder never matched is refused: an
            // encoded / or \, a backslash, a dot segment with parameters (Tomcat's `..;`).
            for ambiguous in ["/public/..%2Fadmin", "/public/..%2fadmin", "/public/..%5Cadmin", "/public/..\\admin",
                              "/public/..;/admin", "/public/.;x/admin"] {
                let refused = try await larder.get(ambiguous)
                #expect(refused.status == 400, "\(ambiguous)")
            }
            #expect(try await larder.get("/public/a;b/c?x=%2F").status == 200)
            #expect(origin.requestLines == ["GET /internal/public/public/bA/c HTTP/1.1", "GET /internal/public/public/a;b/c?x=%2F HTTP/1.1"])
        }
    }

    @Test func aGetWithContentIsForwardedButNeverCachedOrServedFromCache() async throws {
        let origin = try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]),
                         body: "for [" + String(decoding: request.body.inMemory ?? [], as: UTF8.self) + "]")
        }
        try await withRoutes(origin) { larder in
            let fat = try await send(larder, "GET /r/x HTTP/1.1\r\nHost: l\r\nContent-Length: 5\r\n\r\nquery")
            #expect(fat.text == "for [query]")
            #expect(fat.header("cache-status") == "larder; fwd=request; fwd-status=200; detail=content")
            let plain = try await larder.get("/r/x")
            #expect(plain.text == "for []")
            #expect(plain.header("cache-status") == "larder; fwd=miss; fwd-status=200; stored")
            let again = try await send(larder, "GET /r/x HTTP/1.1\r\nHost: l\r\nContent-Length: 5\r\n\r\nother")
            #expect(again.text == "for [other]")
            #expect(try await larder.get("/r/x").text == "for []")
            #expect(origin.requests.count == 3)
        }
    }

    @Test func aGetWithAnEmptyBodyIsAnOrdinaryGet() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "x") }
        try await withRoutes(origin) { larder in
            _ = try await send(larder, "GET /r/y HTTP/1.1\r\nHost: l\r\nContent-Length: 0\r\n\r\n")
            let hit = try await larder.get("/r/y")
            #expect(hit.header("cache-status")?.hasPrefix("larder; hit") == true)
        }
    }

    @Test func headWithAZeroContentLengthIsForwardedAsHeadWithoutWaiting() async throws {
        let origin = try Recorder(reply: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n")
        defer { origin.server.stop() }
        try await withLarder({
            $0.routes = [RouteMount("/r=http://127.0.0.1:\(origin.server.port)")!]
            $0.upstreamTimeout = .seconds(30)  // what waiting for a body would cost
        }) { larder in
            let started = ContinuousClock.now
            let client = try TestClient(port: larder.port)
            try client.send("HEAD /r/h HTTP/1.1\r\nHost: l\r\nContent-Length: 0\r\n\r\n")
            let response = try await client.readResponse(bodyless: true)
            #expect(response.status == 200)
            #expect(response.header("content-length") == "10")
            #expect(ContinuousClock.now - started < .seconds(15))  // half the upstream timeout: room for a loaded machine
            #expect(origin.requestLines == ["HEAD /r/h HTTP/1.1"])
        }
    }

    @Test func fieldOctetsAndEmptyValuesReachTheOriginUnchanged() async throws {
        let origin = try Recorder(reply: Self.ok)
        defer { origin.server.stop() }
        try await withLarder({ $0.routes = [RouteMount("/r=http://127.0.0.1:\(origin.server.port)")!] }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send(Array("GET /r/o HTTP/1.1\r\nHost: l\r\nX-Latin: caf".utf8) + [0xE9, 0xFF, 0x80]
                + Array("\r\nX-Empty:\r\n\r\n".utf8))
            _ = try await client.readResponse()
            let head = try #require(origin.heads.first)
            #expect(TestClient.find(Array("X-Latin: caf".utf8) + [0xE9, 0xFF, 0x80, 0x0D, 0x0A], in: head) != nil)
            #expect(TestClient.find(Array("\r\nX-Empty:".utf8), in: head) != nil)
        }
    }

    /// Origin answers whose head is malformed: each is a 502, relayed to no one, stored nowhere.
    static let malformed: [(String, String)] = [
        ("bare CR in a value", "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nX-Bad: a\rb\r\nContent-Length: 2\r\n\r\nok"),
        ("a field name with a space", "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nBad Name: 1\r\nContent-Length: 2\r\n\r\nok"),
        ("conflicting Content-Length", "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nabcde"),
        ("a NUL in a value", "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nX-Nul: a\u{0}b\r\nContent-Length: 2\r\n\r\nok"),
        ("status 999", "HTTP/1.1 999 Odd\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\n\r\nok"),
        ("status 600", "HTTP/1.1 600 Odd\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\n\r\nok"),
        ("a final 101", "HTTP/1.1 101 Switching Protocols\r\nCache-Control: max-age=60\r\n\r\n"),
    ]

    @Test(arguments: malformed)
    func aMalformedOriginHeadIs502AndNotStored(_ example: (String, String)) async throws {
        let origin = try Recorder(reply: example.1 + "")
        defer { origin.server.stop() }
        try await withLarder({
            $0.routes = [RouteMount("/r=http://127.0.0.1:\(origin.server.port)")!]
            $0.upstreamTimeout = .seconds(2)
        }) { larder in
            let first = try await larder.get("/r/m")
            #expect(first.status == 502, "\(example.0)")
            #expect(first.header("content-type") == "application/problem+json", "\(example.0)")
            let second = try await larder.get("/r/m")
            #expect(second.status == 502, "\(example.0)")
            #expect(origin.count == 2, "\(example.0): nothing was stored")
        }
    }

    @Test func obsFoldIsReplacedByASpace() async throws {
        let origin = try Recorder(reply: "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nX-Folded: one\r\n  two\r\n\tthree\r\n"
            + "Content-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.server.stop() }
        try await withLarder({ $0.routes = [RouteMount("/r=http://127.0.0.1:\(origin.server.port)")!] }) { larder in
            let first = try await larder.get("/r/f")
            #expect(first.header("x-folded") == "one two three")
            let hit = try await larder.get("/r/f")
            #expect(hit.header("x-folded") == "one two three")
            #expect(hit.header("cache-status")?.hasPrefix("larder; hit") == true)
        }
    }

    @Test func aSuffixRangeLongerThanTheBodySelectsAllOfIt() async throws {
        let origin = try TestOrigin { _ in HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "hello") }
        try await withRoutes(origin) { larder in
            _ = try await larder.get("/r/range")
            for range in ["bytes=-99999999999999999999", "bytes=-6"] {
                let response = try await larder.get("/r/range", headers: ["Range: \(range)"])
                #expect(response.status == 206, "\(range)")
                #expect(response.text == "hello", "\(range)")
                #expect(response.header("content-range") == "bytes 0-4/5", "\(range)")
            }
        }
    }

    /// RFC 9110 §15.2: a gateway passes on the informational responses of what it forwards
    /// (103 Early Hints), to HTTP/1.1 clients; a stored answer served later carries none.
    @Test func earlyHintsArePassedOnAndNeverStored() async throws {
        let origin = try Recorder(reply: "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                                  + "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        defer { origin.server.stop() }
        try await withLarder({ $0.routes = [RouteMount("/r=http://127.0.0.1:\(origin.server.port)")!] }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /r/page HTTP/1.1\r\nHost: l\r\n\r\n")
            let hints = try await client.readResponse(bodyless: true)
            #expect(hints.status == 103 && hints.header("link") == "</s.css>; rel=preload")
            let final = try await client.readResponse()
            #expect(final.status == 200 && final.text == "ok" && final.header("link") == nil)
            let hit = try await send(larder, "GET /r/page HTTP/1.1\r\nHost: l\r\n\r\n")
            #expect(hit.status == 200 && hit.header("cache-status")?.hasPrefix("larder; hit") == true)
            // An HTTP/1.0 client is sent no informational response.
            let old = try await send(larder, "GET /r/other HTTP/1.0\r\nHost: l\r\n\r\n")
            #expect(old.status == 200 && old.text == "ok")
        }
    }

    /// httpbin's `/range/N` sends `Content-Range` on a 200: a 206 made from that stored
    /// answer states only the range it serves.
    @Test func aPartialAnswerHasExactlyOneContentRange() async throws {
        let body = String(repeating: "abcdefghij", count: 100)
        let origin = try TestOrigin { _ in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-999/1000")]), body: body)
        }
        try await withRoutes(origin) { larder in
            let whole = try await larder.get("/r/range/1000")
            #expect(whole.status == 200 && whole.body.count == 1000)
            for _ in 0..<2 {  // from the fetch's stored answer in memory, then again
                let part = try await larder.get("/r/range/1000", headers: ["Range: bytes=0-9"])
                #expect(part.status == 206 && part.text == "abcdefghij")
                #expect(part.headerValues("content-range") == ["bytes 0-9/1000"])
            }
        }
    }

    // MARK: Helpers

    private func withRoutes(_ origin: TestOrigin, _ body: (ServiceHarness) async throws -> Void) async throws {
        do {
            try await withLarder({ $0.routes = [RouteMount("/r=\(origin.url)")!] }, body)
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }

    private func send(_ larder: ServiceHarness, _ raw: String) async throws -> TestResponse {
        let client = try TestClient(port: larder.port)
        try client.send(raw)
        return try await client.readResponse()
    }
}
