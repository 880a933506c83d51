/// Why a Redis command got no reply: the tier is then skipped for that request, never waited on.
public enum RedisFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No reply within the timeout (`--redis-timeout`).
    case timeout
    /// Not connected (refused, reset, unreachable), or it answered something that is not Redis's protocol.
    case unavailable(String)

    public var description: String {
        switch self {
        case .timeout: "no reply within the Redis timeout"
        case .unavailable(let reason): reason
        }
    }
}
