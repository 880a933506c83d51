import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A pass-through route answers ranges of what it relays itself, and says so: every 200 it
/// sends (miss, memory hit, disk hit, HEAD) and every 206 carries exactly one
/// `Accept-Ranges: bytes`, whatever the origin said about its own ranges.
@Suite(.timeLimit(.minutes(1)))
struct AcceptRangesTests {
    @Test(arguments: [nil, "none", "bytes"])
    func storedAnswersAdvertiseByteRanges(origin said: String?) async throws {
        let origin = try TestOrigin { request in
            if request.target.hasSuffix("/missing") {
                return HTTPResponse(status: 404, headers: HTTPHeaders([("Cache-Control", "max-age=60")]), body: "no")
            }
            var fields = [("Cache-Control", "max-age=60"), ("Content-Type", "text/plain")]
            if let said { fields.append(("Accept-Ranges", said)) }
            return HTTPResponse(status: 200, headers: HTTPHeaders(fields), body: "hello, world")
        }
        let cache = FaultSuiteTests.freshDirectory()
        let configure: (inout ServeSettings) -> Void = { $0.routes = [RouteMount("/o=\(origin.url)")!] }
        try await withLarder(cacheDirectory: cache, configure) { larder in
            let miss = try await larder.get("/o/doc")
            #expect(miss.header("Cache-Status")?.hasSuffix("stored") == true)
            let hit = try await larder.get("/o/doc")
            #expect(hit.header("Cache-Status")?.hasSuffix("detail=memory") == true)
            let head = try await larder.get("/o/doc", method: "HEAD")
            let part = try await larder.get("/o/doc", headers: ["Range: bytes=7-"])
            #expect(part.status == 206 && part.text == "world")
            for response in [miss, hit, head, part] {
                #expect(response.headerValues("Accept-Ranges") == ["bytes"], "\(response.status): \(response.headerValues("Accept-Ranges"))")
            }
            // Not a representation ranges apply to: nothing is claimed.
            let missing = try await larder.get("/o/missing")
            #expect(missing.status == 404 && missing.headerValues("Accept-Ranges").isEmpty)
        }
        // Rendered again from the disk entry after a restart: the same field.
        try await withLarder(cacheDirectory: cache, configure) { larder in
            let fromDisk = try await larder.get("/o/doc")
            #expect(fromDisk.header("Cache-Status")?.hasSuffix("detail=disk") == true)
            #expect(fromDisk.headerValues("Accept-Ranges") == ["bytes"])
        }
        #expect(origin.requests.count == 2)
        await origin.stop()
        try? FileManager.default.removeItem(atPath: cache)
    }
}
