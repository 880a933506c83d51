import HTTPCore
/// Whether an answer may be stored: a pure function of the response, the request and the
/// route's rule, tested without I/O.
public enum StorageRule: Sendable, Equatable {
    /// RFC 9111 §3 for a shared cache in front of any origin: any status the rules allow,
    /// `Vary` honoured, authenticated answers only when the origin says they are shareable,
    /// and no answer that sets a cookie.
    case sharedCache
    /// A built-in route: an answer that the route's render hook accepted, unless the
    /// upstream says `no-store` (or `private`, unless the route keeps private answers).
    case decodedAnswers(storesPrivate: Bool)

    /// Statuses this cache understands, for `must-understand` (§5.2.2.3).
    static let understood: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308,
                                       400, 403, 404, 405, 410, 414, 451, 500, 501, 502, 503, 504]

    public func mayStore(_ entry: CacheEntry, request: RequestDirectives, hasAuthorization: Bool, policy: CachePolicy) -> Bool {
        switch self {
        case .decodedAnswers(let storesPrivate):
            let cc = entry.cacheControl
            return !cc.noStore && !request.cacheControl.noStore && (storesPrivate || !cc.isPrivate)
        case .sharedCache:
            return Self.sharedMayStore(entry, request: request, hasAuthorization: hasAuthorization, policy: policy)
        }
    }

    private static func sharedMayStore(_ entry: CacheEntry, request: RequestDirectives, hasAuthorization: Bool,
                                       policy: CachePolicy) -> Bool {
        let cc = entry.cacheControl
        // Partial content and 304s are not whole representations; 1xx are not final.
        guard entry.status >= 200, entry.status != 206, entry.status != 304 else { return false }
        if cc.mustUnderstand {
            guard understood.contains(entry.status) else { return false }  // no-store then stands
        } else if cc.noStore {
            return false
        }
        guard !request.cacheControl.noStore, !cc.isPrivate else { return false }
        // One client's cookie is never replayed to another: RFC 9111 allows storing an answer
        // with `Set-Cookie`, but nginx and Varnish do not by default, and neither does Larder.
        guard !entry.headers.contains("set-cookie") else { return false }
        // §3.5: an answer to an authenticated request only when the origin says it is shareable.
        if hasAuthorization, !(cc.isPublic || cc.mustRevalidate || cc.sharedMaxAge != nil) { return false }
        guard !Vary(of: entry).isStar else { return false }
        let explicit = Freshness.hasExplicitLifetime(entry)
        guard explicit || cc.isPublic || Freshness.heuristicallyCacheable.contains(entry.status)
            || policy.defaultLifetimes[entry.status] != nil else { return false }
        // Keep only what a later request could use: fresh for a while, or revalidatable.
        return Freshness.lifetime(of: entry, policy: policy) > 0 || entry.hasValidator
            || cc.staleWhileRevalidate != nil || cc.staleIfError != nil
    }
}
