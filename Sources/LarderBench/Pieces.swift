import Settings
#if canImport(Glibc)
import Glibc
#endif
import Caching
import OrderedCollections
import Foundation
import HTTPCore
@_spi(Bench) import HTTPServer
import Logging
@_spi(Bench) import Observability
@_spi(Bench) import AccessLogging
import ServiceMetrics
import Prometheus
import Upstream
import Synchronization
import CacheVocabulary

/// The hand-written pieces of the hit path, each timed against what a newcomer would write
/// instead (a library, or plain `String` code), in nanoseconds per operation: the figures
/// their doc comments give as their reason (`larder-bench pieces`, release build).
enum Pieces {
    /// Keeps the optimizer from dropping the work measured.
    nonisolated(unsafe) static var sink = 0

    static func run(iterations n: Int) async {
        print("hand-written pieces against their plain alternative, \(n) operations each (ns per operation, best of 3)")
        // Into an output buffer that is already there, as a response's head is written.
        var out: [UInt8] = []
        out.reserveCapacity(64)
        compare("DecimalText: Content-Length digits", n,
                { i in out.removeAll(keepingCapacity: true); DecimalText.append(i % 1_000_000, to: &out); sink &+= out.count },
                { i in out.removeAll(keepingCapacity: true); out += String(i % 1_000_000).utf8; sink &+= out.count })
        compare("FieldLines: Age and Cache-Status of one answer", n,
                { i in
                    var lines = FieldLines()
                    lines.add("Age", i % 1000)
                    lines.add("Cache-Status", "larder; hit")
                    sink &+= lines.bytes.count
                },
                { i in sink &+= render([("Age", String(i % 1000)), ("Cache-Status", "larder; hit")]).count })
        let stored = [("Content-Type", "application/json"), ("Cache-Control", "max-age=600"), ("ETag", "\"5f3a9c2e\""),
                      ("Last-Modified", "Thu, 26 Nov 2026 10:00:00 GMT"), ("Vary", "Accept-Encoding")]
        let rendered = RenderedFields(stored)
        compare("RenderedFields: a stored answer's fields, per hit", n,
                { _ in var out: [UInt8] = []; out.reserveCapacity(256); out += rendered.bytes; sink &+= out.count },
                { _ in sink &+= render(stored).count })
        var date = DateHeaderCache()
        compare("DateHeaderCache: the Date line, a turn per answer", n,
                { _ in date.newTurn(); sink &+= date.current().count },
                { _ in sink &+= Array("Date: \(HTTPDate.format(epochSeconds: Glibc.time(nil)))\r\n".utf8).count })
        requestSeries(n)
        logLines(n / 10)
        await memoryTier(n)
    }

    /// What a plain writer does with a field list: each name and value appended as text.
    private static func render(_ fields: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        for (name, value) in fields {
            out += name.utf8
            out += ": ".utf8
            out += value.utf8
            out += "\r\n".utf8
        }
        return out
    }

    private static func requestSeries(_ n: Int) {
        let series = LarderMetrics(memoryLimit: 1 << 20, diskLimit: 1 << 20, version: Version.current).requestSeries(routes: ["/weather"], cached: ["/weather"])
        let route = series.route(matched: 0, unrouted: nil)
        let registry = PrometheusCollectorRegistry()
        let buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10].map { Duration.milliseconds($0 * 1000) }
        let requests = MetricNameDescriptor(metricName: "larder_http_requests", unitName: "total", helpText: "Requests.")
        let durations = MetricNameDescriptor(metricName: "larder_http_request_duration", unitName: "seconds", helpText: "Durations.")
        compare("RequestSeries: a request's count and duration", n,
                { i in series.record(route, status: 200, result: .hit, nanoseconds: i % 100_000) },
                { i in
                    registry.makeCounter(descriptor: requests, labels: [("route", "/weather"), ("status", "200")]).increment()
                    registry.makeDurationHistogram(descriptor: durations, labels: [("route", "/weather"), ("result", "hit")],
                                                   buckets: buckets).recordNanoseconds(Int64(i % 100_000))
                })
    }

    /// An access line through `LogOutput` and through swift-log's own `StreamLogHandler`,
    /// both writing to /dev/null (standard output is pointed there while they run).
    private static func logLines(_ n: Int) {
        fflush(nil)
        let saved = dup(1)
        let null = open("/dev/null", O_WRONLY)
        dup2(null, 1)
        let ours = Logger(label: "larder") { LogOutput(label: $0, level: .info, format: .text) }
        let theirs = Logger(label: "larder") { label in
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = .info
            return handler
        }
        let line = { (logger: Logger, i: Int) in
            logger.info("GET /weather?lat=52.52&lon=13.41 200", metadata: [
                "bytes": .stringConvertible(187), "cache_status": .string("larder; hit"), "client": .string("127.0.0.1"),
                "duration_ms": .stringConvertible(Double(i % 1000) / 1000), "request_id": .string("5f3a9c2e-\(i)"),
                "route": .string("/weather"), "status": .stringConvertible(200),
            ], source: "larder")
        }
        let results = (time(n) { line(ours, $0) }, time(n) { line(theirs, $0) })
        LogOutput.flush()
        fflush(nil)
        dup2(saved, 1)
        close(null)
        close(saved)
        report("LogOutput: an access line (StreamLogHandler)", results)
    }

    /// Hits spread over 10,000 entries: `MemoryTier.get` against an LRU kept in swift-collections'
    /// `OrderedDictionary`, where a hit moves its key to the end.
    private static func memoryTier(_ n: Int) async {
        let memory = MemoryTier(budget: 256 << 20)
        let cache = Cache(route: "weather", policy: CachePolicy(defaultLifetime: 600), memory: memory, disk: nil, fetcher: MemoryHit.Fetcher()) { _, entry in
            RenderedResponse(status: 200, body: entry.body, fields: RenderedFields([("Content-Type", "application/json")]),
                             notModifiedFields: RenderedFields([]), etag: entry.etag, modified: nil)
        }
        let requests = (0..<10_000).map { CacheRequest(resource: "\($0),13.41", url: "", directives: .none) }
        for request in requests { _ = await cache.answer(request) }
        let keys = requests.map { cache.key($0.resource) }
        let ordered = Mutex(OrderedDictionary(uniqueKeysWithValues: keys.map { ($0, memory.get($0)!) }))
        compare("MemoryTier: a hit among 10,000 entries (OrderedDictionary LRU)", n,
                { i in if memory.get(keys[i &* 7919 % keys.count]) != nil { sink &+= 1 } },
                { i in
                    let key = keys[i &* 7919 % keys.count]
                    ordered.withLock { lru in
                        guard let item = lru.removeValue(forKey: key) else { return }
                        lru[key] = item
                        sink &+= 1
                    }
                })
    }

    private static func compare(_ label: String, _ n: Int, _ piece: (Int) -> Void, _ plain: (Int) -> Void) {
        report(label, (time(n, piece), time(n, plain)))
    }

    private static func report(_ label: String, _ results: (piece: Double, plain: Double)) {
        print("  \(label): \(format(results.piece)) ns, plain \(format(results.plain)) ns")
    }

    /// Nanoseconds per call, the best of three runs.
    private static func time(_ n: Int, _ body: (Int) -> Void) -> Double {
        (0..<3).map { _ in
            let start = ContinuousClock.now
            for i in 0..<n { body(i) }
            return microseconds(ContinuousClock.now - start) * 1000 / Double(n)
        }.min()!
    }
}
