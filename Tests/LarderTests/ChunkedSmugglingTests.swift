import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings
import Bodies

/// Chunked request bodies on a pass-through route as an attacker sends them: whatever the
/// framing tries, the origin gets exactly one request whose body is the decoded content with
/// its length, or nothing at all.
@Suite(.timeLimit(.minutes(1)))
struct ChunkedSmugglingTests {
    typealias Upload = UploadStreamingTests

    /// Sends `head` and `body` on a new connection; the answer, and whether the origin was asked.
    static func send(_ head: String, _ body: [UInt8], origin: Upload.Origin, port: Int) async throws -> TestResponse {
        let client = try TestClient(port: port, timeout: .seconds(15))
        try client.send(head)
        let sending = Task { try await client.sendOffPool(body) }
        let response = try await client.readResponse()
        _ = try? await sending.value
        return response
    }

    static let chunkedHead = "POST /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// RFC 9112 §7.1.1: chunk extensions are limited like any other part of a request. One
    /// byte of content per chunk with a 1,000-byte extension would make a 64 MiB limit take
    /// 64 GB from the wire: past 16 KiB of extensions in all, the request is 400 and the
    /// origin is never asked (as Node.js does since CVE-2024-22019).
    @Test func chunkExtensionsPast16KiBAre400() async throws {
        let origin = try Upload.Origin(lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let padding = ";x=" + String(repeating: "a", count: 1000)
            var body: [UInt8] = []
            for _ in 0..<40 { body += Array("1\(padding)\r\nb\r\n".utf8) }
            body += Array("0\r\n\r\n".utf8)
            let response = try await Self.send(Self.chunkedHead, body, origin: origin, port: larder.port)
            #expect(response.status == 400, "\(response.status) \(response.text)")
            #expect(origin.server.connectionsAccepted == 0)
            // A few short extensions are fine.
            let fine = ChunkedUploadTests.chunked(Array(Upload.body.prefix(4096)), size: 512, extensions: ";sig=abc")
            let answered = try await Self.send(Self.chunkedHead, fine, origin: origin, port: larder.port)
            #expect(answered.status == 200 && answered.text == "4096 same")
        }
    }

    /// Trailer fields never reach the origin (a `Content-Length` or `Transfer-Encoding` among
    /// them least of all), and bytes in a chunk that look like the end of the body and a
    /// second request are content: the origin reads one request, with their length.
    @Test func trailersAndARequestInsideTheContentReachTheOriginAsContent() async throws {
        let smuggled = Array("0\r\n\r\nGET /admin HTTP/1.1\r\nHost: origin\r\n\r\n".utf8)
        let origin = try Upload.Origin(expected: smuggled, lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let body = ChunkedUploadTests.chunked(smuggled, size: 7, trailer: "Content-Length: 0\r\nTransfer-Encoding: chunked\r\nX-Smuggled: 1\r\n")
            let response = try await Self.send(Self.chunkedHead, body, origin: origin, port: larder.port)
            #expect(response.status == 200 && response.text == "\(smuggled.count) same", "\(response.status) \(response.text)")
            #expect(origin.server.connectionsAccepted == 1 && origin.chunked == 0)
        }
    }

    /// Framings that two parsers could read two ways are refused before the origin is asked:
    /// both a length and chunked, chunked not last or twice, a size of 15 hex digits (past
    /// any limit), a bare LF in a size line, and chunk data that overruns its size.
    @Test(arguments: [
        ("Content-Length: 5\r\nTransfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked, identity", "5\r\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked", "fffffffffffffff\r\nhello\r\n0\r\n\r\n", 413),
        ("Transfer-Encoding: chunked", "5\nhello\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked", "3\r\nhello\r\n0\r\n\r\n", 400),
    ])
    func ambiguousFramingIsRefusedBeforeTheOrigin(fields: String, body: String, status: Int) async throws {
        let origin = try Upload.Origin(lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let head = "POST /up/file HTTP/1.1\r\nHost: larder\r\n\(fields)\r\n\r\n"
            let response = try await Self.send(head, Array(body.utf8), origin: origin, port: larder.port)
            #expect(response.status == status, "\(response.status) \(response.text)")
            #expect(response.header("connection") == "close")
            #expect(origin.server.connectionsAccepted == 0)
        }
    }
}
