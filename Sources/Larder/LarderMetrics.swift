import Caching
import CoreMetrics
import Metrics
import Foundation
import Prometheus
import Synchronization

/// Larder's Prometheus series, recorded through swift-metrics with a swift-prometheus
/// factory on a registry of its own (so several services in one test process never share).
///
/// The series a request touches on the hit path (its route and status, its cache lookup)
/// are made once at start and kept in fixed tables, so recording them is an atomic add:
/// no label strings built, no lock taken. Other label sets are made on first use.
final class LarderMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let handles = Mutex<[String: AnyObject]>([:])
    private let latency: CoreMetrics.Timer
    /// Totals counted inside the tiers, as last copied into their counters.
    private let lastTotals = Mutex<[String: Int]>([:])

    /// lookups[tier ordinal][result ordinal], made once for every combination (an array
    /// index, not a hash, on the hit path).
    private let lookups: [[CoreMetrics.Counter]]
    private let collapsed: CoreMetrics.Counter

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                                                   .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                                                   .milliseconds(2500), .seconds(5), .seconds(10)]
        self.factory = factory
        latency = CoreMetrics.Timer(label: "larder_upstream_request_duration_seconds", dimensions: [], factory: factory)
        lookups = CacheStatus.Tier.allCases.map { tier in
            CacheStatus.Result.allCases.map { result in
                CoreMetrics.Counter(label: "larder_cache_lookups_total", dimensions: [("tier", tier.rawValue), ("result", result.rawValue)],
                                    factory: factory)
            }
        }
        collapsed = CoreMetrics.Counter(label: "larder_cache_collapsed_requests_total", dimensions: [], factory: factory)
    }

    /// The handle for one label set, made on first use and kept.
    private func handle<Handle: AnyObject>(_ label: String, _ dimensions: [(String, String)], make: () -> Handle) -> Handle {
        let id = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        return handles.withLock { handles in
            if let existing = handles[id] as? Handle { return existing }
            let made = make()
            handles[id] = made
            return made
        }
    }

    func counter(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Counter {
        handle(label, dimensions) { CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory) }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)]) -> CoreMetrics.Gauge {
        handle(label, dimensions) { CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory) }
    }

    /// The request counters of a router's routes, made once (see `RequestSeries`).
    func requestSeries(routes: [String]) -> RequestSeries {
        RequestSeries(routes: routes) { route, status in
            self.counter("larder_http_requests_total", [("route", route), ("status", String(status))])
        }
    }

    /// Counts a cache lookup by where it was answered (memory, disk, upstream) and how (hit, stale, miss).
    func lookup(_ status: CacheStatus) {
        lookups[status.tier.ordinal][status.result.ordinal].increment()
        if status.collapsed { collapsed.increment() }
    }

    func upstream(_ name: String, outcome: String, duration: Duration) {
        counter("larder_upstream_requests_total", [("upstream", name), ("outcome", outcome)]).increment()
        latency.recordNanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Moves a counter kept as a running total elsewhere (a tier's evictions) up to that total.
    private func catchUp(_ label: String, _ dimensions: [(String, String)], to total: Int) {
        let id = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        let delta = lastTotals.withLock { last in
            defer { last[id] = total }
            return total - (last[id] ?? 0)
        }
        counter(label, dimensions).increment(by: max(0, delta))
    }

    /// Brings the level gauges up to date and renders the text exposition format.
    func render(memory: MemoryTier, disk: DiskTier?, openConnections: Int) -> [UInt8] {
        gauge("larder_cache_bytes", [("tier", "memory")]).record(memory.bytes)
        gauge("larder_cache_entries", [("tier", "memory")]).record(memory.count)
        gauge("larder_open_connections", []).record(openConnections)
        catchUp("larder_cache_evictions_total", [("tier", "memory")], to: memory.evictions)
        if let disk {
            gauge("larder_cache_bytes", [("tier", "disk")]).record(disk.bytes)
            gauge("larder_cache_entries", [("tier", "disk")]).record(disk.count)
            catchUp("larder_cache_evictions_total", [("tier", "disk")], to: disk.evictions)
            catchUp("larder_disk_writes_skipped_total", [], to: disk.skippedWrites)
            catchUp("larder_disk_write_errors_total", [], to: disk.failedWrites)
        }
        return registry.emitToBuffer()
    }
}
