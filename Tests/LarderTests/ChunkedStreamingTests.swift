import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings
import Bodies

/// Misses whose origin states no length (chunked): past the first MiB they are relayed as
/// the origin sends them, chunked to HTTP/1.1 clients and ended by the close for HTTP/1.0,
/// and stored, with their length, once whole. A real Larder in this process in front of an
/// origin that sends 2 MiB in chunks, then holds the rest back until the test has seen the
/// first part arrive (or 10 s pass).
@Suite(.timeLimit(.minutes(1)))
struct ChunkedStreamingTests {
    static let size = StreamingTests.size
    static let first = 2 << 20
    static let body = StreamingTests.body

    /// The held-back origin, chunked: 2 MiB first, past what Larder holds before streaming.
    static func origin(dropsMidBody: Bool = false) throws -> StreamingTests.Origin {
        try StreamingTests.Origin(dropsMidBody: dropsMidBody, chunked: true, first: first)
    }

    /// Sends a GET for `/s/chunked` and returns, once the first part has arrived (what a
    /// client reads of it: chunk framing included, or not), the head received.
    static func requestFirstPart(_ client: TestClient, version: String = "HTTP/1.1") async throws -> String {
        try client.send("GET /s/chunked \(version)\r\nHost: larder\r\n\r\n")
        let early = try await StreamingTests.read(client, bodyBytes: first)
        let end = TestClient.find([13, 10, 13, 10], in: early) ?? 0
        return String(decoding: early.prefix(end + 2), as: UTF8.self)
    }

    @Test func aChunkedMissIsRelayedAsItArrivesAndStoredWithItsLengthOnceWhole() async throws {
        let origin = try Self.origin()
        defer { origin.server.stop() }
        try await withLarder({ StreamingTests.route(origin.url, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            let head = try await Self.requestFirstPart(client)
            // The first part arrived while the origin still held the rest back.
            let heldBack = !origin.released
            #expect(heldBack)
            #expect(head.hasPrefix("HTTP/1.1 200 ") && head.contains("Transfer-Encoding: chunked\r\n") && !head.contains("Content-Length"))
            #expect(head.contains("Cache-Status: larder; fwd=miss; fwd-status=200\r\n"))
            origin.release()
            let response = try await client.readResponse()
            #expect(response.status == 200 && sameBytes(response.body, Self.body))
            // Once whole it is stored, and later answers state its length.
            var hit: TestResponse?
            for _ in 0..<50 where hit == nil {
                let again = try await larder.get("/s/chunked")
                if again.header("Cache-Status")?.hasPrefix("larder; hit") == true { hit = again } else { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(hit?.header("Content-Length") == "\(Self.size)" && sameBytes(hit?.body ?? [], Self.body))
            let heads = origin.heads
            #expect(heads == 1)
        }
    }

    /// Reading along one fetch, an HTTP/1.1 client reads it chunked and an HTTP/1.0 client
    /// as it is, ended by the connection's close; a `Range` is answered whole (no length yet).
    @Test func clientsReadingAlongEachGetItFramedForTheirVersion() async throws {
        let origin = try Self.origin()
        defer { origin.server.stop() }
        try await withLarder({ StreamingTests.route(origin.url, into: &$0) }) { larder in
            let current = try TestClient(port: larder.port), old = try TestClient(port: larder.port)
            let ranged = try TestClient(port: larder.port)
            _ = try await Self.requestFirstPart(current)
            let oldHead = try await Self.requestFirstPart(old, version: "HTTP/1.0")
            try ranged.send("GET /s/chunked HTTP/1.1\r\nHost: larder\r\nRange: bytes=0-9\r\n\r\n")
            #expect(oldHead.hasPrefix("HTTP/1.1 200 ") && oldHead.contains("Connection: close\r\n"))
            #expect(!oldHead.contains("Transfer-Encoding") && !oldHead.contains("Content-Length"))
            origin.release()
            let chunked = try await current.readResponse()
            #expect(chunked.status == 200 && sameBytes(chunked.body, Self.body))
            let whole = try await old.readResponse()
            #expect(whole.status == 200 && sameBytes(whole.body, Self.body))
            #expect(await old.waitForClose(within: .seconds(10)))
            let ranges = try await ranged.readResponse()
            #expect(ranges.status == 200 && ranges.body.count == Self.size)
            let heads = origin.heads
            #expect(heads == 1)
        }
    }

    /// The origin drops its connection mid-body: the client's chunked body ends without its
    /// last chunk (the connection closes), so it can tell; nothing is stored.
    @Test func anOriginDroppingMidBodyLeavesTheChunkedBodyUnfinished() async throws {
        let origin = try Self.origin(dropsMidBody: true)
        defer { origin.server.stop() }
        try await withLarder({ StreamingTests.route(origin.url, into: &$0) }) { larder in
            let client = try TestClient(port: larder.port)
            _ = try await Self.requestFirstPart(client)
            origin.release()
            await #expect(throws: TestClientError.self) { _ = try await client.readResponse() }
            // The next request reaches the origin again (its answer, dropped early this time,
            // may be a 502 or another body cut short).
            let next = try TestClient(port: larder.port)
            try next.send("GET /s/chunked HTTP/1.1\r\nHost: larder\r\n\r\n")
            for _ in 0..<200 where origin.heads < 2 { try await Task.sleep(for: .milliseconds(50)) }
            let heads = origin.heads
            #expect(heads == 2)
        }
    }
}
