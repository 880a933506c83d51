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

    func fetch(key: String, headers: [(name: String, value: String)]) async throws -> CacheEntry {
        let start = ContinuousClock.now
        do {
            let response = try await client.fetch(UpstreamRequest(url: url(key), headers: headers, timeout: timeout,
                                                                  connectTimeout: min(timeout, .seconds(2))))
            let ok = response.status == 200 || response.status == 304
            observer.record(upstream: name, outcome: ok ? "ok" : "status_\(response.status / 100)xx",
                            healthy: response.status < 500, detail: "answered \(response.status)", duration: ContinuousClock.now - start)
            return CacheEntry(status: response.status, headers: response.headers, body: response.body,
                              requestTime: response.requestTime, responseTime: response.responseTime)
        } catch UpstreamError.timeout {
            observer.record(upstream: name, outcome: "timeout", healthy: false, detail: "timed out", duration: ContinuousClock.now - start)
            throw FetchError.timeout
        } catch let error as UpstreamError {
            observer.record(upstream: name, outcome: "error", healthy: false, detail: error.description, duration: ContinuousClock.now - start)
            throw FetchError.unreachable(error.description)
        }
    }
}

/// Receives every upstream outcome (metrics and readiness implement it).
protocol UpstreamObserver: Sendable {
    func record(upstream: String, outcome: String, healthy: Bool, detail: String, duration: Duration)
}
