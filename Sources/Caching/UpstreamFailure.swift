/// One failed upstream exchange: no answer, an answer whose status the route does not take,
/// or an answer its render hook rejected. It is the one error of the cache's fetcher
/// boundary: a `CacheFetcher` throws it, and the cache answers with it (504 for a timeout,
/// 503 while the upstream backs off or Larder's connections to it are all busy, else 502). `detail` is said to callers, so it is plain
/// words with no internal host, port or library message (those go to the log).
public struct UpstreamFailure: Error, Sendable, Equatable {
    public var timeout: Bool
    /// The upstream's status when it answered with something that is not an answer.
    public var upstreamStatus: Int?
    public var detail: String
    /// Set while the upstream is backing off: the seconds until it reopens.
    public var retryAfter: Int?
    /// The answer was larger than Larder holds of one (`tooLarge(limit:)`).
    public var tooLarge = false
    /// Larder's own limit on requests to the upstream refused it (`saturated`).
    public var saturated = false
    /// The request body failed on the client's side (`bodyRefused`): the status it is answered with.
    public var bodyRefusedStatus: Int?

    public init(timeout: Bool = false, upstreamStatus: Int? = nil, detail: String, retryAfter: Int? = nil) {
        self.timeout = timeout
        self.upstreamStatus = upstreamStatus
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// The exchange did not finish within its timeout.
    public static let timedOut = UpstreamFailure(timeout: true, detail: "the upstream did not answer in time")
    /// No answer: refused, reset, or not HTTP.
    public static let unreachable = UpstreamFailure(detail: "the upstream could not be reached")
    /// Not sent: every request Larder lets go to the upstream at once was in flight, and no
    /// slot came free in time (or its queue was full). Larder's saturation, not the
    /// upstream's doing: 503, to be retried in a second.
    public static let saturated: UpstreamFailure = {
        var failure = UpstreamFailure(detail: "every connection Larder allows to the upstream stayed busy, so it was not asked", retryAfter: 1)
        failure.saturated = true
        return failure
    }()

    /// The upstream answered with a body larger than Larder holds of one answer (it was reached).
    public static func tooLarge(limit: Int) -> UpstreamFailure {
        let size = limit >= 1 << 30 ? "\(limit >> 30) GiB" : "\(limit >> 20) MiB"
        var failure = UpstreamFailure(detail: "the upstream's answer is larger than \(size), the most Larder holds of one answer")
        failure.tooLarge = true
        return failure
    }

    /// The upstream was not asked (or its 429/503 just began a pause): it reopens in
    /// `retryAfter` seconds. `upstreamStatus` is the status that began the pause, if any.
    public static func backingOff(retryAfter: Int, upstreamStatus: Int?) -> UpstreamFailure {
        UpstreamFailure(upstreamStatus: upstreamStatus, detail: "the upstream is backing off and was not asked", retryAfter: retryAfter)
    }

    /// The request body stopped short on its way in while it went on to the upstream (the
    /// client broke it off or stalled, or Larder's disk refused it): answered as the
    /// connection refused it (`status` and `detail` as said to the client), never the
    /// upstream's failure.
    public static func bodyRefused(status: Int, detail: String) -> UpstreamFailure {
        var failure = UpstreamFailure(detail: detail)
        failure.bodyRefusedStatus = status
        return failure
    }

    /// What `Cache-Status` says of a request that was not sent: `backoff` or `saturated`.
    public var notSent: CacheStatus.Detail? {
        saturated ? .saturated : retryAfter == nil ? nil : .backoff
    }

    /// What a fetcher threw: its failure, or for anything else, no answer.
    init(noAnswer error: any Error) {
        self = error as? UpstreamFailure ?? .unreachable
    }
}
