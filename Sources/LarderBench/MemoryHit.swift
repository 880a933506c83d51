import HTTPCore
import Caching
import Foundation

/// Nanoseconds per memory hit: `Cache.answerFromMemory` in a loop, on one hot key and
/// on many keys, with no upstream involved after the first fill.
enum MemoryHit {
    struct Fetcher: CacheFetcher {
        func fetch(_ request: CacheRequest) async throws -> CacheEntry {
            CacheEntry(status: 200, headers: [("Cache-Control", "max-age=3600"), ("ETag", "\"1\"")],
                       body: Array("{\"latitude\":52.52,\"longitude\":13.41,\"temperature\":3.2}".utf8),
                       requestTime: Date(), responseTime: Date())
        }
    }

    static func run(iterations: Int) async {
        let cache = Cache(route: "weather", policy: CachePolicy(defaultLifetime: 600), memory: MemoryTier(budget: 64 << 20),
                          disk: nil, fetcher: Fetcher()) { _, entry in
            RenderedResponse(status: 200, body: entry.body, fields: RenderedFields([("Content-Type", "application/json")]),
                             notModifiedFields: RenderedFields([]), etag: entry.etag, modified: nil)
        }
        let keys = (0..<1000).map { CacheRequest(resource: "\($0 / 10).\($0 % 10),13.41", url: "", directives: .none) }
        for key in keys { _ = await cache.answer(key) }

        print("memory hit, \(iterations) lookups (release build)")
        for (label, pick) in [("one hot key", { (_: Int) in keys[0] }), ("1,000 keys", { (i: Int) in keys[i % keys.count] })] {
            var hits = 0
            let start = ContinuousClock.now
            for i in 0..<iterations where cache.answerFromMemory(pick(i)) != nil { hits += 1 }
            let elapsed = ContinuousClock.now - start
            precondition(hits == iterations, "every lookup must hit")
            print("  \(label): \(format(microseconds(elapsed) * 1000 / Double(iterations))) ns per hit")
        }
    }
}
