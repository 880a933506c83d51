/// Why the cache has no answer for a request.
public enum CacheFailure: Error, Sendable, Equatable {
    /// `only-if-cached` and nothing suitable stored (the service answers 504).
    case notCached
    /// The upstream failed and no stored answer may stand in for it.
    case upstream(UpstreamFailure, CacheStatus)
}
