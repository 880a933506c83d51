import Foundation
import Bodies
import Caching
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// Request bodies past 1 MiB wait in unnamed files in the cache directory while they are
/// sent on, and those files count against `disk-limit` as answers being fetched do: uploads
/// together cannot fill the directory past the budget (nginx's client_body_temp_path has no
/// bound of its own). A file takes its room as it is written, so a head alone evicts no
/// entry; a body longer than the budget is refused at its head (413), one that finds the
/// room taken when it does (503 problem); the room comes back when an upload ends.
@Suite(.timeLimit(.minutes(2)))
struct UploadSpoolBudgetTests {
    static let budget = 8 << 20

    @Test func uploadsTogetherStayWithinTheDiskBudget() async throws {
        let origin = try TestOrigin(maxBodyBytes: 16 << 20) { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "no-store")]), body: Array("\(request.body.count)".utf8))
        }
        try await withLarder({
            $0.routes = [RouteMount("/b=\(origin.url)")!]
            $0.diskLimit = Self.budget
        }) { larder in
            let room = try #require(larder.service.routes.now?.base.disk.spoolRoom)
            // Longer than the whole budget: refused at its head, taking nothing.
            let tooLong = try TestClient(port: larder.port)
            try tooLong.send("PUT /b/long HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Self.budget + 1)\r\n\r\n")
            let long = try await tooLong.readResponse()
            #expect(long.status == 413 && long.header("content-type") == "application/problem+json", "\(long.status)")
            #expect(room.taken == 0)

            // A 6 MiB upload, all but its last byte sent: its file holds 6 MiB of the 8.
            let held = patternBytes(6 << 20)
            let first = try TestClient(port: larder.port)
            try first.send("PUT /b/first HTTP/1.1\r\nHost: larder\r\nContent-Length: \(held.count)\r\n\r\n")
            try await first.sendOffPool(Array(held.dropLast()))
            #expect(await eventually { room.taken == 6 << 20 }, "\(room.taken) bytes taken")

            // A 4 MiB one finds the room taken once its file passes 2 MiB: a 503 problem is
            // its answer, and nothing of it reaches the origin whole.
            let refused = try TestClient(port: larder.port)
            try refused.send("PUT /b/refused HTTP/1.1\r\nHost: larder\r\nContent-Length: \(4 << 20)\r\n\r\n")
            try? await refused.sendOffPool(patternBytes(4 << 20))
            let answer = try await refused.readResponse()
            #expect(answer.status == 503)
            #expect(answer.header("content-type") == "application/problem+json")
            #expect(answer.text.contains("disk budget"), "\(answer.text)")
            #expect(!origin.requests.contains { $0.path.hasSuffix("refused") })
            #expect(room.taken <= Self.budget)

            // The first goes on whole, and its room comes back once its file is let go.
            try await first.sendOffPool(Array(held.suffix(1)))
            let sent = try await first.readResponse()
            #expect(sent.status == 200 && sent.text == "\(held.count)", "\(sent.status) \(sent.text)")
            #expect(await eventually { room.taken == 0 }, "\(room.taken) bytes still taken")

            // Uploads of half the budget, one after another on one connection, each fit (the
            // room of the one before comes back a moment after its answer, when its file closes).
            let next = try TestClient(port: larder.port)
            for n in 0..<5 {
                try next.send("PUT /b/next\(n) HTTP/1.1\r\nHost: larder\r\nContent-Length: \(Self.budget / 2)\r\n\r\n")
                try await next.sendOffPool(patternBytes(Self.budget / 2))
                let fits = try await next.readResponse()
                #expect(fits.status == 200 && fits.text == "\(Self.budget / 2)", "upload \(n): \(fits.status) \(fits.text)")
            }
        }
        await origin.stop()
    }
}
