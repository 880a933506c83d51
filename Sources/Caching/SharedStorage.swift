/// RFC 9111 §3 for a shared cache in front of any origin: whether a response to a GET may
/// be stored. A pure function of the response and the request, tested without I/O.
public enum SharedStorage {
    /// Statuses this cache understands, for `must-understand` (§5.2.2.3).
    static let understood: Set<Int> = [200, 203, 204, 300, 301, 302, 303, 307, 308,
                                       400, 403, 404, 405, 410, 414, 451, 500, 501, 502, 503, 504]

    public static func mayStore(_ entry: CacheEntry, request: RequestDirectives, hasAuthorization: Bool,
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
        // §3.5: an answer to an authenticated request only when the origin says it is shareable.
        if hasAuthorization, !(cc.isPublic || cc.mustRevalidate || cc.sharedMaxAge != nil) { return false }
        guard !Vary(of: entry).isStar else { return false }
        let explicit = Freshness.hasExplicitLifetime(entry)
        guard explicit || cc.isPublic || Freshness.heuristicallyCacheable.contains(entry.status) else { return false }
        // Keep only what a later request could use: fresh for a while, or revalidatable.
        return Freshness.lifetime(of: entry, policy: policy) > 0 || entry.hasValidator
            || cc.staleWhileRevalidate != nil || cc.staleIfError != nil
    }
}
