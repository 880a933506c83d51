/// One failed upstream exchange: no answer, an answer whose status the route does not take,
/// or an answer its render hook rejected. `detail` is said to callers, so it is plain words
/// with no internal host, port or library message.
public struct UpstreamFailure: Error, Sendable, Equatable {
    public var timeout: Bool
    /// The upstream's status when it answered with something that is not an answer.
    public var upstreamStatus: Int?
    public var detail: String
    /// Set while the upstream is backing off: the seconds until it reopens.
    public var retryAfter: Int?

    public init(timeout: Bool = false, upstreamStatus: Int? = nil, detail: String, retryAfter: Int? = nil) {
        self.timeout = timeout
        self.upstreamStatus = upstreamStatus
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// No answer arrived: a timeout, a backoff, or anything else.
    init(noAnswer error: any Error) {
        switch error as? FetchError {
        case .timeout?:
            self.init(timeout: true, detail: "the upstream did not answer in time")
        case .backingOff(let retryAfter, let status)?:
            self.init(upstreamStatus: status, detail: "the upstream is backing off and was not asked", retryAfter: retryAfter)
        default:
            // The library's message names hosts and ports: it goes to the log (the fetcher's
            // observer), never to callers.
            self.init(detail: "the upstream could not be reached")
        }
    }
}
