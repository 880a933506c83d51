import HTTPCore
import Bodies
public import Caching
import Foundation
public import HTTPServer
public import Logging
import Synchronization
public import Upstream
import Locking
public import RedisTier
public import ServiceMetrics
public import UpstreamPolicy
import Observability

/// Liveness and readiness in `application/health+json` (draft-inadarei-api-health-check):
/// the cache directory and disk index, Redis (when configured), the upstream client, and
/// each upstream's last outcome and backoff. An upstream outage is `warn` (stale answers can still be served); a
/// broken disk or a dead client is `fail` and 503. Backoffs are logged here too: one
/// `warning` line when a pause begins, one `notice` when the upstream reopens.
public final class Health: UpstreamObserver {
    private let lastOutcome = Locked<[String: (healthy: Bool, outcome: String, detail: String, time: Date)]>([:])
    private let metrics: LarderMetrics
    private let logger: Logger
    private let clock: any CacheClock

    public init(metrics: LarderMetrics, logger: Logger, clock: any CacheClock) {
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
    }

    /// An outcome that is not an answer (no answer, a 5xx, or a status the route does not
    /// take) is one `warning` line with what the library or the upstream said, which callers
    /// are never shown; only an unhealthy one (no answer, a 5xx) makes readiness `warn`.
    /// Forgets the last outcome of upstreams no route has any more (a reload removed them).
    public func keepOutcomes(of upstreams: Set<String>) {
        lastOutcome.withLock { outcomes in outcomes = outcomes.filter { upstreams.contains($0.key) } }
    }

    public func record(upstream: String, outcome: String, healthy: Bool, warns: Bool, detail: String, duration: Duration) {
        lastOutcome.withLock { $0[upstream] = (healthy, outcome, detail, Date()) }
        metrics.upstream(upstream, outcome: outcome, duration: duration)
        if warns { logger.warning("upstream \(upstream) request failed: \(detail)") }
    }

    public func backoffChanged(upstream: String, _ change: UpstreamBackoff.Change) {
        switch change {
        case .paused(let until, let reason):
            metrics.upstreamEvent(.upstreamBackoffs, upstream)
            logger.warning("upstream \(upstream) backing off until \(Self.timestamp(until)): \(reason)")
        case .reopened:
            logger.notice("upstream \(upstream) reopened: the probe request was answered")
        }
    }

    public func refusedDuringBackoff(upstream: String) {
        metrics.upstreamEvent(.upstreamBackoffRefusals, upstream)
    }

    /// Larder's saturation, not the upstream's: counted, not logged (the access line says 503)
    /// and not an outcome of the upstream.
    public func refusedWhileSaturated(upstream: String) {
        metrics.upstreamEvent(.upstreamSaturated, upstream)
    }

    /// One upstream as readiness shows it: its check name (what the public port names: a
    /// built-in route's upstream, or a pass-through route by its prefix), the name its last
    /// outcome is recorded under (nil for pass-through origins, which share one name in
    /// metrics and are shown by their backoff alone), its backoff, and the origin's URL
    /// (credentials redacted), shown on the admin listener only.
    public struct Upstream: Sendable {
        let check: String
        public let name: String?
        let backoff: UpstreamBackoff
        let origin: String?

        public init(check: String, name: String?, backoff: UpstreamBackoff, origin: String? = nil) {
            self.check = check
            self.name = name
            self.backoff = backoff
            self.origin = origin
        }
    }

    private static func timestamp(_ date: Date) -> String {
        UTCTime(epochSeconds: Int(date.timeIntervalSince1970.rounded(.down))).iso8601
    }

    private struct Check {
        let name: String
        let status: String
        let output: String?
        var origin: String? = nil
    }

    /// The disk index: `pass` while it loads too (every stored answer is served meanwhile,
    /// read by its file name), saying so with the entries indexed so far.
    private static func indexCheck(_ disk: DiskTier?) -> Check {
        guard let disk else { return Check(name: "cache:index", status: "fail", output: "no disk index") }
        return Check(name: "cache:index", status: "pass", output: disk.isIndexWhole ? nil : "loading: \(disk.count) entries so far")
    }

    /// The public port's readiness names each upstream by its route and says what failed in
    /// general words; `detailed` (the admin listener's) adds each origin's URL and what the
    /// upstream client said, which can name hosts and addresses.
    public func readiness(disk: DiskTier?, client: UpstreamClient, redis: SharedRedis? = nil, upstreams: [Upstream],
                          detailed: Bool = false) -> HTTPResponse {
        var checks: [Check] = []
        checks.append(Self.directoryCheck(disk))
        if let redis {
            // Each replica works on its own tiers without Redis: a warning, never a failure.
            let problem = redis.problem
            checks.append(Check(name: "redis", status: problem == nil ? "pass" : "warn",
                                output: problem.map { "working without the shared tier: \($0)" }))
        }
        checks.append(Self.indexCheck(disk))
        checks.append(Check(name: "upstream:client", status: client.isAlive ? "pass" : "fail",
                            output: client.isAlive ? nil : "the libcurl thread is not running"))
        let outcomes = lastOutcome.withLock { $0 }
        let now = clock.now()
        for upstream in upstreams {
            if let pause = upstream.backoff.pause(now: now) {
                let when = pause.until > now ? "reopens at \(Self.timestamp(pause.until))" : "the next request is a probe"
                checks.append(Check(name: upstream.check, status: "warn", output: "backing off (\(pause.reason)): \(when)",
                                    origin: detailed ? upstream.origin : nil))
                continue
            }
            let last = upstream.name.flatMap { outcomes[$0] }
            checks.append(Check(name: upstream.check, status: last.map { $0.healthy ? "pass" : "warn" } ?? "pass",
                                output: last.flatMap { $0.healthy ? nil : "last request \(detailed ? $0.detail : $0.outcome)" },
                                origin: detailed ? upstream.origin : nil))
        }
        checks = Self.oneByName(checks)
        let overall = checks.contains { $0.status == "fail" } ? "fail" : checks.contains { $0.status == "warn" } ? "warn" : "pass"
        let rendered = checks.map { check in
            var fields = ["\"status\":\"\(check.status)\""]
            if let output = check.output { fields.append("\"output\":\(JSONString.quote(output))") }
            if let origin = check.origin { fields.append("\"origin\":\(JSONString.quote(origin))") }
            return "\(JSONString.quote(check.name)):[{\(fields.joined(separator: ","))}]"
        }
        let body = "{\"status\":\"\(overall)\",\"checks\":{\(rendered.joined(separator: ","))}}"
        return HTTPResponse(status: overall == "fail" ? 503 : 200,
                            headers: HTTPHeaders([("Content-Type", "application/health+json"), ("Cache-Control", "no-store")]),
                            body: body)
    }

    /// One check per name, in the order names first appear: a JSON object with a key twice is
    /// read by most parsers as its last value, so a `warn` followed by a `pass` of the same
    /// name would read as `pass`. The worst status wins and every output of that status is kept.
    private static func oneByName(_ checks: [Check]) -> [Check] {
        var order: [String] = []
        var merged: [String: Check] = [:]
        for check in checks {
            guard let earlier = merged[check.name] else {
                order.append(check.name)
                merged[check.name] = check
                continue
            }
            let (worse, rank) = (severity(check.status), severity(earlier.status))
            if worse > rank {
                merged[check.name] = check
            } else if worse == rank, let output = check.output {
                let outputs = [earlier.output, output].compactMap { $0 }
                merged[check.name] = Check(name: check.name, status: check.status, output: Set(outputs).count == 1 ? output : outputs.joined(separator: "; "),
                                           origin: earlier.origin ?? check.origin)
            }
        }
        return order.map { merged[$0]! }
    }

    private static func severity(_ status: String) -> Int {
        switch status {
        case "fail": 2
        case "warn": 1
        default: 0
        }
    }

    /// A directory that cannot be written is `fail`; a full disk is `warn`, because answers
    /// are still served and kept in memory.
    private static func directoryCheck(_ disk: DiskTier?) -> Check {
        guard let disk, disk.isWritable else {
            return Check(name: "cache:directory", status: "fail", output: "the cache directory is not writable")
        }
        if disk.isFull {
            return Check(name: "cache:directory", status: "warn", output: "the disk is full: new answers are kept in memory only")
        }
        return Check(name: "cache:directory", status: "pass", output: nil)
    }

    public static let livez = HTTPResponse(
        status: 200,
        headers: HTTPHeaders([("Content-Type", "application/health+json"), ("Cache-Control", "no-store")]),
        body: "{\"status\":\"pass\"}")
}
