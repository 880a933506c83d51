import Caching
import Upstream

/// A pass-through route's origin, reached through the libcurl client: the request goes as
/// the client sent it, the answer comes back with its hop-by-hop fields removed, and every
/// outcome is counted under the `origin` upstream.
struct OriginForwarder: OriginFetcher {
    let client: UpstreamClient
    let timeout: Duration
    let observer: UpstreamObserver
    let clock: any CacheClock

    func forward(_ request: SharedCache.Request, to url: String) async throws -> CacheEntry {
        var upstream = UpstreamRequest(url: url, method: request.method, headers: request.headers, body: request.body,
                                       timeout: timeout, connectTimeout: min(timeout, .seconds(2)))
        upstream.forwarding = true
        let sent = clock.now()
        let response = try await observer.observed("origin", client: client, request: upstream) { $0 < 500 }
        return CacheEntry(response, headers: HopByHop.removed(from: response.headers), sent: sent, clock: clock)
    }
}
