public import HTTPCore
public import Bodies
/// One request to an upstream API. Only what a caller decides is here; `UpstreamClient`
/// adds `User-Agent`, `Accept-Encoding` and connection reuse itself.
public struct UpstreamRequest: Sendable {
    public var url: String
    public var method: HTTPMethod
    /// Extra header fields, such as `If-None-Match` when revalidating.
    public var headers: HTTPHeaders
    /// Sent as it is; a file or a stream is read as libcurl asks (a stream waits for the rest).
    public var body: Body?
    /// Whole exchange: connect, send, wait, receive.
    public var timeout: Duration
    public var connectTimeout: Duration
    /// A larger (decoded) body fails with `UpstreamError.bodyTooLarge` rather than arriving truncated.
    public var maxBodyBytes: Int
    /// Forwarding a client's request (pass-through routes): its header fields go as given,
    /// with no `User-Agent`, `Accept` or `Accept-Encoding` of libcurl's own, and the body
    /// comes back as the origin encoded it.
    public var forwarding = false
    /// Where a body larger than `maxBodyBytes` goes on being written (`BodyFile.spool`), up
    /// to `HeldAnswer.largestSpooled`; nil: such a body fails with `bodyTooLarge`.
    public var spoolDirectory: String?
    /// A 200 to a GET whose `Content-Length` is at least this (of any length) is returned as
    /// soon as its head is in, and one with no `Content-Length` once more than this has
    /// arrived (an open-ended stream): its body a `BodyStream` in `spoolDirectory` that fills
    /// as the answer arrives. nil: every answer is returned whole.
    public var streamsFrom: Int?
    /// The disk space spool files share (`SpoolRoom`); nil: unbounded.
    public var spoolRoom: SpoolRoom?
    /// The largest answer that may be stored: a streamed one past it is read at its readers'
    /// pace (`BodyStream.pace`), since nobody else will read it.
    public var storesUpTo: Int?

    public init(url: String, method: HTTPMethod = .get, headers: HTTPHeaders = [],
                body: Body? = nil, timeout: Duration = .seconds(5), connectTimeout: Duration = .seconds(2),
                maxBodyBytes: Int = HeldAnswer.largestBody) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.connectTimeout = min(connectTimeout, timeout)
        self.maxBodyBytes = maxBodyBytes
    }
}
