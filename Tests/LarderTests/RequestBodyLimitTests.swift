import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// `--max-request-body`: an upload up to the limit reaches a pass-through route's origin
/// whole; a larger one is refused with 413 problem+json before its body is read.
@Suite(.timeLimit(.minutes(1)))
struct RequestBodyLimitTests {
    @Test func anUploadUpToTheLimitReachesTheOriginWholeAndALargerOneIs413() async throws {
        let origin = try TestOrigin(maxBodyBytes: 8 << 20) { request in HTTPResponse(status: 200, body: "\(request.body.count)") }
        let upload = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        try await withLarder({ settings in
            settings.routes = [RouteMount("/up=\(origin.url)")!]
            settings.maxRequestBody = 3 << 20
        }) { h in
            let client = try TestClient(port: h.port)
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(upload.count)\r\n\r\n")
            try client.send(upload)
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(upload.count)")
            #expect(origin.requests.last?.body == upload)

            let refused = try TestClient(port: h.port)
            try refused.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \((3 << 20) + 1)\r\n\r\n")
            let tooLarge = try await refused.readResponse()
            #expect(tooLarge.status == 413 && tooLarge.header("Content-Type") == "application/problem+json")
            #expect(origin.requests.count == 1)
        }
        await origin.stop()
    }

    /// 1 MiB unless set: the same 2 MiB upload is refused, on a chunked body as well.
    @Test func theDefaultIsOneMebibyteChunkedBodiesIncluded() async throws {
        #expect(ServeSettings().maxRequestBody == 1 << 20)
        #expect(try ServeSettings.resolve(flags: ["max.request.body": "64MiB"], environment: [:]).serverConfiguration.maxBodyBytes == 64 << 20)
        let origin = try TestOrigin(maxBodyBytes: 8 << 20)
        try await withLarder({ settings in settings.routes = [RouteMount("/up=\(origin.url)")!] }) { h in
            let client = try TestClient(port: h.port)
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
            try client.send("100000\r\n")
            try client.send(chunk)
            try client.send("\r\n100000\r\n")
            let tooLarge = try await client.readResponse()
            #expect(tooLarge.status == 413)
            #expect(origin.requests.isEmpty)
        }
        await origin.stop()
    }
}
