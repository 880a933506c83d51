import CLinux
import Caching
import Foundation

/// How close the memory tier's byte count is to what its items really take from malloc:
/// fills a tier with entries shaped like an upstream's answers (small bodies, typical
/// fields, a rendered value beside each) and compares the heap's growth with `bytes`.
/// Prints `accounted A heap H ratio R`; the test suite runs it and checks R.
enum MemoryAccounting {
    /// A rendered value of the size Larder keeps beside a weather entry.
    private final class Rendered: Sendable, MemoryCosted {
        let body: [UInt8]
        let fields: [UInt8]
        init(_ n: Int) {
            body = Array("{\"latitude\":\(n),\"longitude\":13.41,\"temperature\":3.2,\"condition\":\"Overcast\"}".utf8)
            fields = Array("Cache-Control: public, max-age=600\r\nDate: Sun, 22 Nov 2026 16:00:00 GMT\r\nETag: \"0123456789abcdef0123456789abcdef\"\r\n".utf8)
        }
        var memoryCost: Int { MemoryCost.allocation(16 + 16) + MemoryCost.array(bytes: body.count) + MemoryCost.array(bytes: fields.count) }
    }

    static func run(entries: Int) {
        let tier = MemoryTier(budget: Int.max)
        let before = larder_heap_in_use()
        var keep: [String] = []
        for n in 0..<entries {
            let now = Date()
            let entry = CacheEntry(status: 200, headers: [
                ("Content-Type", "application/json"), ("Cache-Control", "max-age=600"),
                ("ETag", "\"upstream-\(n)-\(n * 7)\""), ("Last-Modified", "Sun, 22 Nov 2026 16:00:00 GMT"),
                ("Date", "Sun, 22 Nov 2026 16:00:00 GMT"), ("Content-Length", "212"), ("Server", "upstream"),
            ], body: Array(String(repeating: "x", count: 150 + n % 100).utf8), requestTime: now, responseTime: now)
            let key = "weather:\(n / 1000).\(n % 1000),13.41"
            tier.set(key, MemoryTier.Item(entry: entry, value: Rendered(n)))
            if n == 0 { keep.append(key) }
        }
        let heap = larder_heap_in_use() - before
        let ratio = Double(heap) / Double(tier.bytes)
        print("memory accounting, \(tier.count) entries: accounted \(tier.bytes) heap \(heap) ratio \(String(format: "%.2f", ratio))")
        withExtendedLifetime((tier, keep)) {}
    }
}
