import HTTPCore
import Bodies
import Caching
import Upstream

/// Receives every upstream outcome and backoff (metrics, logs and readiness implement it).
public protocol UpstreamObserver: Sendable {
    /// `warns`: the outcome is worth a warning line (it is no answer, and no backoff says why).
    func record(upstream: String, outcome: String, healthy: Bool, warns: Bool, detail: String, duration: Duration)
    /// A pause began or ended.
    func backoffChanged(upstream: String, _ change: UpstreamBackoff.Change)
    /// A request was not sent because the upstream is backing off.
    func refusedDuringBackoff(upstream: String)
    /// A request was not sent because every slot to the upstream stayed busy (`ConcurrencyLimit`).
    func refusedWhileSaturated(upstream: String)
}

extension UpstreamObserver {
    /// One exchange through the client, recorded under `name`: `ok` says which statuses are
    /// answers. A failure is rethrown as the client gave it, for the backoff to judge.
    func observed(_ name: String, client: UpstreamClient, request: UpstreamRequest,
                  ok: (Int) -> Bool) async throws -> UpstreamResponse {
        let start = ContinuousClock.now
        do {
            let response = try await client.fetch(request)
            let answered = ok(response.status)
            // An upstream that says why it refused (Open-Meteo's 400) has the operator told why.
            let reason = answered ? nil : response.body.inMemory.flatMap(UpstreamErrorBody.reason(in:))
            // A 429 is announced by the backoff it starts.
            record(upstream: name, outcome: answered ? "ok" : "status_\(response.status / 100)xx", healthy: response.status < 500,
                   warns: response.status >= 500 || !answered && response.status != 429, detail: "answered \(response.status)" + (reason.map { ": " + $0 } ?? ""),
                   duration: ContinuousClock.now - start)
            return response
        } catch UpstreamError.requestBodyIncomplete(let why, let stalled) {
            // The client's body failed, not the upstream: nothing is recorded against it.
            throw UpstreamError.requestBodyIncomplete(why, stalled: stalled)
        } catch UpstreamError.timeout {
            record(upstream: name, outcome: "timeout", healthy: false, warns: true, detail: "timed out", duration: ContinuousClock.now - start)
            throw UpstreamError.timeout
        } catch {
            record(upstream: name, outcome: "error", healthy: false, warns: true, detail: "\(error)", duration: ContinuousClock.now - start)
            throw error
        }
    }
}
