/// One failed upstream exchange: no answer, an answer whose status the route does not take,
/// or an answer its render hook rejected.
public struct UpstreamFailure: Error, Sendable, Equatable {
    public var timeout: Bool
    /// The upstream's status when it answered with something that is not an answer.
    public var upstreamStatus: Int?
    public var detail: String

    public init(timeout: Bool = false, upstreamStatus: Int? = nil, detail: String) {
        self.timeout = timeout
        self.upstreamStatus = upstreamStatus
        self.detail = detail
    }

    /// No answer arrived: a timeout, or anything else.
    init(noAnswer error: any Error) {
        let timeout = (error as? FetchError) == .timeout
        self.init(timeout: timeout, detail: timeout ? "the upstream did not answer in time" : "the upstream could not be reached: \(error)")
    }
}
