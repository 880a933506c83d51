import Caching
import Foundation
import HTTPCore
import Upstream

/// The cache's view of one upstream, carried out by the libcurl client, for built-in and
/// pass-through routes alike: the request goes to its URL with its method, fields and body;
/// the answer comes back with its hop-by-hop fields removed; an `UpstreamError` becomes a
/// `FetchError`; every outcome is counted and remembered for `/readyz` under `name`.
struct UpstreamFetcher: CacheFetcher {
    /// The upstream's name in metrics and readiness: `weather`, `balance`, `origin`.
    let name: String
    let client: UpstreamClient
    let timeout: Duration
    /// Forwarding a client's request (pass-through): its fields go as given, with nothing of
    /// libcurl's own added, and the body comes back as the origin encoded it.
    let forwarding: Bool
    /// Fields added to every request (a built-in route's credentials); never logged.
    let credentials: HTTPHeaders
    /// Which statuses count as `ok` in metrics.
    let isAnswer: @Sendable (Int) -> Bool
    let observer: UpstreamObserver
    let clock: any CacheClock
    /// The cap on requests in flight to this upstream (`--upstream-concurrency`).
    let concurrency: ConcurrencyLimit

    func fetch(_ request: CacheRequest) async throws -> CacheEntry {
        var upstream = UpstreamRequest(url: request.url, method: request.method, headers: request.headers + credentials, body: request.body,
                                       timeout: timeout, connectTimeout: min(timeout, .seconds(2)))
        upstream.forwarding = forwarding
        do {
            return try await concurrency.run {
                let sent = clock.now()
                let response = try await observer.observed(name, client: client, request: upstream, ok: isAnswer)
                // Timed by the cache's own clock (the one Age and freshness are read with), from just
                // before sending (after any wait for a slot) to just after the answer.
                return CacheEntry(status: response.status, headers: HopByHop.removed(from: response.headers), body: response.body,
                                  requestTime: sent, responseTime: clock.now())
            }
        } catch is ConcurrencyLimit.Full {
            throw FetchError.unreachable("more than \(concurrency.queueLimit) requests are already waiting for the \(name) upstream")
        }
    }
}
