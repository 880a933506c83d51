public import HTTPCore
public import Bodies
public import Foundation

/// What an upstream answered, with the two clock readings RFC 9111 §4.2.3 needs to work
/// out a response's age: when the request was sent and when the response arrived.
public struct UpstreamResponse: Sendable {
    public var status: Int
    /// Every header field of the final response, in order, repeats kept.
    public var headers: HTTPHeaders
    /// The body after content decoding (curl undoes gzip): in memory, or a spool file's
    /// region when it was too large to hold (`UpstreamRequest.spoolDirectory`).
    public var body: Body
    public var requestTime: Date
    public var responseTime: Date
    /// Informational responses the upstream sent first, to be passed on (103 Early Hints).
    public var interim: [InterimResponse]

    public init(status: Int, headers: HTTPHeaders, body: Body, requestTime: Date, responseTime: Date, interim: [InterimResponse] = []) {
        self.interim = interim
        self.status = status
        self.headers = headers
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// The first value of a header field, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers[name]
    }
}
