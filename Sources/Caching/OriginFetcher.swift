/// An origin as the shared cache sees it: any method, any status back. The service
/// implements it on libcurl; tests implement it with a scripted fake.
public protocol OriginFetcher: Sendable {
    /// Sends `request` (its method, end-to-end fields and body) to `url`, the origin's URL
    /// for its target, and returns the answer as a `CacheEntry`, whatever its status; throws
    /// `FetchError` when no answer arrived (timeout, refused, connection dropped).
    func forward(_ request: SharedCache.Request, to url: String) async throws -> CacheEntry
}
