import Foundation
import HTTPCore
import Bodies
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// The access line's `bytes` is the body that went to the client when the exchange ended
/// (nginx's `$body_bytes_sent`), not the length its head promised.
@Suite(.timeLimit(.minutes(1))) struct AccessBytesTests {
    static let size = 48 * 1024 * 1024

    /// The `bytes` of the first access line for `message`, waiting up to 10 s for it.
    static func bytes(_ log: RecordedLog, _ message: String) async throws -> Int? {
        for _ in 0..<200 {
            if let line = log.all.first(where: { $0.message == message }) { return line.metadata["bytes"].flatMap { Int($0) } }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    @Test func aClientThatLeavesEarlyIsLoggedWithWhatItWasSent() async throws {
        let body = [UInt8](repeating: 0x61, count: Self.size)
        let origin = try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "no-store")]),
                         body: request.path.hasSuffix("small") ? Array(body[..<100]) : body)
        }
        let log = RecordedLog()
        try await withLarder(logger: log.logger(), { $0.routes = [RouteMount("/files=\(origin.url)")!] }) { h in
            do {
                let client = try TestClient(port: h.port)
                try client.send("GET /files/big HTTP/1.1\r\nHost: l\r\n\r\n")
                let first = try await client.peek(atLeast: 64 * 1024)
                #expect(String(decoding: first.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
                withExtendedLifetime(client) {}
            }  // closed here with most of the body unread
            let sent = try #require(try await Self.bytes(log, "GET /files/big 200"))
            #expect(sent >= 64 * 1024 - 1024 && sent < Self.size / 2, "logged \(sent) of \(Self.size)")

            // Read whole, a large body is logged whole; a small one as ever.
            let whole = try await h.get("/files/big")
            #expect(whole.body.count == Self.size)
            for _ in 0..<200 where log.all.filter({ $0.message == "GET /files/big 200" }).count < 2 {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(log.all.filter { $0.message == "GET /files/big 200" }.compactMap { $0.metadata["bytes"].flatMap { Int($0) } }.last == Self.size)
            #expect(try await h.get("/files/small").body.count == 100)
            #expect(try await Self.bytes(log, "GET /files/small 200") == 100)
            #expect(try await h.get("/files/big", method: "HEAD").status == 200)
            #expect(try await Self.bytes(log, "HEAD /files/big 200") == 0)
        }
        await origin.stop()
    }
}
