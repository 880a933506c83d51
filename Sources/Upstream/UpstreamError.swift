/// Why an upstream exchange produced no response, in the terms a caller decides on:
/// a timeout is a 504 or a stale answer, a refused connection a 502, and so on.
public enum UpstreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The exchange did not finish within its timeout.
    case timeout
    /// The host name did not resolve.
    case cannotResolve(String)
    /// No connection could be made (refused, unreachable, TLS handshake failed).
    case cannotConnect(String)
    /// The connection closed or reset before a whole response arrived, or with no reply at all.
    case connectionLost(String)
    /// The body is larger than the request allowed.
    case bodyTooLarge(limit: Int)
    /// Larder could not write a large body to its spool file (disk full or failing), or read
    /// a request body back from one: its own failure, not the upstream's.
    case spoolFailed(String)
    /// The client's request body, sent on as it arrived, ended short or stopped arriving
    /// (`stalled`) for longer than the transfer waits: the client's doing, not the upstream's.
    case requestBodyIncomplete(String, stalled: Bool)
    /// The reply is not valid HTTP, or its content encoding cannot be decoded.
    case protocolError(String)
    /// The request itself cannot be sent (malformed URL, unsupported scheme).
    case invalidRequest(String)
    /// The client has been shut down.
    case shutDown

    public var description: String {
        switch self {
        case .timeout: "upstream timed out"
        case .cannotResolve(let d): "cannot resolve upstream host: \(d)"
        case .cannotConnect(let d): "cannot connect to upstream: \(d)"
        case .connectionLost(let d): "upstream connection lost: \(d)"
        case .bodyTooLarge(let limit): "upstream body larger than \(limit) bytes"
        case .spoolFailed(let d): "cannot spool the upstream's answer: \(d)"
        case .requestBodyIncomplete(let d, _): "the request body did not arrive whole: \(d)"
        case .protocolError(let d): "upstream protocol error: \(d)"
        case .invalidRequest(let d): "invalid upstream request: \(d)"
        case .shutDown: "upstream client shut down"
        }
    }
}
