import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings
import Bodies

/// A chunked request body on a pass-through route is read whole before it is forwarded (in
/// memory up to 1 MiB, past that in a spool file, up to the route's `max-request-body`),
/// then sent with its `Content-Length`: an origin that reads bodies only by their length
/// (Python's http.server) takes it, as it does from nginx.
@Suite(.timeLimit(.minutes(1)))
struct ChunkedUploadTests {
    typealias Upload = UploadStreamingTests

    /// `body` as chunks of `size` bytes (the last shorter), with the last chunk and `trailer`.
    static func chunked(_ body: [UInt8], size: Int, extensions: String = "", trailer: String = "") -> [UInt8] {
        var framed: [UInt8] = []
        var at = 0
        while at < body.count {
            let n = min(size, body.count - at)
            framed += Array("\(String(n, radix: 16))\(extensions)\r\n".utf8) + body[at..<(at + n)] + Array("\r\n".utf8)
            at += n
        }
        return framed + Array("0\r\n\(trailer)\r\n".utf8)
    }

    /// Small (held in memory) and large (spooled) chunked bodies, with chunk extensions and
    /// a trailer, reach an origin that refuses chunked requests: they go with their length.
    @Test(arguments: [11, 300 << 10, 4 << 20])
    func aChunkedBodyGoesToTheOriginWithItsLength(size: Int) async throws {
        let body = patternBytes(size)
        let origin = try Upload.Origin(expected: body, lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await client.sendOffPool(Self.chunked(body, size: 64 << 10, extensions: ";name=value", trailer: "X-Checksum: 1\r\n"))
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(size) same", "\(response.status) \(response.text)")
            #expect(origin.chunked == 0)
        }
    }

    /// Nothing goes to the origin before the last chunk: half a body sent, then a pause,
    /// and the origin has not been asked; the rest, and it gets all of it.
    @Test func theOriginIsAskedOnlyOnceTheBodyIsWhole() async throws {
        let origin = try Upload.Origin(lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder(Upload.route(origin)) { larder in
            let framed = Self.chunked(Upload.body, size: 1 << 20)
            let half = framed.count / 2
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("PUT /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n")
            try await client.sendOffPool(Array(framed[..<half]))
            try await Task.sleep(for: .milliseconds(300))
            #expect(origin.server.connectionsAccepted == 0)
            try await client.sendOffPool(Array(framed[half...]))
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(Upload.size) same")
        }
    }

    /// A chunked body past the route's `max-request-body` is 413 and never reaches the
    /// origin, however it is cut into chunks.
    @Test(arguments: [64 << 10, 3 << 20])
    func aChunkedBodyPastTheRoutesLimitIs413(chunkSize: Int) async throws {
        let origin = try Upload.Origin(lengthOnly: true)
        defer { origin.server.stop() }
        try await withLarder({ settings in
            var route = RouteMount("/up=\(origin.url)")!
            route.rules.maxRequestBody = 2 << 20
            settings.routes = [route]
        }) { larder in
            let client = try TestClient(port: larder.port, timeout: .seconds(20))
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n")
            let sending = Task { try await client.sendOffPool(Self.chunked(Upload.body, size: chunkSize)) }
            let response = try await client.readResponse()
            #expect(response.status == 413)
            #expect(response.header("connection") == "close")
            _ = try? await sending.value
            #expect(origin.server.connectionsAccepted == 0)
        }
    }
}
