/// Every metric family Larder exports, with the help text `/metrics` prints for it: the one
/// list of names, so no family goes out without `# HELP` and a dashboard or alert can be
/// checked against it. The swift-metrics facade carries no help text, so the exposition
/// adds each family's `# HELP` line from here. Labels are bounded: route, status, tier,
/// result, upstream, outcome.
package enum MetricFamily: String, CaseIterable, Sendable {
    case httpRequests = "larder_http_requests_total"
    case httpRequestDuration = "larder_http_request_duration_seconds"
    case cacheLookups = "larder_cache_lookups_total"
    case cacheCollapsed = "larder_cache_collapsed_requests_total"
    case cacheBytes = "larder_cache_bytes"
    case cacheEntries = "larder_cache_entries"
    case cacheLimit = "larder_cache_limit_bytes"
    case cacheEvictions = "larder_cache_evictions_total"
    case cacheAdmissionRejections = "larder_cache_admission_rejections_total"
    case diskWritesSkipped = "larder_disk_writes_skipped_total"
    case diskWriteErrors = "larder_disk_write_errors_total"
    case diskWriteWaits = "larder_disk_write_waits_total"
    case diskWriteQueueEntries = "larder_disk_write_queue_entries"
    case diskWriteQueueBytes = "larder_disk_write_queue_bytes"
    case upstreamRequests = "larder_upstream_requests_total"
    case upstreamDuration = "larder_upstream_request_duration_seconds"
    case upstreamBackoffs = "larder_upstream_backoffs_total"
    case upstreamBackoffRefusals = "larder_upstream_backoff_refusals_total"
    case upstreamSaturated = "larder_upstream_saturated_total"
    case cacheStores = "larder_cache_stores_total"
    case redisErrors = "larder_redis_errors_total"
    case redisWaits = "larder_redis_waits_total"
    case redisCorruptValues = "larder_redis_corrupt_values_total"
    case redisUp = "larder_redis_up"
    case openConnections = "larder_open_connections"
    case buildInfo = "larder_build_info"
    case configReloads = "larder_config_reloads_total"
    case configLastReloadSuccess = "larder_config_last_reload_success_timestamp_seconds"
    case aggregateParts = "larder_aggregate_parts_total"
    case traceSpansDropped = "larder_trace_spans_dropped_total"

    package var name: String { rawValue }

    package var help: String {
        switch self {
        case .httpRequests: "Requests answered, by route (the built-in path, pass-through or other) and status code."
        case .httpRequestDuration: "Time from a request's arrival to its answer, by route and cache result (hit, stale, miss, none)."
        case .cacheLookups: "Cache lookups by tier (memory, disk, redis, upstream) and result (hit, stale, miss); a memory miss goes on to disk, a disk miss to Redis (when configured), then to the upstream."
        case .cacheCollapsed: "Requests that waited for another request's upstream fetch of the same key."
        case .cacheBytes: "Bytes held by each cache tier."
        case .cacheEntries: "Entries held by each cache tier."
        case .cacheLimit: "Configured byte limit of each cache tier."
        case .cacheEvictions: "Entries evicted from each tier to stay within its limit."
        case .cacheAdmissionRejections: "Entries each tier did not keep because they were asked less often than what they would have pushed out."
        case .diskWritesSkipped: "Entries kept in memory only because the disk write queue was full."
        case .diskWriteErrors: "Disk writes that failed (disk full, I/O error); the entry stayed in memory only."
        case .diskWriteWaits: "Misses whose answer waited for the disk writer, the write queue being full (up to 100 ms each)."
        case .diskWriteQueueEntries: "Entries waiting for the disk writer now (each served from the queue until written; a superseded file to remove counts as one)."
        case .diskWriteQueueBytes: "Bytes the entries waiting for the disk writer hold in memory (past 16 MiB, misses wait for it)."
        case .upstreamRequests: "Requests sent to each upstream, by outcome (ok, status_4xx, status_5xx, timeout, error)."
        case .upstreamDuration: "Time of each upstream exchange, by upstream."
        case .upstreamBackoffs: "Pauses begun by each upstream (429/503, or requests in a row without an answer)."
        case .upstreamBackoffRefusals: "Requests not sent to an upstream because it was backing off."
        case .upstreamSaturated: "Requests not sent to an upstream because every slot of its --upstream-concurrency stayed busy (its queue full, or no slot within the upstream timeout)."
        case .cacheStores: "Entries written to the shared tier (tier=redis)."
        case .redisErrors: "Redis calls that got no usable reply (down, slow past --redis-timeout, or not Redis's protocol); the request went on without Redis."
        case .redisWaits: "Requests that waited for another replica's upstream fetch of the same key (its Redis lock)."
        case .redisCorruptValues: "Values read from Redis that were not a whole, unaltered entry for their key (removed; a miss)."
        case .redisUp: "1 while the Redis subscription and the last command succeeded, else 0."
        case .openConnections: "Client connections open now."
        case .configReloads: "Configuration reloads (SIGHUP, POST /reload) by result: success, or failure (nothing changed)."
        case .configLastReloadSuccess: "When the configuration in use was read: the start, or the last successful reload (Unix seconds)."
        case .aggregateParts: "Parts of aggregate answers, by aggregate path, part name and result (hit, stale, miss, or missing: failed or past the deadline)."
        case .traceSpansDropped: "Trace spans not exported, by reason: queue_full (the exporter's queue was full, the collector slow) or export_failed (the collector refused or did not answer); 0 with tracing off."
        case .buildInfo: "Always 1; the version label says which Larder is running."
        }
    }

    /// The family's HELP and TYPE lines, then `lines`, appended to `text`; nothing when there
    /// are no lines (no family without a series).
    package func write(type: String, _ lines: [String], into text: inout String) {
        guard !lines.isEmpty else { return }
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for line in lines { text += line + "\n" }
    }
}
