public import Caching
public import CoreMetrics
import Foundation
package import Observability
public import AccessLogging
import Synchronization
import Locking

/// Larder's series. Those every request touches are counted on the hit path's fast path
/// (`RequestSeries` and the striped lookup and aggregate part counters, written out by
/// `renderHitPath`); the rest go through the swift-metrics facade to whatever backend
/// `factory` is (the executable's Prometheus registry, a test's `TestMetrics`), named by
/// their `MetricFamily`, made on first use, so no series is made before it has something
/// to say.
public final class LarderMetrics: Sendable {
    /// Where the facade's series go: given, so several services in one test process never share.
    private let factory: any MetricsFactory
    /// Totals counted inside the tiers, as last copied into their counters.
    private let lastTotals = Locked<[String: Int]>([:])
    private let series = Locked<RequestSeries?>(nil)
    /// Lookups by tier and result, at `tier ordinal × results + result ordinal`, then the
    /// collapsed count: striped per loop, on the hit path.
    private let lookups = StripedCounters(count: CacheStatus.Tier.allCases.count * CacheStatus.Result.allCases.count + 1)
    private static let collapsedCell = CacheStatus.Tier.allCases.count * CacheStatus.Result.allCases.count

    private static func lookupCell(_ tier: Int, _ result: Int) -> Int { tier * CacheStatus.Result.allCases.count + result }
    private static let tiers = CacheStatus.Tier.allCases
    /// The buckets of `larder_upstream_request_duration_seconds`, which the backend is told
    /// (a swift-metrics `Timer` has no buckets of its own).
    public static let upstreamBuckets: [Duration] = [.milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                                                      .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                                                      .milliseconds(2500), .seconds(5), .seconds(10)]

    /// The handles for one upstream, kept: making them on every fetch (the backend sorting
    /// labels under its lock) cost a miss thousands of instructions.
    private struct UpstreamSeries {
        let requests: [String: Counter]
        let duration: CoreMetrics.Timer
        let events: [MetricFamily: Counter]

        static let eventFamilies: [MetricFamily] = [.upstreamBackoffs, .upstreamBackoffRefusals, .upstreamSaturated]
    }
    /// The upstreams of the routes serving now, by name.
    private let upstreamSeries = Locked<[String: UpstreamSeries]>([:])

    /// Whether a shared tier (Redis) sits between disk and the upstream in every lookup.
    private let sharedTier: Bool

    /// `version`: Larder's, for `larder_build_info`. `factory`: the metrics backend, the one
    /// bootstrapped (or bound to the task with `withMetricsFactory`) unless given.
    public init(memoryLimit: Int, diskLimit: Int, sharedTier: Bool = false, version: String,
                factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        self.sharedTier = sharedTier
        gauge(.cacheLimit, [("tier", "memory")]).record(memoryLimit)
        gauge(.cacheLimit, [("tier", "disk")]).record(diskLimit)
        gauge(.buildInfo, [("version", version)]).record(1)
        // Both results from the start, so an alert sees a process's first failure as an increase;
        // the trace drops as well, at 0 with tracing off too.
        for result in ["success", "failure"] { _ = counter(.configReloads, [("result", result)]) }
        for reason in TraceExportDrops.reasons { _ = counter(.traceSpansDropped, [("reason", reason)]) }
        gauge(.configLastReloadSuccess).record(Date().timeIntervalSince1970)
    }

    /// A reload happened: counted by result; a success at `time` (Unix seconds) is kept.
    public func configReloaded(success: Bool, at time: Double?) {
        counter(.configReloads, [("result", success ? "success" : "failure")]).increment()
        if success, let time { gauge(.configLastReloadSuccess).record(time) }
    }

    private func counter(_ family: MetricFamily, _ labels: [(String, String)] = []) -> Counter {
        Counter(label: family.name, dimensions: labels, factory: factory)
    }

    private func gauge(_ family: MetricFamily, _ labels: [(String, String)] = []) -> Gauge {
        Gauge(label: family.name, dimensions: labels, factory: factory)
    }

    /// The counters of one part of an aggregate: the same cells for the same labels in every
    /// generation of routes, exported at zero from the start so an alert sees its first
    /// missing answer as an increase.
    public func aggregatePart(_ aggregate: String, _ part: String) -> AggregatePartCounters {
        let labels = AggregatePartLabels(aggregate: aggregate, part: part)
        let cells = aggregateParts.withLock { parts in
            if let known = parts[labels] { return known }
            let made = StripedCounters(count: AggregatePartCounters.results.count)
            parts[labels] = made
            return made
        }
        for result in AggregatePartCounters.results { _ = counter(.aggregateParts, labels.labels(result)) }
        return AggregatePartCounters(cells: cells)
    }

    private struct AggregatePartLabels: Hashable {
        let aggregate: String
        let part: String

        func labels(_ result: String) -> [(String, String)] { [("aggregate", aggregate), ("part", part), ("result", result)] }
    }
    private let aggregateParts = Locked<[AggregatePartLabels: StripedCounters]>([:])

    /// The request series of a router's routes, made once; `/metrics` writes them out too.
    /// `cached` are the labels of the routes the cache answers, whose stale series an alert reads.
    /// `removable`: the paths among `routes` that configuration gave (aggregates), which a reload may remove.
    public func requestSeries(routes: [String], cached: [String], removable: [String] = []) -> RequestSeries {
        let made = RequestSeries(routes: routes, cached: cached, removable: removable)
        series.withLock { $0 = made }
        return made
    }

    /// Counts where a cache answer was found: a memory miss goes on to disk, a disk miss to
    /// Redis (when there is a shared tier), then to the upstream, so each tier's lookups add
    /// up (a forwarded refresh found its entry, so it counts at the upstream only).
    public func lookup(_ status: CacheStatus) {
        let tier = status.tier
        // A memory hit (most answers) passed no tier; `allCases` is built anew on each use, so it is read once.
        if tier != .memory, tier != .upstream || status.forward == .miss {
            for passed in Self.tiers[..<tier.ordinal] where passed != .redis || sharedTier {
                lookups.add(Self.lookupCell(passed.ordinal, CacheStatus.Result.miss.ordinal))
            }
        }
        lookups.add(Self.lookupCell(tier.ordinal, status.result.ordinal))
        if status.collapsed { lookups.add(Self.collapsedCell) }
    }

    private func renderLookups() -> String {
        var lines: [String] = []
        for tier in CacheStatus.Tier.allCases {
            for result in CacheStatus.Result.allCases {
                let count = lookups[Self.lookupCell(tier.ordinal, result.ordinal)]
                if count > 0 { lines.append("\(MetricFamily.cacheLookups.name){tier=\"\(tier.rawValue)\",result=\"\(result.rawValue)\"} \(count)") }
            }
        }
        var text = ""
        MetricFamily.cacheLookups.write(type: "counter", lines, into: &text)
        // At 0 from the start: `rate()` sees no first event in a series that first appears at 1.
        let collapsed = lookups[Self.collapsedCell]
        MetricFamily.cacheCollapsed.write(type: "counter", ["\(MetricFamily.cacheCollapsed.name) \(collapsed)"], into: &text)
        return text
    }

    /// Outcomes an upstream exchange is counted under (`UpstreamObserver.observed`).
    static let upstreamOutcomes = ["ok", "status_4xx", "status_5xx", "timeout", "error"]

    /// The upstreams and aggregate parts of the routes about to serve. Each new upstream's
    /// and part's counters are made at zero, so an alert's `increase()` sees its first event
    /// (a series that first appears at 1 shows no increase); the series of those no route
    /// has any more leave `/metrics`, and what a request still in flight on a removed route
    /// reports of them is not counted.
    public func configure(upstreams: Set<String>, aggregateParts: [(aggregate: String, part: String)]) {
        upstreamSeries.withLock { known in
            for (name, gone) in known where !upstreams.contains(name) {
                gone.requests.values.forEach { $0.destroy() }
                gone.events.values.forEach { $0.destroy() }
                gone.duration.destroy()
                known[name] = nil
            }
            for name in upstreams where known[name] == nil {
                known[name] = UpstreamSeries(
                    requests: Dictionary(uniqueKeysWithValues: Self.upstreamOutcomes.map {
                        ($0, counter(.upstreamRequests, [("upstream", name), ("outcome", $0)]))
                    }),
                    duration: CoreMetrics.Timer(label: MetricFamily.upstreamDuration.name, dimensions: [("upstream", name)], factory: factory),
                    events: Dictionary(uniqueKeysWithValues: UpstreamSeries.eventFamilies.map { ($0, counter($0, [("upstream", name)])) }))
            }
        }
        let parts = Set(aggregateParts.map { AggregatePartLabels(aggregate: $0.aggregate, part: $0.part) })
        self.aggregateParts.withLock { known in
            for labels in known.keys where !parts.contains(labels) {
                for result in AggregatePartCounters.results {
                    counter(.aggregateParts, labels.labels(result)).destroy()
                    lastTotals.withLock { $0[Self.totalID(.aggregateParts, labels.labels(result))] = nil }
                }
                known[labels] = nil
            }
        }
    }

    package func upstream(_ name: String, outcome: String, duration: Duration) {
        guard let series = upstreamSeries.withLock({ $0[name] }), let requests = series.requests[outcome] else { return }
        requests.increment()
        series.duration.recordNanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    /// Counts a backoff, a refusal during one, or a saturated request of a configured upstream.
    package func upstreamEvent(_ family: MetricFamily, _ name: String) {
        upstreamSeries.withLock { $0[name]?.events[family] }?.increment()
    }

    /// Moves a counter kept as a running total elsewhere (a tier's evictions) up to that
    /// total; a total still at zero is exported as 0, so an alert sees the first event.
    private func catchUp(_ family: MetricFamily, _ labels: [(String, String)], to total: Int) {
        let id = Self.totalID(family, labels)
        let delta = lastTotals.withLock { last in
            defer { last[id] = total }
            return total - (last[id] ?? 0)
        }
        counter(family, labels).increment(by: Int64(max(0, delta)))
    }

    private static func totalID(_ family: MetricFamily, _ labels: [(String, String)]) -> String {
        family.name + labels.map { "|\($0.0)=\($0.1)" }.joined()
    }

    /// Brings the level gauges, and the counters kept as running totals elsewhere, up to
    /// date in the backend: what a scrape does before the backend writes its series out.
    public func update(memory: MemoryTier, disk: DiskTier?, shared: SharedTierReading? = nil, openConnections: Int) {
        gauge(.cacheBytes, [("tier", "memory")]).record(memory.bytes)
        gauge(.cacheEntries, [("tier", "memory")]).record(memory.count)
        gauge(.openConnections).record(openConnections)
        catchUp(.cacheEvictions, [("tier", "memory")], to: memory.evictions)
        catchUp(.cacheAdmissionRejections, [("tier", "memory")], to: memory.rejections)
        if let disk {
            gauge(.cacheBytes, [("tier", "disk")]).record(disk.bytes)
            gauge(.cacheEntries, [("tier", "disk")]).record(disk.count)
            catchUp(.cacheEvictions, [("tier", "disk")], to: disk.evictions)
            catchUp(.cacheAdmissionRejections, [("tier", "disk")], to: disk.rejections)
            catchUp(.diskWritesSkipped, [], to: disk.skippedWrites)
            catchUp(.diskWriteErrors, [], to: disk.failedWrites)
            catchUp(.diskWriteWaits, [], to: disk.waitedWrites)
            let queued = disk.queuedWrites
            gauge(.diskWriteQueueEntries).record(queued.entries)
            gauge(.diskWriteQueueBytes).record(queued.bytes)
        }
        if let shared {
            catchUp(.cacheStores, [("tier", "redis")], to: shared.stores)
            catchUp(.redisErrors, [], to: shared.errors)
            catchUp(.redisWaits, [], to: shared.waits)
            catchUp(.redisCorruptValues, [], to: shared.corruptions)
            gauge(.redisUp).record(shared.isUp ? 1 : 0)
        }
        // Under the lock `configure` removes parts with, so no part removed is made again here.
        aggregateParts.withLock { parts in
            for (labels, cells) in parts {
                for (index, result) in AggregatePartCounters.results.enumerated() {
                    catchUp(.aggregateParts, labels.labels(result), to: cells[index])
                }
            }
        }
    }

    /// The text exposition of the families the hit path counts outside the facade: the
    /// request series and the lookups, series that counted nothing left out.
    public func renderHitPath() -> String {
        (series.withLock { $0 }?.render() ?? "") + renderLookups()
    }
}

/// How often one part of an aggregate was answered, by result, or was missing. Striped per
/// loop, as the request series are: an aggregate of memory hits counts each of its parts,
/// and a counter shared by the loops moved its cache line between cores on every request.
public struct AggregatePartCounters: Sendable {
    /// The `result` labels: `CacheStatus.Result`'s, by ordinal, then `missing`.
    static let results = CacheStatus.Result.allCases.map(\.rawValue) + ["missing"]
    let cells: StripedCounters

    public func answered(_ result: CacheStatus.Result) { cells.add(result.ordinal) }
    public func missed() { cells.add(Self.results.count - 1) }
}
