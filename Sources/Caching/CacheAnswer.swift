public import HTTPCore

/// One answer from the cache, for every route: the stored (or just fetched) response with
/// what was rendered from it, and what the response headers need (`Age`, the full lifetime
/// for `max-age`, `Cache-Status`).
public struct CacheAnswer: Sendable {
    public let response: StoredResponse
    /// Whole seconds, rounded down.
    public let age: Int
    /// The full freshness lifetime in whole seconds (never the remaining time).
    public let lifetime: Int
    public let status: CacheStatus
    /// Informational responses to pass on before this answer: the fetch's own, on an answer
    /// just fetched; none on a stored one.
    public var interim: [InterimResponse] = []

    public init(response: StoredResponse, age: Int, lifetime: Int, status: CacheStatus) {
        self.response = response
        self.age = age
        self.lifetime = lifetime
        self.status = status
    }

    public var entry: CacheEntry { response.entry }
    public var rendered: RenderedResponse { response.rendered }
}
