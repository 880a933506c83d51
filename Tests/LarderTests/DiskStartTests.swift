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

/// What a restart finds in the cache directory, end to end: files that are not entries
/// Larder wrote must not cost the entries that are.
@Suite(.timeLimit(.minutes(1))) struct DiskStartTests {
    /// Answers a pass-through route stores, each its path in the body.
    static func origin() throws -> TestOrigin {
        try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: "entry \(request.target)")
        }
    }

    /// Waits until `/readyz` says the disk index is whole.
    static func waitForIndex(_ larder: ServiceHarness) async throws {
        for _ in 0..<200 {
            let ready = try await larder.get("/readyz")
            if !String(decoding: ready.body, as: UTF8.self).contains("loading") { return }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// A sparse file of 100 GB (no block allocated, no valid head) named like an entry, the
    /// newest file there: charged by its apparent size it evicted every entry at start.
    @Test func aSparseHugeFileNamedLikeAnEntryCostsTheStoredEntriesNothing() async throws {
        let origin = try Self.origin()
        let cache = FaultSuiteTests.freshDirectory()
        let paths = (0..<20).map { "/o/kept/\($0)" }
        let configure: (inout ServeSettings) -> Void = { settings in
            settings.routes = [RouteMount("/o=\(origin.url)")!]
            settings.diskLimit = 16 << 20
        }
        try await withLarder(cacheDirectory: cache, configure) { larder in
            for path in paths {
                let stored = try await larder.get(path)
                #expect(stored.header("Cache-Status")?.hasSuffix("stored") == true)
            }
        }
        #expect(FaultSuiteTests.entryFiles(cache).count == paths.count)
        let bogus = cache + "/ab/ab" + String(repeating: "0", count: 62)
        try? FileManager.default.createDirectory(atPath: cache + "/ab", withIntermediateDirectories: true)
        let fd = open(bogus, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0 && ftruncate(fd, 100_000_000_000) == 0)
        close(fd)

        try await withLarder(cacheDirectory: cache, configure) { larder in
            try await Self.waitForIndex(larder)
            for path in paths {
                let again = try await larder.get(path)
                #expect(again.status == 200 && String(decoding: again.body, as: UTF8.self) == "entry \(path)")
                #expect(again.header("Cache-Status")?.hasPrefix("larder; hit") == true, "\(path): \(again.header("Cache-Status") ?? "")")
            }
        }
        // Not an entry: removed at start, as nginx's cache loader removes what it cannot read.
        #expect(!FileManager.default.fileExists(atPath: bogus))
        #expect(origin.requests.count == paths.count)
        await origin.stop()
        try? FileManager.default.removeItem(atPath: cache)
    }

    /// A file with a head that is not ours and an ordinary size is not an entry either: the
    /// load removes it rather than leave it to cost the budget until someone asks for it.
    @Test func aFileWithoutAValidHeadIsRemovedAtStart() async throws {
        let origin = try Self.origin()
        let cache = FaultSuiteTests.freshDirectory()
        try await withLarder(cacheDirectory: cache, { $0.routes = [RouteMount("/o=\(origin.url)")!] }) { larder in
            let stored = try await larder.get("/o/one")
            #expect(stored.header("Cache-Status")?.hasSuffix("stored") == true)
        }
        let junk = cache + "/cd/cd" + String(repeating: "1", count: 62)
        try? FileManager.default.createDirectory(atPath: cache + "/cd", withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 100_000).write(to: URL(fileURLWithPath: junk))
        try await withLarder(cacheDirectory: cache, { $0.routes = [RouteMount("/o=\(origin.url)")!] }) { larder in
            try await Self.waitForIndex(larder)
            let again = try await larder.get("/o/one")
            #expect(again.header("Cache-Status")?.hasPrefix("larder; hit") == true)
            let metrics = String(decoding: try await larder.get("/metrics").body, as: UTF8.self)
            let charged = metricValue("larder_cache_bytes{tier=\"disk\"}", in: metrics)
            #expect(charged > 0 && charged < 100_000, "\(charged) bytes charged")
        }
        #expect(!FileManager.default.fileExists(atPath: junk))
        await origin.stop()
        try? FileManager.default.removeItem(atPath: cache)
    }
}
