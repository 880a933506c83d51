/// The upstream as the cache sees it, for every route: a request (method, resource, the
/// fields to send, a body) goes out, the answer comes back as a `CacheEntry` whatever its
/// status. The service implements it on libcurl; tests implement it with a scripted fake.
public protocol CacheFetcher: Sendable {
    /// Throws `UpstreamFailure` when no answer arrived (timeout, refused, connection dropped).
    func fetch(_ request: CacheRequest) async throws -> CacheEntry
}
