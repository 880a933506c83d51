/// How a fetch failed, in the terms the service maps to statuses (504 for a timeout, 503
/// while the upstream is backing off, else 502).
public enum FetchError: Error, Sendable, Equatable {
    case timeout
    case unreachable(String)
    /// The upstream was not asked (or its 429/503 just began a pause): it reopens in
    /// `retryAfter` seconds. `upstreamStatus` is the status that began the pause, if any.
    case backingOff(retryAfter: Int, upstreamStatus: Int?)
}
