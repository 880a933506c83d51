import Caching
import CoreMetrics
import Metrics
import Foundation
import Prometheus
import Synchronization

/// Larder's Prometheus series, recorded through swift-metrics with a swift-prometheus
/// factory on a registry of its own (so several services in one test process never share).
///
/// Handles are made once per label set and kept, so recording on the hit path is an
/// atomic add after one dictionary lookup.
final class LarderMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let counters = Mutex<[String: CoreMetrics.Counter]>([:])
    private let latency: CoreMetrics.Timer
    private let gauges = Mutex<[String: CoreMetrics.Gauge]>([:])
    private let lastEvictions = Mutex<[String: Int]>([:])

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                                                   .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                                                   .milliseconds(2500), .seconds(5), .seconds(10)]
        self.factory = factory
        latency = CoreMetrics.Timer(label: "larder_upstream_request_duration_seconds", dimensions: [], factory: factory)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        let id = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        return counters.withLock { counters in
            if let existing = counters[id] { return existing }
            let made = CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory)
            counters[id] = made
            return made
        }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Gauge {
        let id = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        return gauges.withLock { gauges in
            if let existing = gauges[id] { return existing }
            let made = CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory)
            gauges[id] = made
            return made
        }
    }

    func request(route: String, status: Int) {
        counter("larder_http_requests_total", [("route", route), ("status", String(status))]).increment()
    }

    /// Counts a cache lookup by where it was answered (memory, disk, upstream) and how (hit, stale, miss).
    func lookup(_ status: CacheStatus) {
        let tier = status.hit ? (status.detail ?? "memory") : "upstream"
        let result = status.detail == "stale-if-error" || (status.ttl ?? 0) < 0 ? "stale" : status.hit ? "hit" : "miss"
        counter("larder_cache_lookups_total", [("tier", tier), ("result", result)]).increment()
        if status.collapsed { counter("larder_cache_collapsed_requests_total", []).increment() }
    }

    func upstream(_ name: String, outcome: String, duration: Duration) {
        counter("larder_upstream_requests_total", [("upstream", name), ("outcome", outcome)]).increment()
        latency.recordNanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Brings the level gauges up to date and renders the text exposition format.
    func render(memory: MemoryTier, disk: DiskTier?, openConnections: Int) -> [UInt8] {
        gauge("larder_cache_bytes", [("tier", "memory")]).record(memory.bytes)
        gauge("larder_cache_entries", [("tier", "memory")]).record(memory.count)
        gauge("larder_open_connections", []).record(openConnections)
        var evictions = [("memory", memory.evictions)]
        if let disk {
            gauge("larder_cache_bytes", [("tier", "disk")]).record(disk.bytes)
            gauge("larder_cache_entries", [("tier", "disk")]).record(disk.count)
            evictions.append(("disk", disk.evictions))
        }
        for (tier, total) in evictions {
            let delta = lastEvictions.withLock { last in
                defer { last[tier] = total }
                return total - (last[tier] ?? 0)
            }
            let counter = counter("larder_cache_evictions_total", [("tier", tier)])
            if delta > 0 { counter.increment(by: delta) } else { counter.increment(by: 0) }
        }
        return registry.emitToBuffer()
    }
}
