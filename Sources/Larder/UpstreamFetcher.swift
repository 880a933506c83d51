import Foundation
import Caching
import Upstream

/// The cache's view of an upstream API, carried out by the libcurl client: a key becomes
/// a URL, an `UpstreamError` becomes a `FetchError`, and every outcome is counted and
/// remembered for `/readyz`.
struct UpstreamFetcher: CacheFetcher {
    let name: String
    let client: UpstreamClient
    let timeout: Duration
    let url: @Sendable (_ key: String) -> String
    let observer: UpstreamObserver
    let clock: any CacheClock

    func fetch(key: String, headers: [(name: String, value: String)]) async throws -> CacheEntry {
        let request = UpstreamRequest(url: url(key), headers: headers, timeout: timeout, connectTimeout: min(timeout, .seconds(2)))
        let sent = clock.now()
        let response = try await observer.observed(name, client: client, request: request) { $0 == 200 || $0 == 304 }
        return CacheEntry(response, headers: response.headers, sent: sent, clock: clock)
    }
}

extension CacheEntry {
    /// An upstream's answer as the cache keeps it, timed by the cache's own clock (the one
    /// `Age` and freshness are read with), from just before sending to just after the answer.
    convenience init(_ response: UpstreamResponse, headers: [(name: String, value: String)], sent: Date, clock: any CacheClock) {
        self.init(status: response.status, headers: headers, body: response.body, requestTime: sent, responseTime: clock.now())
    }
}

/// Receives every upstream outcome (metrics and readiness implement it).
protocol UpstreamObserver: Sendable {
    func record(upstream: String, outcome: String, healthy: Bool, detail: String, duration: Duration)
}

extension UpstreamObserver {
    /// One exchange through the client, recorded under `name`: `ok` says which statuses are
    /// answers; an `UpstreamError` comes back as the `FetchError` the caches understand.
    func observed(_ name: String, client: UpstreamClient, request: UpstreamRequest,
                  ok: (Int) -> Bool) async throws(FetchError) -> UpstreamResponse {
        let start = ContinuousClock.now
        do {
            let response = try await client.fetch(request)
            record(upstream: name, outcome: ok(response.status) ? "ok" : "status_\(response.status / 100)xx",
                   healthy: response.status < 500, detail: "answered \(response.status)", duration: ContinuousClock.now - start)
            return response
        } catch UpstreamError.timeout {
            record(upstream: name, outcome: "timeout", healthy: false, detail: "timed out", duration: ContinuousClock.now - start)
            throw .timeout
        } catch {
            record(upstream: name, outcome: "error", healthy: false, detail: "\(error)", duration: ContinuousClock.now - start)
            throw .unreachable("\(error)")
        }
    }
}
