import Caching
import Upstream

/// Receives every upstream outcome and backoff (metrics, logs and readiness implement it).
protocol UpstreamObserver: Sendable {
    func record(upstream: String, outcome: String, healthy: Bool, detail: String, duration: Duration)
    /// A pause began or ended.
    func backoffChanged(upstream: String, _ change: UpstreamBackoff.Change)
    /// A request was not sent because the upstream is backing off.
    func refusedDuringBackoff(upstream: String)
}

extension UpstreamObserver {
    /// One exchange through the client, recorded under `name`: `ok` says which statuses are
    /// answers. A failure is rethrown as the client gave it, for the backoff to judge.
    func observed(_ name: String, client: UpstreamClient, request: UpstreamRequest,
                  ok: (Int) -> Bool) async throws -> UpstreamResponse {
        let start = ContinuousClock.now
        do {
            let response = try await client.fetch(request)
            record(upstream: name, outcome: ok(response.status) ? "ok" : "status_\(response.status / 100)xx",
                   healthy: response.status < 500, detail: "answered \(response.status)", duration: ContinuousClock.now - start)
            return response
        } catch UpstreamError.timeout {
            record(upstream: name, outcome: "timeout", healthy: false, detail: "timed out", duration: ContinuousClock.now - start)
            throw UpstreamError.timeout
        } catch {
            record(upstream: name, outcome: "error", healthy: false, detail: "\(error)", duration: ContinuousClock.now - start)
            throw error
        }
    }
}
