#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A cache directory on a file system smaller than the disk budget says (a full disk, or
/// another tenant filling it): a large answer that cannot be spooled whole ends short for
/// its client (never a hang), its file goes, and Larder goes on answering. Runs where a
/// tmpfs can be mounted (as root).
@Suite(.timeLimit(.minutes(1)))
struct FullDiskSpoolTests {
    @Test(.enabled(if: getuid() == 0)) func aDiskThatFillsCutsTheAnswerShortAndFreesItsFile() async throws {
        let directory = FaultSuiteTests.freshDirectory()
        try #require(mount("tmpfs", directory, "tmpfs", 0, "size=16m") == 0, "mount: errno \(errno)")
        defer {
            unmountTmpfs(at: directory)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let size = 30 << 20
        let body = patternBytes(size)
        let origin = try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]),
                         body: request.path.hasSuffix("/big") ? body : Array("small".utf8))
        }
        try await withLarder(cacheDirectory: directory, {
            SpoolBudgetTests.route(origin.url, into: &$0)
            $0.diskLimit = 64 << 20
        }) { larder in
            let client = try TestClient(port: larder.port)
            try client.send("GET /b/big HTTP/1.1\r\nHost: larder\r\n\r\n")
            #expect(await client.waitForClose(within: .seconds(30)))
            let received = try await client.peek(atLeast: Int.max)
            #expect(StreamingTests.bodyBytes(received).count < size)
            var free = 0
            for _ in 0..<100 {
                var info = statvfs()
                free = statvfs(directory, &info) == 0 ? Int(info.f_bavail) * Int(info.f_frsize) : 0
                if free >= 12 << 20 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(free >= 12 << 20, "\(free >> 20) MiB free")
            let small = try await larder.get("/b/small")
            #expect(small.status == 200 && small.body == Array("small".utf8))
        }
        await origin.stop()
    }
}
