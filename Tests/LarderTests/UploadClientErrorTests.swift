import Logging
import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A request body that goes wrong on the client's side (malformed chunked framing, a chunk
/// past the route's limit, a body that stops arriving or ends short while it streams on to
/// the origin) is the client's error: the client gets 400, 413 or 408 for that request (not
/// a 502), the connection closes after it, the origin's exchange is cut short (or never
/// begins), and nothing is counted against the origin.
@Suite(.timeLimit(.minutes(1)))
struct UploadClientErrorTests {
    typealias Upload = UploadStreamingTests

    /// Whether the origin's error and timeout counters are still at zero.
    static func originNotBlamed(_ larder: ServiceHarness) async throws -> Bool {
        let metrics = try await larder.get("/metrics").text
        let counted = metrics.split(separator: "\n").filter {
            $0.hasPrefix("larder_upstream_requests_total{upstream=\"http://127.0.0.1:")
                && ($0.contains("outcome=\"error\"") || $0.contains("outcome=\"timeout\""))
        }
        return counted.count == 2 && counted.allSatisfy { $0.hasSuffix("} 0") }
    }

    /// The next whole upload still goes through.
    static func nextUploadGoesThrough(_ larder: ServiceHarness) async throws -> Bool {
        let client = try TestClient(port: larder.port, timeout: .seconds(20))
        try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Upload.size)\r\n\r\n")
        try await client.sendOffPool(Upload.body)
        let response = try await client.readResponse()
        return response.status == 200 && response.text == "\(Upload.size) same"
    }

    /// A chunk-size line that is not one (`5 junk`, `0x5`, more hex digits than any size),
    /// or a chunk that takes the body past the route's 64 MiB, after a first chunk of 1 MiB:
    /// a chunked body is read whole before it goes on, so the origin is never asked.
    @Test(arguments: [("5 junk", 400), ("0x5", 400), ("fffffffffffffffff", 400), ("4000000", 413)])
    func aMalformedChunkIsTheClientsError(sizeLine: String, status: Int) async throws {
        let origin = try Upload.Origin()
        defer { origin.server.stop() }
        let log = RecordedLog()
        try await withLarder(logger: log.logger(), Upload.route(origin)) { larder in
            let first = 1 << 20
            let client = try TestClient(port: larder.port)
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n\(String(first, radix: 16))\r\n")
            try await client.sendOffPool(Array(Upload.body[..<first]) + Array("\r\n".utf8))
            try client.send("\(sizeLine)\r\n")
            let response = try await client.readResponse()
            #expect(response.status == status, "\(response.status) \(response.text)")
            #expect(response.header("content-type") == "application/problem+json")
            #expect(response.header("connection") == "close")
            #expect(await client.waitForClose(within: .seconds(5)))
            #expect(origin.server.connectionsAccepted == 0)
            #expect(try await Self.originNotBlamed(larder))
            #expect(log.messages(at: .warning).isEmpty && log.messages(at: .error).isEmpty)
            #expect(try await Self.nextUploadGoesThrough(larder))
        }
    }

    /// A body of known length that stops arriving halfway: the connection's 408 answers it
    /// (after the server's 10 s body timeout; the route's upstream timeout is longer).
    @Test func aBodyThatStopsArrivingIsAnsweredWithTheTimeout() async throws {
        let origin = try Upload.Origin()
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("PUT /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Upload.size)\r\n\r\n")
            try await client.sendOffPool(Array(Upload.body[..<Upload.first]))
            #expect(try await Upload.wait(for: origin, toReceive: Upload.first) == Upload.first)
            let response = try await client.readResponse()
            #expect(response.status == 408, "\(response.status) \(response.text)")
            #expect(response.header("connection") == "close")
            #expect(await client.waitForClose(within: .seconds(5)))
            for _ in 0..<500 where origin.cutShort == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(origin.cutShort == 1)
            #expect(try await Self.originNotBlamed(larder))
        }
    }

    /// A body that stops arriving for longer than the route's timeout, shorter than the
    /// server's 10 s: the transfer gives up and answers 408, as the server's own timeout
    /// would. When that timeout comes later, the first 408 stays the request's only answer (a
    /// second followed it on the same connection) and the connection closes.
    @Test func aBodyStalledPastTheRoutesTimeoutGetsOneAnswer() async throws {
        let origin = try Upload.Origin()
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin, timeout: .seconds(2))) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("PUT /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Upload.size)\r\n\r\n")
            try await client.sendOffPool(Array(Upload.body[..<Upload.first]))
            let response = try await client.readResponse()
            #expect(response.status == 408, "\(response.status) \(response.text)")
            #expect(response.text.contains("stopped arriving"), "\(response.text)")
            #expect(await client.waitForClose(within: .seconds(15)))
            #expect(client.bufferedByteCount == 0, "\(client.bufferedByteCount) bytes after the answer")
        }
    }

    /// A client that shuts its side mid-body still reads the answer: 400, its body ended short.
    @Test func aBodyEndedShortByTheClientIsA400() async throws {
        let origin = try Upload.Origin()
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("PUT /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Upload.size)\r\n\r\n")
            try await client.sendOffPool(Array(Upload.body[..<Upload.first]))
            #expect(try await Upload.wait(for: origin, toReceive: Upload.first) == Upload.first)
            client.shutdownWrite()
            let response = try await client.readResponse()
            #expect(response.status == 400, "\(response.status) \(response.text)")
            #expect(try await Self.originNotBlamed(larder))
            #expect(try await Self.nextUploadGoesThrough(larder))
        }
    }
}
