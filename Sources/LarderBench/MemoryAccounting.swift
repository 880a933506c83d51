import CLinux
import Caching
import Foundation
import HTTPCore

/// How close the memory tier's byte count is to what its items really take from malloc:
/// fills a tier with entries shaped like an upstream's answers (small bodies, typical
/// fields, a rendered value beside each) and compares the heap's growth with `bytes`.
/// Prints `accounted A heap H ratio R`; the test suite runs it and checks R.
enum MemoryAccounting {
    /// A rendering of the size Larder keeps beside a weather entry: its JSON and fields.
    private static func rendered(_ n: Int) -> RenderedResponse {
        let validators = [("Cache-Control", "public, max-age=600"), ("Date", "Sun, 22 Nov 2026 16:00:00 GMT"),
                          ("ETag", "\"0123456789abcdef0123456789abcdef\"")]
        return RenderedResponse(status: 200,
                                body: Array("{\"latitude\":\(n),\"longitude\":13.41,\"temperature\":3.2,\"condition\":\"Overcast\"}".utf8),
                                fields: RenderedFields(validators + [("Content-Type", "application/json")]),
                                notModifiedFields: RenderedFields(validators), etag: "\"0123456789abcdef0123456789abcdef\"", modified: nil)
    }

    static func run(entries: Int) {
        let tier = MemoryTier(budget: Int.max)
        let before = larder_heap_in_use()
        var keep: [CacheKey] = []
        for n in 0..<entries {
            let now = Date()
            let entry = CacheEntry(status: 200, headers: [
                ("Content-Type", "application/json"), ("Cache-Control", "max-age=600"),
                ("ETag", "\"upstream-\(n)-\(n * 7)\""), ("Last-Modified", "Sun, 22 Nov 2026 16:00:00 GMT"),
                ("Date", "Sun, 22 Nov 2026 16:00:00 GMT"), ("Content-Length", "212"), ("Server", "upstream"),
            ], body: Array(String(repeating: "x", count: 150 + n % 100).utf8), requestTime: now, responseTime: now)
            let key = CacheKey(route: "weather", resource: "\(n / 1000).\(n % 1000),13.41")
            tier.set(key, .response(StoredResponse(entry: entry, rendered: rendered(n))))
            if n == 0 { keep.append(key) }
        }
        let heap = larder_heap_in_use() - before
        let ratio = Double(heap) / Double(tier.bytes)
        print("memory accounting, \(tier.count) entries: accounted \(tier.bytes) heap \(heap) ratio \(String(format: "%.2f", ratio))")
        withExtendedLifetime((tier, keep)) {}
    }
}
