/// The upstream as the cache sees it: give a key (and conditional header fields), get the
/// answer as a `CacheEntry`, whatever its status. The service implements it on libcurl;
/// tests implement it with a counting fake.
public protocol CacheFetcher: Sendable {
    func fetch(key: String, headers: [(name: String, value: String)]) async throws -> CacheEntry
}

/// How a fetch failed, in the terms the service maps to statuses (504 for a timeout, else 502).
public enum FetchError: Error, Sendable, Equatable {
    case timeout
    case unreachable(String)
}

/// Why the cache has no answer for a request.
public enum CacheFailure: Error, Sendable, Equatable {
    /// `only-if-cached` and nothing suitable stored (the service answers 504).
    case notCached
    /// The upstream failed and no stored answer may stand in for it.
    case upstream(UpstreamFailure, CacheStatus)
}

/// One failed upstream exchange.
public struct UpstreamFailure: Sendable, Equatable {
    public var timeout: Bool
    /// The upstream's status when it answered with something that is not an answer.
    public var upstreamStatus: Int?
    public var detail: String

    public init(timeout: Bool = false, upstreamStatus: Int? = nil, detail: String) {
        self.timeout = timeout
        self.upstreamStatus = upstreamStatus
        self.detail = detail
    }

    /// No answer arrived from `source` (`upstream`, `origin`): a timeout, or anything else.
    init(noAnswerFrom source: String, _ error: any Error) {
        let timeout = (error as? FetchError) == .timeout
        self.init(timeout: timeout, detail: timeout ? "the \(source) did not answer in time" : "the \(source) could not be reached: \(error)")
    }
}

/// One answer from the cache: the decoded value, the entry behind it, and what the
/// response headers need (`Age`, the full lifetime for `max-age`, `Cache-Status`).
public struct CacheAnswer<Value: Sendable>: Sendable {
    public let value: Value
    public let entry: CacheEntry
    /// Whole seconds, rounded down.
    public let age: Int
    /// The full freshness lifetime in whole seconds (never the remaining time).
    public let lifetime: Int
    public let status: CacheStatus
}
