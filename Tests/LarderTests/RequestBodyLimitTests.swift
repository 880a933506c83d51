import HTTPCore
import Bodies
import Foundation
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Request body limits: `--max-request-body` on built-in routes (1 MiB), a pass-through
/// route's own `max-request-body` (64 MiB unless set). An upload up to the limit reaches the
/// origin whole; a larger one is refused with 413 problem+json before its body is read.
@Suite(.timeLimit(.minutes(1)))
struct RequestBodyLimitTests {
    @Test func anUploadUpToTheLimitReachesTheOriginWholeAndALargerOneIs413() async throws {
        let origin = try TestOrigin(maxBodyBytes: 8 << 20) { request in HTTPResponse(status: 200, body: "\(request.body.count)") }
        let upload = (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        var uploads = RouteMount("/up=\(origin.url)")!
        uploads.rules.maxRequestBody = 3 << 20
        try await withLarder({ settings in settings.routes = [uploads] }) { h in
            let client = try TestClient(port: h.port)
            try client.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \(upload.count)\r\n\r\n")
            try await client.sendOffPool(upload)
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(upload.count)")
            #expect(origin.requests.last?.body.inMemory == upload)

            let refused = try TestClient(port: h.port)
            try refused.send("POST /up/file HTTP/1.1\r\nHost: larder\r\nContent-Length: \((3 << 20) + 1)\r\n\r\n")
            let tooLarge = try await refused.readResponse()
            #expect(tooLarge.status == 413 && tooLarge.header("Content-Type") == "application/problem+json")
            #expect(origin.requests.count == 1)
        }
        await origin.stop()
    }

    /// A 64 MiB upload, on a route whose `max-request-body` allows it, reaches the origin
    /// byte for byte (relayed as it arrives, through a spool file).
    @Test func aSixtyFourMebibyteUploadReachesTheOriginIntact() async throws {
        let origin = try TestOrigin(maxBodyBytes: 64 << 20) { request in HTTPResponse(status: 200, body: "\(request.body.count)") }
        let upload = patternBytes(64 << 20)
        try await withLarder({ settings in settings.routes = [RouteMount("/up=\(origin.url)")!] }) { h in
            let client = try TestClient(port: h.port, timeout: .seconds(30))
            try client.send("PUT /up/big HTTP/1.1\r\nHost: larder\r\nContent-Length: \(upload.count)\r\n\r\n")
            try await client.sendOffPool(upload)
            let response = try await client.readResponse()
            #expect(response.status == 200 && response.text == "\(upload.count)")
            #expect(sameBytes(origin.requests.last?.body.inMemory ?? [], upload))
        }
        await origin.stop()
    }

    /// A pass-through route's own `max-request-body` holds on that route only; the built-in
    /// routes keep the top-level limit; read from a configuration file with its line when bad.
    @Test func aRouteTakesLargerUploadsThanTheRestWhenItsLimitSaysSo() async throws {
        let origin = try TestOrigin(maxBodyBytes: 8 << 20) { request in HTTPResponse(status: 200, body: "\(request.body.count)") }
        var uploads = RouteMount("/up=\(origin.url)")!
        uploads.rules.maxRequestBody = 1 << 20
        try await withLarder({ settings in settings.routes = [uploads, RouteMount("/=\(origin.url)")!] }) { h in
            for (path, status) in [("/elsewhere", 200), ("/up/file", 413), ("/weather", 413)] {
                let client = try TestClient(port: h.port)
                try client.send("POST \(path) HTTP/1.1\r\nHost: larder\r\nContent-Length: \(2 << 20)\r\n\r\n")
                if status == 200 { try await client.sendOffPool([UInt8](repeating: 0x75, count: 2 << 20)) }
                #expect(try await client.readResponse().status == status, "\(path)")
            }
            #expect(origin.requests.map(\.body.count) == [2 << 20])
        }
        await origin.stop()
        let (path, lines) = try await ConfigFixture.problems(
            "routes:\n  /up:\n    origin: http://o\n    max-request-body: 64MiB\n  /bad:\n    origin: http://o\n    max-request-body: 2GiB\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("\(path):7: routes./bad.max-request-body") && lines[0].contains("1B to 1GiB"), "\(lines)")
    }

    /// 1 MiB on built-in routes unless set, 64 MiB on a pass-through route: the same chunked
    /// 2 MiB upload is refused on the one and reaches the origin whole through the other.
    @Test func theDefaultsAreOneMebibyteBuiltInAndSixtyFourPassThroughChunkedBodiesIncluded() async throws {
        #expect(ServeSettings().maxRequestBody == 1 << 20 && ForwardingRules.defaultMaxRequestBody == 64 << 20)
        #expect(try ServeSettings.resolve(flags: ["max.request.body": "64MiB"], environment: [:]).serverConfiguration.maxBodyBytes == 64 << 20)
        let origin = try TestOrigin(maxBodyBytes: 8 << 20)
        try await withLarder({ settings in settings.routes = [RouteMount("/up=\(origin.url)")!] }) { h in
            let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
            for (path, status) in [("/weather", 413), ("/up/file", 200)] {
                let client = try TestClient(port: h.port)
                try client.send("POST \(path) HTTP/1.1\r\nHost: larder\r\nTransfer-Encoding: chunked\r\n\r\n")
                try client.send("100000\r\n")
                try await client.sendOffPool(chunk)
                try client.send("\r\n100000\r\n")
                if status == 200 {
                    try await client.sendOffPool(chunk)
                    try client.send("\r\n0\r\n\r\n")
                }
                #expect(try await client.readResponse().status == status, "\(path)")
            }
            #expect(origin.requests.count == 1 && origin.requests.first?.body.inMemory == chunk + chunk)
        }
        await origin.stop()
    }
}
