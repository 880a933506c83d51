import Caching
import Foundation
import HTTPCore
import HTTPServer
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// The disk tier at scale, end to end: a restart over tens of thousands of entries, and a
/// storm of misses kept on disk at the rate it is answered.
@Suite(.timeLimit(.minutes(2))) struct DiskScaleTests {
    private func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("larder-scale-\(UUID().uuidString)").path
    }

    @Test func aRestartOverTensOfThousandsOfEntriesAnswersItsFirstRequestFromDisk() async throws {
        let upstream = try TestUpstream()
        let cache = directory()
        try await withLarder(upstream: upstream, cacheDirectory: cache) { h in
            let stored = try await h.get("/weather?lat=3&lon=4")
            #expect(stored.status == 200)
        }
        let filler = try DiskTier(directory: cache, budget: 1 << 30)
        let entry = CacheEntry(status: 200, headers: [("Cache-Control", "max-age=600")], body: Array("{}".utf8),
                               requestTime: Date(), responseTime: Date())
        for n in 0..<30_000 {
            filler.write(CacheKey(route: "http://filler.test", resource: "/\(n)"), entry)
            if n % 2000 == 1999 { await filler.waitForWrites() }
        }
        await filler.waitForWrites()
        #expect(filler.skippedWrites == 0)

        try await withLarder(upstream: upstream, cacheDirectory: cache) { h in
            let first = try await h.get("/weather?lat=3&lon=4")
            #expect(first.status == 200)
            #expect(first.header("cache-status")?.hasSuffix("detail=disk") == true)
            let ready = try await h.get("/readyz")
            #expect(ready.status == 200)
        }
        #expect(upstream.count("/v1/forecast") == 1)
        await upstream.stop()
    }

    /// Eight clients asking for new keys for three seconds, with a small memory tier (which
    /// once also bounded the write queue): every answer says stored, and at least 95 % of the
    /// answers are on disk after.
    @Test func aStormOfMissesIsKeptOnDisk() async throws {
        let origin = try TestOrigin { request in
            HTTPResponse(status: 200, headers: HTTPHeaders([("Cache-Control", "max-age=600")]), body: "{\"path\":\"\(request.target)\"}")
        }
        let cache = directory()
        let answered = try await withThrowingTaskGroup(of: (all: Int, stored: Int).self) { group in
            let harness = try ServiceHarness.start(cacheDirectory: cache) { settings in
                settings.routes = [RouteMount("/=\(origin.url)")!]
                settings.memoryLimit = 1 << 20
            }
            let until = ContinuousClock.now + .seconds(3)
            for client in 0..<8 {
                group.addTask {
                    var (all, stored) = (0, 0)
                    // At least 50 each, however slow the machine is.
                    while all < 50 || ContinuousClock.now < until {
                        let response = try await harness.get("/storm/\(client)-\(all)")
                        all += 1
                        if response.status == 200, response.header("cache-status")?.hasSuffix("stored") == true { stored += 1 }
                    }
                    return (all, stored)
                }
            }
            let answered = try await group.reduce(into: (all: 0, stored: 0)) { $0.all += $1.all; $0.stored += $1.stored }
            await harness.stop()  // waits for the disk writes
            await harness.upstream.stop()
            return answered
        }
        await origin.stop()
        let persisted = FaultSuiteTests.entryFiles(cache).count
        #expect(answered.stored == answered.all, "\(answered.stored) of \(answered.all) answers said stored")
        #expect(Double(persisted) >= 0.95 * Double(answered.all), "\(persisted) of \(answered.all) answers on disk")
    }
}
