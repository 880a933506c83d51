/// An informational (1xx) response an origin sent before its final one, such as 103 Early
/// Hints: a gateway passes it on to the client that asked (RFC 9110 §15.2) and never stores
/// it. 100 Continue and 101 Switching Protocols answer the gateway's own request and connection,
/// so they are not among these.
public struct InterimResponse: Sendable, Equatable {
    public let status: Int
    public let headers: HTTPHeaders

    public init(status: Int, headers: HTTPHeaders) {
        self.status = status
        self.headers = headers
    }

    /// Whether a gateway passes on an informational response of this status.
    public static func isRelayed(_ status: Int) -> Bool { (102...199).contains(status) }
}
