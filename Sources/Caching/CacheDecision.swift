public import Foundation

/// The request directives a caller sends (RFC 9111 §5.2.1), with `Pragma: no-cache`
/// folded in when `Cache-Control` is absent (§5.4).
public struct RequestDirectives: Sendable, Equatable {
    public var cacheControl: CacheControl

    public init(_ cacheControl: CacheControl = CacheControl()) { self.cacheControl = cacheControl }

    public init(cacheControl: [String], pragma: [String]) {
        var parsed = CacheControl(cacheControl)
        if cacheControl.isEmpty, pragma.contains(where: { $0.lowercased().contains("no-cache") }) { parsed.noCache = true }
        self.cacheControl = parsed
    }

    public static let none = RequestDirectives()
}

/// What to do with a stored entry for one request: a pure function of the entry, the time,
/// the request's directives and the route's policy, so every rule is tested without I/O.
public struct CacheDecision: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Fresh enough for this request: answer from the cache.
        case serve
        /// Stale, but the client's `max-stale` accepts it: answer from the cache.
        case serveStale
        /// Stale within stale-while-revalidate: answer now, refresh once in the background.
        case serveWhileRevalidating
        /// Go to the upstream (conditionally, when the entry has validators) before answering.
        case forward(CacheStatus.Forward)
    }

    public var action: Action
    public var age: TimeInterval
    public var lifetime: TimeInterval

    /// Remaining freshness in whole seconds, negative once stale (`ttl` of Cache-Status):
    /// the full lifetime less the `Age` sent, so the two headers agree.
    public var ttl: Int { Freshness.wholeSeconds(lifetime) - Freshness.ageHeader(age) }

    public static func decide(_ entry: CacheEntry, now: Date, request: RequestDirectives, policy: CachePolicy) -> CacheDecision {
        let age = Freshness.currentAge(of: entry, now: now)
        let lifetime = Freshness.lifetime(of: entry, policy: policy)
        func decision(_ action: Action) -> CacheDecision { CacheDecision(action: action, age: age, lifetime: lifetime) }

        let asked = request.cacheControl
        let stored = entry.cacheControl
        let fresh = lifetime > age
        // A response's no-cache means "revalidate before every use" (§5.2.2.4).
        if stored.noCache { return decision(.forward(fresh ? .request : .stale)) }
        if asked.noCache { return decision(.forward(fresh ? .request : .stale)) }
        if let maxAge = asked.maxAge, age > TimeInterval(maxAge) { return decision(.forward(fresh ? .request : .stale)) }
        if fresh {
            if let minFresh = asked.minFresh, lifetime - age < TimeInterval(minFresh) { return decision(.forward(.request)) }
            return decision(.serve)
        }
        // Stale from here on. must-revalidate, proxy-revalidate and s-maxage forbid serving it
        // unvalidated in a shared cache (§5.2.2.2, §5.2.2.8, §5.2.2.10).
        if mustRevalidate(entry) { return decision(.forward(.stale)) }
        let staleness = age - lifetime
        switch asked.maxStale {
        case .any?: return decision(.serveStale)
        case .seconds(let limit)? where staleness <= TimeInterval(limit): return decision(.serveStale)
        default: break
        }
        if staleness <= staleWhileRevalidateWindow(entry, policy) { return decision(.serveWhileRevalidating) }
        return decision(.forward(.stale))
    }

    /// Whether a stale entry may be served because the upstream failed (RFC 5861 §4).
    public static func mayServeOnError(_ entry: CacheEntry, now: Date, policy: CachePolicy) -> Bool {
        guard !mustRevalidate(entry) else { return false }
        let window = entry.cacheControl.staleIfError.map(TimeInterval.init) ?? policy.staleIfError
        guard window > 0 else { return false }
        let staleness = Freshness.currentAge(of: entry, now: now) - Freshness.lifetime(of: entry, policy: policy)
        return staleness <= window
    }

    /// Whether a stale entry may stand in while the origin cannot be reached at all (RFC 9111
    /// §4.2.4, "disconnected"): not when the origin forbids serving it unvalidated.
    public static func mayServeDisconnected(_ entry: CacheEntry) -> Bool {
        !mustRevalidate(entry) && !entry.cacheControl.noCache
    }

    static func mustRevalidate(_ entry: CacheEntry) -> Bool {
        let cc = entry.cacheControl
        return cc.mustRevalidate || cc.proxyRevalidate || cc.sharedMaxAge != nil
    }

    static func staleWhileRevalidateWindow(_ entry: CacheEntry, _ policy: CachePolicy) -> TimeInterval {
        entry.cacheControl.staleWhileRevalidate.map(TimeInterval.init) ?? policy.staleWhileRevalidate
    }
}
