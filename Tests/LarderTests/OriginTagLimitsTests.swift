import Foundation
import Testing
import TestSupport
@testable import Larder
@testable import Settings

/// A pass-through origin that sends thousands of `Surrogate-Key` tags with every answer (an
/// origin's choice, or an attacker's behind it): the tags kept are capped, the memory tier
/// stays within its limit, and a purge of one tag is quick and takes only what carries it.
@Suite(.timeLimit(.minutes(2))) struct OriginTagLimitsTests {
    private static func tags(_ page: Int) -> String {
        (0..<5_000).map { "p\(page)-tag-\(String($0 + 100_000))" }.joined(separator: " ")
    }

    @Test func hugeSurrogateKeysAreCappedCountedAndPurgedQuickly() async throws {
        let origin = try TestUpstream()
        let limit = 4 << 20
        try await withLarder(upstream: origin, { settings in
            AdminTests.admin(&settings)
            settings.memoryLimit = limit
            settings.routes = [RouteMount("/p=http://127.0.0.1:\(origin.port)")!]
        }) { h in
            for page in 0..<120 {
                origin.update { $0.extraHeaders = [("Surrogate-Key", (page % 40 == 3 ? "wanted " : "") + Self.tags(page))] }
                let answer = try await h.get("/p/\(page)")
                #expect(answer.status == 200)
                #expect(answer.header("surrogate-key") == nil)
            }
            await h.service.waitForDiskWrites()
            let metrics = try await h.get("/metrics").text
            let bytes = metrics.split(separator: "\n").first { $0.hasPrefix("larder_cache_bytes{tier=\"memory\"}") }
            let held = bytes.flatMap { Double($0.split(separator: " ").last!) } ?? -1
            #expect(held > 0 && held <= Double(limit), "memory tier holds \(held) bytes")

            let inspected = try await AdminTests.admin(h, "GET", "/cache?target=%2Fp%2F0").text
            #expect(inspected.contains("p0-tag-100000") && !inspected.contains("p0-tag-104999"), "only the first 16 KiB of tags are kept")

            let started = ContinuousClock.now
            let purged = try await AdminTests.admin(h, "POST", "/purge", body: "{\"tags\":[\"wanted\"]}")
            let took = ContinuousClock.now - started
            #expect(purged.text == "{\"purged\":3}")
            #expect(took < .seconds(2), "purging one tag took \(took)")
            origin.update { $0.extraHeaders = [] }
            #expect(try await h.get("/p/43").header("cache-status")?.hasPrefix("larder; fwd=miss") == true)
            #expect(try await h.get("/p/44").header("cache-status")?.contains("hit") == true)
        }
        await origin.stop()
    }
}
