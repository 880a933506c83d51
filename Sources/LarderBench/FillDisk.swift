import Caching
import Foundation
import HTTPCore

/// Writes `count` entries into a cache directory in Larder's own format, through the disk
/// tier's write path, as a pass-through route to `origin` would store `/item/N` (fresh for a
/// day): `make bench`'s start-up scale cell, where filling a million entries through HTTP
/// would take most of the bench's time. Prints the entries written and how long it took.
enum FillDisk {
    static func run(directory: String, count: Int, origin: String) async throws {
        let started = ContinuousClock.now
        let disk = try DiskTier(directory: directory, budget: Int.max)
        await disk.waitForIndex()
        let date = HTTPDate.format(Date())
        for n in 0..<count {
            let body = Array("{\"item\":\(n),\"note\":\"a small answer, as an API gives\"}".utf8)
            let now = Date()
            let entry = CacheEntry(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "max-age=86400"),
                                                          ("Date", date), ("Content-Length", String(body.count))],
                                   body: body, requestTime: now, responseTime: now)
            disk.write(CacheKey(route: origin, resource: "/item/\(n)"), entry)
            // Within the write queue's bound: a skipped write would leave a hole.
            if n % 2000 == 1999 { await disk.waitForWrites() }
        }
        await disk.waitForWrites()
        guard disk.skippedWrites == 0, disk.failedWrites == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(disk.skippedWrites) writes skipped, \(disk.failedWrites) failed"])
        }
        print("fill-disk: \(disk.count) entries in \(started.duration(to: .now))")
    }
}
